//! Digests of cached content (the registration cache's keys and records): the same in
//! every process, and fast over the bytes of every tool file, which a warm start hashes.
//! `std`'s SipHash did about four instructions a byte there; foldhash (already hashbrown's)
//! about half an instruction. These are cache keys, not security: whoever could make two
//! sources collide could as well write the tool file or the cache.

use std::hash::BuildHasher;

/// A hasher with a fixed seed (so digests agree between runs).
pub(crate) fn hasher() -> foldhash::fast::FoldHasher<'static> {
    // "toolhost" in ASCII: any fixed value would do.
    foldhash::fast::FixedState::with_seed(0x746f_6f6c_686f_7374).build_hasher()
}

#[cfg(test)]
mod tests {
    use super::hasher;
    use std::hash::{Hash, Hasher};

    fn digest(text: &str) -> u64 {
        let mut h = hasher();
        text.hash(&mut h);
        h.finish()
    }

    #[test]
    fn digests_are_fixed_and_tell_texts_apart() {
        assert_eq!(digest("registry.register{}"), digest("registry.register{}"));
        assert_ne!(
            digest("registry.register{}"),
            digest("registry.register{ }")
        );
    }
}
