//! How Lua names a tool file in its messages (handler errors reach models): the tool
//! directory's own name and the path inside it, never the host's absolute path.

use super::path_text;
use std::path::Path;

/// How Lua names a file of tool directory `dir` in its messages (handler errors reach
/// models): the directory's own name and the path inside it (`tools-lua/read_file.lua`),
/// never the host's absolute path. A path outside `dir` is shown by its file name.
pub(crate) fn model_facing(path: &Path, dir: &Path) -> String {
    as_text(path, dir).unwrap_or_else(|| by_components(path, dir))
}

/// [`model_facing`] by `Path`'s components (any path, any spelling of `dir`).
fn by_components(path: &Path, dir: &Path) -> String {
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

/// The usual case, as text: `path` is `dir`, a separator, then names, and `dir` ends in a
/// name. Every warm start names every registering file; `Path::file_name` and `format!`
/// were most of that.
fn as_text(path: &Path, dir: &Path) -> Option<String> {
    let (path, dir) = (path.to_str()?, dir.to_str()?.trim_end_matches('/'));
    let inside = path.strip_prefix(dir)?.strip_prefix('/')?;
    // memchr: `str`'s own searches (`rsplit_once`, `split`) took most of the time here.
    let name = memchr::memrchr(b'/', dir.as_bytes()).map_or(dir, |at| &dir[at + 1..]);
    let mut from = 0;
    for at in memchr::memchr_iter(b'/', inside.as_bytes()).chain([inside.len()]) {
        if !is_name(&inside[from..at]) {
            return None;
        }
        from = at + 1;
    }
    if !is_name(name) {
        return None;
    }
    let mut shown = String::with_capacity(name.len() + 1 + inside.len());
    shown.push_str(name);
    shown.push('/');
    shown.push_str(inside);
    Some(shown)
}

/// Whether a path component is a name (not empty, `.` or `..`).
fn is_name(part: &str) -> bool {
    !matches!(part, "" | "." | "..")
}

#[cfg(test)]
mod tests {
    use super::{as_text, by_components, model_facing};
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

    #[test]
    fn the_text_shortcut_names_a_file_as_its_components_do() {
        let dirs = [
            "/x/tools-lua",
            "/x/tools-lua/",
            "tools",
            "./tools",
            "a//b",
            "/",
            ".",
            "a/..",
        ];
        let insides = ["a.lua", "pkg/t.lua", "./a.lua", "../a.lua", "a//b.lua", ""];
        for dir in dirs {
            for inside in insides {
                let path = format!("{}/{inside}", dir.trim_end_matches('/'));
                let (path, dir) = (Path::new(&path), Path::new(dir));
                if let Some(shown) = as_text(path, dir) {
                    assert_eq!(shown, by_components(path, dir), "{path:?} in {dir:?}");
                }
            }
        }
    }
}
