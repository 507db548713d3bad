//! Sorting verdicts by path as `Path`'s own order does (component by component), without
//! taking every path apart on every comparison: for plain absolute paths, the ones
//! discovery makes, that order is the bytes' order with the separator ranked lowest (a
//! component that ends first sorts first). Sorting a generation's verdicts by `Path`'s
//! order was a fortieth of a warm start.

use std::cmp::Ordering;
use std::os::unix::ffi::OsStrExt;
use std::path::Path;

/// Sorts `items` by the path `path_of` gives, in `Path`'s order.
pub(crate) fn sort_by_path<T>(items: &mut [T], path_of: impl Fn(&T) -> &Path) {
    if items.iter().all(|item| plain(bytes(path_of(item)))) {
        items.sort_by(|a, b| plain_order(bytes(path_of(a)), bytes(path_of(b))));
    } else {
        items.sort_by(|a, b| path_of(a).cmp(path_of(b)));
    }
}

fn bytes(path: &Path) -> &[u8] {
    path.as_os_str().as_bytes()
}

/// Whether `Path`'s components are exactly the text between separators: absolute, no
/// empty, `.` or `..` component, no separator at the end.
fn plain(path: &[u8]) -> bool {
    if path.first() != Some(&b'/') {
        return false;
    }
    // One pass over the separators (a searcher built per pattern and path cost more than
    // the sort it saves).
    let mut start = 1;
    let ends = memchr::memchr_iter(b'/', &path[1..]).map(|at| at + 1);
    for end in ends.chain([path.len()]) {
        if matches!(&path[start..end], b"" | b"." | b"..") {
            return false;
        }
        start = end + 1;
    }
    true
}

/// `Path`'s order of two plain paths.
fn plain_order(a: &[u8], b: &[u8]) -> Ordering {
    let rank = |byte: u8| match byte {
        b'/' => 0,
        other => u16::from(other) + 1,
    };
    match a.iter().zip(b).position(|(x, y)| x != y) {
        Some(at) => rank(a[at]).cmp(&rank(b[at])),
        // One is the other's beginning: the shorter has fewer components, or a shorter
        // last one.
        None => a.len().cmp(&b.len()),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;
    use std::path::PathBuf;

    /// Absolute paths of a few short components over an alphabet around the separator's
    /// byte (`-` and `.` sort before `/`, letters after), sometimes with a `.`, `..` or
    /// empty component, or a separator at the end.
    fn paths() -> impl Strategy<Value = PathBuf> {
        let component = prop_oneof![
            8 => "[-.a/b_]{1,3}".prop_map(|c| c.replace('/', "")),
            1 => Just(".".to_string()),
            1 => Just("..".to_string()),
            1 => Just(String::new()),
        ];
        (prop::collection::vec(component, 1..5), any::<bool>()).prop_map(|(parts, slash)| {
            let mut text = format!("/{}", parts.join("/"));
            if slash {
                text.push('/');
            }
            PathBuf::from(text)
        })
    }

    /// Plain absolute paths only (a component never starts with `.`), whose order
    /// [`plain_order`] decides.
    fn plain_paths() -> impl Strategy<Value = PathBuf> {
        prop::collection::vec("[-a_b~][-.a_b~]{0,2}", 1..5)
            .prop_map(|parts| PathBuf::from(format!("/{}", parts.join("/"))))
    }

    proptest! {
        #[test]
        fn plain_paths_sort_as_paths_do(mut items in prop::collection::vec(plain_paths(), 0..12)) {
            prop_assert!(items.iter().all(|p| plain(bytes(p))));
            let mut expected = items.clone();
            expected.sort();
            sort_by_path(&mut items, |p| p.as_path());
            prop_assert_eq!(items, expected);
        }

        #[test]
        fn any_paths_sort_as_paths_do(mut items in prop::collection::vec(paths(), 0..12)) {
            let mut expected = items.clone();
            expected.sort();
            sort_by_path(&mut items, |p| p.as_path());
            prop_assert_eq!(items, expected);
        }
    }

    #[test]
    fn only_paths_whose_components_are_their_text_are_plain() {
        assert!(plain(b"/a/b.lua") && plain(b"/a/.b/..c"));
        for path in [
            "/a//b", "/a/./b", "/a/../b", "/a/", "/a/.", "/a/..", "a/b", "/", "",
        ] {
            assert!(!plain(path.as_bytes()), "{path}");
        }
    }

    #[test]
    fn a_shorter_component_sorts_before_a_longer_one_it_begins() {
        let mut items = vec![PathBuf::from("/d/a-b.lua"), PathBuf::from("/d/a/tool.lua")];
        sort_by_path(&mut items, |p| p.as_path());
        assert_eq!(items[0], Path::new("/d/a/tool.lua"));
    }
}
