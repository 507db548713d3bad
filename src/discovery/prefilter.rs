//! The byte prefilter (docs/discovery.md): a file can only register if it mentions `registry` and
//! `register`, `hook`, `resource` or `prompt`. Cheap enough to skip parsing most helper files.

use memchr::memmem;

/// True when the bytes may contain a registration.
pub(super) fn may_register(bytes: &[u8]) -> bool {
    memmem::find(bytes, b"registry").is_some()
        && [&b"register"[..], b"hook", b"resource", b"prompt"]
            .iter()
            .any(|verb| memmem::find(bytes, verb).is_some())
}

#[cfg(test)]
mod tests {
    use super::may_register;

    #[test]
    fn needs_registry_and_a_verb() {
        assert!(may_register(b"registry.register{}"));
        assert!(may_register(b"registry.hook('pre_tool_call', f)"));
        assert!(may_register(b"registry.resource{}"));
        assert!(may_register(b"registry.prompt{}"));
        assert!(!may_register(b"local registry = 1"));
        assert!(!may_register(b"register()"));
        assert!(!may_register(b""));
    }
}
