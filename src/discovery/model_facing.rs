//! How Lua names a tool file in its messages (handler errors reach models): the tool
//! directory's own name and the path inside it, never the host's absolute path.

use super::path_text;
use std::path::Path;

/// How Lua names a file of tool directory `dir` in its messages (handler errors reach
/// models): the directory's own name and the path inside it (`tools-lua/read_file.lua`),
/// never the host's absolute path. A path outside `dir` is shown by its file name.
pub(crate) fn model_facing(path: &Path, dir: &Path) -> String {
    // The usual case as text: `path` is `dir`, a separator, then names.
    if let (Some(path), Some(dir_text), Some(name)) = (
        path.to_str(),
        dir.to_str(),
        dir.file_name().and_then(|n| n.to_str()),
    ) && let Some(inside) = path.strip_prefix(dir_text.trim_end_matches('/'))
        && let Some(inside) = inside.strip_prefix('/')
        && !inside.is_empty()
        && !inside
            .split('/')
            .any(|part| matches!(part, "" | "." | ".."))
        && !dir_text.ends_with("/.")
        && !dir_text.ends_with("/..")
    {
        return format!("{name}/{inside}");
    }
    let inside = path
        .strip_prefix(dir)
        .ok()
        .filter(|p| !p.as_os_str().is_empty());
    match (inside, dir.file_name()) {
        // `inside` is relative and not empty: joining is adding a separator.
        (Some(inside), Some(name)) => {
            format!("{}/{}", path_text(Path::new(name)), path_text(inside))
        }
        (Some(inside), None) => path_text(inside),
        (None, _) => path
            .file_name()
            .map(|name| path_text(Path::new(name)))
            .unwrap_or_else(|| path_text(path)),
    }
}

#[cfg(test)]
mod tests {
    use super::model_facing;
    use std::path::Path;

    #[test]
    fn model_facing_names_a_file_by_its_directory_and_the_path_inside() {
        let cases = [
            ("/x/tools-lua/a.lua", "/x/tools-lua", "tools-lua/a.lua"),
            (
                "/x/tools-lua/pkg/tool.lua",
                "/x/tools-lua/",
                "tools-lua/pkg/tool.lua",
            ),
            ("tools-lua/./a.lua", "tools-lua", "tools-lua/a.lua"),
            ("/x/tools-lua/a.lua", "/x/tools-lua/.", "tools-lua/a.lua"),
            ("/elsewhere/b.lua", "/x/tools-lua", "b.lua"),
            ("/x/tools-lua/lib", "/x/tools-lua", "tools-lua/lib"),
        ];
        for (path, dir, shown) in cases {
            assert_eq!(
                model_facing(Path::new(path), Path::new(dir)),
                shown,
                "{path} in {dir}"
            );
        }
    }
}
