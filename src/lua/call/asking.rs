//! The input requests of one running call: the keys of its requests.
//!
//! A request's key is the one the author gave (`ctx.ask{key = ...}`), else minted from its
//! place in the run, so a handler that runs again with the same answers (a replayed
//! multi-round call) mints the same keys: a plain request is `qN` (the N-th asking step of
//! the run), a request made inside `ctx.all` is `qN.I.M` (the `ctx.all` is step N, I its
//! function, M the request's place among that function's requests). A call made by
//! `ctx.call` prefixes its keys with `cK.` (K: the parent's K-th `ctx.call`), so a child's
//! requests never collide with its parent's. A key used twice in one run is refused: its
//! answer would be ambiguous when the run is replayed.

use std::collections::{HashMap, HashSet};

/// The call's asking state.
#[derive(Debug, Default)]
pub(crate) struct Asking {
    /// Prepended to every key (`""` for a top-level call, `c2.` for a parent's second
    /// `ctx.call`, ...).
    prefix: String,
    /// Asking steps so far (plain requests and `ctx.all` calls).
    steps: u32,
    /// The `ctx.all` being run: its step and each function's request count.
    group: Option<(u32, HashMap<usize, u32>)>,
    /// Every key used so far in this run.
    used: HashSet<String>,
}

impl Asking {
    /// The state of a call whose keys start with `prefix`.
    pub(crate) fn new(prefix: String) -> Self {
        Self {
            prefix,
            ..Self::default()
        }
    }

    /// The key of a plain request (outside `ctx.all`): `given`, else minted.
    pub(crate) fn plain_key(&mut self, given: Option<String>) -> Result<String, String> {
        self.steps += 1;
        let minted = format!("q{}", self.steps);
        self.claim(given, minted)
    }

    /// Starts a `ctx.all`; `Err` when one is already running (they do not nest).
    pub(crate) fn begin_group(&mut self) -> Result<(), &'static str> {
        if self.group.is_some() {
            return Err("ctx.all cannot be nested (call it once with every function)");
        }
        self.steps += 1;
        self.group = Some((self.steps, HashMap::new()));
        Ok(())
    }

    /// The key of a request made by function `index` (1-based) of the running `ctx.all`.
    pub(crate) fn group_key(
        &mut self,
        index: usize,
        given: Option<String>,
    ) -> Result<String, String> {
        let minted = match &mut self.group {
            Some((step, made)) => {
                let count = made.entry(index).or_insert(0);
                *count += 1;
                format!("q{step}.{index}.{count}")
            }
            None => return self.plain_key(given),
        };
        self.claim(given, minted)
    }

    /// Ends the running `ctx.all`.
    pub(crate) fn end_group(&mut self) {
        self.group = None;
    }

    /// The prefixed key (`given`, else `minted`), unless this run used it already.
    fn claim(&mut self, given: Option<String>, minted: String) -> Result<String, String> {
        let key = format!("{}{}", self.prefix, given.as_deref().unwrap_or(&minted));
        if !self.used.insert(key.clone()) {
            return Err(format!(
                "the key '{}' is already used by an earlier request of this call (keys must be unique)",
                given.unwrap_or(minted)
            ));
        }
        Ok(key)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn keys_are_minted_from_the_place_in_the_run() {
        let mut asking = Asking::default();
        assert_eq!(asking.plain_key(None).unwrap(), "q1");
        assert_eq!(asking.plain_key(Some("name".into())).unwrap(), "name");
        asking.begin_group().expect("not nested");
        assert_eq!(asking.group_key(1, None).unwrap(), "q3.1.1");
        assert_eq!(asking.group_key(2, None).unwrap(), "q3.2.1");
        assert_eq!(asking.group_key(1, None).unwrap(), "q3.1.2");
        assert!(asking.begin_group().is_err(), "nested");
        asking.end_group();
        assert_eq!(asking.plain_key(None).unwrap(), "q4");
    }

    #[test]
    fn a_key_used_twice_is_refused() {
        let mut asking = Asking::default();
        asking.plain_key(Some("k".into())).unwrap();
        let error = asking.plain_key(Some("k".into())).unwrap_err();
        assert!(error.contains("'k' is already used"), "{error}");
    }

    #[test]
    fn a_child_call_prefixes_its_keys() {
        let mut asking = Asking::new("c2.".into());
        assert_eq!(asking.plain_key(None).unwrap(), "c2.q1");
        assert_eq!(asking.plain_key(Some("k".into())).unwrap(), "c2.k");
    }
}
