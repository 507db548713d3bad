//! Annotations against effects: a declared hint the effects contradict is refused (or
//! logged, `[sandbox] annotation_check = "warn"`); a hint left out is filled in when the
//! effects prove it (docs/effects.md).

use super::EffectSite;
use crate::lua::api::effect::is_write;
use crate::registry::Annotations;
use serde::Deserialize;

/// `[sandbox] annotation_check`: what a contradiction between a tool's annotations and its
/// effects does.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Deserialize)]
#[serde(try_from = "String")]
pub(crate) enum AnnotationCheck {
    /// The file does not load (the default).
    #[default]
    Error,
    /// A warning is logged; the tool loads with what it declared (a read-only one is still
    /// held to it at run time).
    Warn,
}

impl TryFrom<String> for AnnotationCheck {
    type Error = String;

    fn try_from(value: String) -> Result<Self, String> {
        match value.as_str() {
            "error" => Ok(Self::Error),
            "warn" => Ok(Self::Warn),
            other => Err(format!(
                "[sandbox] annotation_check must be \"error\" or \"warn\", not {other:?}"
            )),
        }
    }
}

/// Checks `annotations` of tool `tool` against its effects. `Err`: each contradiction, as
/// a message naming the annotation, the call and its `file:line`. `Ok`: the hints left
/// out that the effects prove were filled in; `true` when there was one.
pub(crate) fn apply(
    tool: &str,
    annotations: &mut Annotations,
    sites: &[EffectSite],
) -> Result<bool, Vec<String>> {
    let contradictions = contradictions(tool, annotations, sites);
    if !contradictions.is_empty() {
        return Err(contradictions);
    }
    Ok(derive(annotations, sites))
}

fn contradictions(tool: &str, annotations: &Annotations, sites: &[EffectSite]) -> Vec<String> {
    let mut found = Vec::new();
    let mut refuse = |annotation: &str, site: &EffectSite| {
        found.push(format!(
            "tool '{tool}' declares {annotation}, but its handler reaches {} at {}:{} ({})",
            site.call, site.file, site.line, site.effect
        ));
    };
    for site in sites {
        let effect = &*site.effect;
        if annotations.read_only == Some(true) && is_write(effect) {
            refuse("read_only = true", site);
        }
        if annotations.destructive == Some(false)
            && (effect == "fs.write" || &*site.call == "store.delete")
        {
            refuse("destructive = false", site);
        }
        if annotations.open_world == Some(false) && matches!(effect, "proc" | "mcp") {
            refuse("open_world = false", site);
        }
    }
    found
}

/// Fills in the hints the tool left out that its effects prove; `true` when it did.
fn derive(annotations: &mut Annotations, sites: &[EffectSite]) -> bool {
    let has = |test: &dyn Fn(&EffectSite) -> bool| sites.iter().any(test);
    let writes = has(&|s| is_write(&s.effect));
    // What the analysis cannot see through: nothing is proven by absence then.
    let opaque = has(&|s| &*s.effect == "unknown" || s.effect.starts_with("call:"));
    let outside = has(&|s| matches!(&*s.effect, "proc" | "mcp"));
    let destroys = has(&|s| &*s.effect == "fs.write" || &*s.call == "store.delete");
    let mut derived = false;
    let mut fill = |hint: &mut Option<bool>, value: Option<bool>| {
        if hint.is_none() && value.is_some() {
            *hint = value;
            derived = true;
        }
    };
    let read_only = match (writes, opaque || outside) {
        (true, _) => Some(false),
        (false, false) => Some(true),
        (false, true) => None,
    };
    fill(&mut annotations.read_only, read_only);
    fill(&mut annotations.destructive, destroys.then_some(true));
    let open_world = match (outside, opaque) {
        (true, _) => Some(true),
        (false, false) => Some(false),
        (false, true) => None,
    };
    fill(&mut annotations.open_world, open_world);
    derived
}

#[cfg(test)]
mod tests {
    use super::*;

    fn site(effect: &str, call: &str) -> EffectSite {
        EffectSite {
            effect: effect.into(),
            call: call.into(),
            file: "t.lua".into(),
            line: 3,
        }
    }

    #[test]
    fn read_only_with_a_write_names_the_annotation_the_call_and_its_line() {
        let mut declared = Annotations::default().with_read_only(true);
        let errors = apply("t", &mut declared, &[site("fs.write", "fs.write")]).unwrap_err();
        assert_eq!(
            errors,
            [
                "tool 't' declares read_only = true, but its handler reaches fs.write at t.lua:3 (fs.write)"
            ]
        );
    }

    #[test]
    fn destructive_false_with_a_store_delete_is_refused() {
        let mut declared = Annotations::default().with_destructive(false);
        let sites = [site("store.write", "store.delete")];
        assert!(apply("t", &mut declared, &sites).is_err());
        let mut declared = Annotations::default().with_destructive(false);
        assert!(apply("t", &mut declared, &[site("store.write", "store.set")]).is_ok());
    }

    #[test]
    fn open_world_false_with_a_process_is_refused() {
        let mut declared = Annotations::default().with_open_world(false);
        assert!(apply("t", &mut declared, &[site("proc", "proc.run")]).is_err());
    }

    #[test]
    fn read_only_is_derived_only_when_proven() {
        let mut none = Annotations::default();
        assert_eq!(
            apply("t", &mut none, &[site("fs.read", "fs.read")]),
            Ok(true)
        );
        assert_eq!((none.read_only, none.open_world), (Some(true), Some(false)));
        let mut unknown = Annotations::default();
        let sites = [site("fs.read", "fs.read"), site("unknown", "load")];
        apply("t", &mut unknown, &sites).unwrap();
        assert_eq!(unknown.read_only, None);
        let mut calls = Annotations::default();
        apply("t", &mut calls, &[site("call:x", "ctx.call")]).unwrap();
        assert_eq!(calls.read_only, None);
    }
}
