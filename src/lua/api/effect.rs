//! What each host function does to the world, in the names of docs/effects.md: the one
//! table both the static analysis of tool files (discovery) and the run-time guard of
//! read-only calls read, so the two can never disagree about what a write is.

/// The effect of calling `module.name`, or `None` for functions that touch nothing outside
/// the VM (`json`, `log`, `time`, `proc.allowed`, `fs.roots`: the configured roots, no
/// file is opened) or do not exist.
pub(crate) fn effect_of(module: &str, name: &str) -> Option<&'static str> {
    Some(match (module, name) {
        ("fs", "read" | "exists" | "list" | "glob" | "grep") => "fs.read",
        ("fs", "write" | "mkdir") => "fs.write",
        ("store", "get" | "list") => "store.read",
        ("store", "set" | "delete" | "update" | "incr") => "store.write",
        ("env", "get") => "env",
        ("proc", "run") => "proc",
        _ => return None,
    })
}

/// Whether an effect changes the world (what a read-only call may not do).
pub(crate) fn is_write(effect: &str) -> bool {
    matches!(effect, "fs.write" | "store.write" | "proc")
}

/// The host modules whose functions have effects: a use of one of them the analysis cannot
/// follow makes a tool's effects `unknown`.
pub(crate) const EFFECT_MODULES: &[&str] = &["fs", "store", "env", "proc"];

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_catalogue_function_of_an_effect_module_is_classified_or_harmless() {
        // A new host function in fs/store/env/proc must be placed in the table above:
        // an unclassified write would escape both the analysis and the run-time guard.
        let harmless = [("proc", "allowed"), ("fs", "roots")];
        for function in super::super::catalogue() {
            if EFFECT_MODULES.contains(&function.module)
                && !harmless.contains(&(function.module, function.name))
            {
                assert!(
                    effect_of(function.module, function.name).is_some(),
                    "{}.{} has no effect class",
                    function.module,
                    function.name
                );
            }
        }
    }
}
