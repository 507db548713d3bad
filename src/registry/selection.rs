//! Which toolsets a caller selects (docs/calls.md): the one type that carries a selection, held
//! by a call's [`CallContext`](super::CallContext), by a definitions
//! [`Selection`](crate::Selection) and, with the config's defaults applied, by the caches
//! keyed on it.

/// Enabled toolsets (`None`: the config's `enabled_toolsets`, else all) minus disabled ones
/// (besides the config's `disabled_toolsets`), subtracted last whatever included them.
///
/// ```
/// use toolhost::ToolsetSelection;
/// let selection = ToolsetSelection::default().with_enabled(["file", "web"]).with_disabled(["web"]);
/// assert_eq!(selection.enabled.as_deref(), Some(&["file".to_string(), "web".to_string()][..]));
/// assert_eq!(selection.disabled, ["web"]);
/// ```
#[derive(Debug, Clone, Default, PartialEq, Eq, Hash)]
#[non_exhaustive]
pub struct ToolsetSelection {
    /// Toolsets to enable; `None` uses the config's `enabled_toolsets`, else all.
    pub enabled: Option<Vec<String>>,
    /// Toolsets to subtract (added to the config's `disabled_toolsets`).
    pub disabled: Vec<String>,
}

impl ToolsetSelection {
    /// Enables only these toolsets.
    pub fn with_enabled<I, S>(mut self, toolsets: I) -> Self
    where
        I: IntoIterator<Item = S>,
        S: Into<String>,
    {
        self.enabled = Some(toolsets.into_iter().map(Into::into).collect());
        self
    }

    /// Subtracts these toolsets.
    pub fn with_disabled<I, S>(mut self, toolsets: I) -> Self
    where
        I: IntoIterator<Item = S>,
        S: Into<String>,
    {
        self.disabled = toolsets.into_iter().map(Into::into).collect();
        self
    }

    /// The same selection in a canonical form (names sorted, without duplicates), so that
    /// it can key caches.
    pub(crate) fn canonical(&self) -> Self {
        self.clone().into_canonical()
    }

    /// [`canonical`](Self::canonical), sorting in place (a call's selection is put in this
    /// form on every call: no second copy).
    pub(crate) fn into_canonical(mut self) -> Self {
        if let Some(enabled) = &mut self.enabled {
            sort_unique(enabled);
        }
        sort_unique(&mut self.disabled);
        self
    }

    /// True when every tool is selected (nothing enabled explicitly, nothing disabled).
    pub(crate) fn is_everything(&self) -> bool {
        self.enabled.is_none() && self.disabled.is_empty()
    }
}

/// Sorts `names` and drops duplicates.
fn sort_unique(names: &mut Vec<String>) {
    names.sort();
    names.dedup();
}

#[cfg(test)]
mod tests {
    use super::ToolsetSelection;

    #[test]
    fn the_canonical_form_sorts_and_deduplicates_both_lists() {
        let selection = ToolsetSelection::default()
            .with_enabled(["web", "file", "web"])
            .with_disabled(["b", "a", "b"]);
        let canonical = selection.canonical();
        assert_eq!(canonical.enabled, Some(vec!["file".into(), "web".into()]));
        assert_eq!(canonical.disabled, ["a", "b"]);
        assert!(!canonical.is_everything());
        assert!(ToolsetSelection::default().canonical().is_everything());
    }
}
