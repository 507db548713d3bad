//! The tool registry: entries, the shadowing and override policy, scopes and the
//! generation counter (docs/calls.md). It knows nothing about Lua: Lua functions are referred to
//! by [`LuaFnId`], resolved by each VM.

mod accepts;
mod asker;
mod availability;
mod batch;
mod caller;
mod content;
mod context;
mod decisions;
mod effects;
mod entry;
mod function_schema;
mod handler_error;
mod invalid;
mod mcp_header;
#[cfg(test)]
pub(crate) use entry::test_entry;
mod name;
mod nested_audit;
mod observe;
mod output;
mod registration;
mod schema;
mod selection;
mod state;
mod uri_template;
mod validator;

pub(crate) use accepts::{
    Accepts, ParameterTypes, has_required, items_schema, object_schema, resolve,
};
pub use asker::{
    AskFuture, Asker, Capability, InputAnswer, InputKind, InputRequest, Root, Sampled,
    ScriptedAsker,
};
pub(crate) use asker::{ask_round_guarded, supports_guarded};
pub(crate) use availability::{
    Availability, AvailabilityCache, CheckRunner, DEFAULT_CHECK_TTL, Freshness, ProbeFailed,
    ProbeOutcome, Probed,
};
pub use caller::{Caller, CallerKind};
pub use content::PromptArgument;
pub(crate) use content::{
    ContentFn, ContentInfo, Origin, PromptEntry, ResourceEntry, check_annotations,
};
pub use context::CallContext;
pub(crate) use context::{CallerDomain, MAX_CALL_DEPTH, NativeFuture, NativeHandler, ToolCaller};
pub(crate) use decisions::Decisions;
pub(crate) use effects::{EffectSite, ToolEffects};
pub(crate) use entry::{FnRole, Handler, HookEntry, HookEvent, LuaFnId, Probe, Source, ToolEntry};
pub(crate) use function_schema::FunctionSchema;
pub use handler_error::HandlerError;
pub(crate) use invalid::Invalid;
pub(crate) use name::ToolName;
pub(crate) use nested_audit::{NestedAudit, NestedCall};
pub use observe::{CallObserver, LogLevel, LogLine, Progress};
pub use output::Annotations;
pub(crate) use output::OutputSchema;
pub(crate) use registration::Registration;
pub use registration::{ResultLimit, TaskSupport};
pub(crate) use schema::{
    check_function_schema, compile_parameters, compile_parameters_at, default_description,
    json_path, json_type, parameters_hash,
};
pub use selection::ToolsetSelection;
pub(crate) use state::RegistryState;
pub(crate) use uri_template::{UriTemplate, check_uri};
pub(crate) use validator::ParametersValidator;

use parking_lot::RwLock;
use std::sync::Arc;

/// The live registry: an immutable [`RegistryState`] snapshot behind a lock, replaced as a
/// whole. Readers take the `Arc` and never block writers for longer than a pointer swap.
#[derive(Debug, Default)]
pub(crate) struct Registry {
    current: RwLock<Arc<RegistryState>>,
}

impl Registry {
    /// A registry publishing `state`.
    pub(crate) fn new(state: RegistryState) -> Self {
        Self {
            current: RwLock::new(Arc::new(state)),
        }
    }

    /// The current contents.
    pub(crate) fn snapshot(&self) -> Arc<RegistryState> {
        self.current.read().clone()
    }

    /// The current generation.
    pub(crate) fn generation(&self) -> u64 {
        self.current.read().generation()
    }

    /// Replaces the contents (used by reload), keeping generations monotonic.
    pub(crate) fn replace(&self, mut state: RegistryState) {
        let mut guard = self.current.write();
        let floor = guard.generation() + 1;
        state.raise_generation_to(floor);
        *guard = Arc::new(state);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn generation_moves_on_deregister_only_when_something_goes() {
        let mut state = RegistryState::default();
        state
            .apply(vec![test_entry("a", "t")], Vec::new())
            .expect("a registers");
        let start = state.generation();
        assert!(state.deregister("a", None));
        assert_eq!(state.generation(), start + 1);
        assert!(!state.deregister("a", None));
        assert_eq!(
            state.generation(),
            start + 1,
            "a failed deregister does not bump"
        );
    }

    #[test]
    fn replacing_keeps_generations_monotonic() {
        let registry = Registry::new(RegistryState::default());
        let before = registry.generation();
        registry.replace(RegistryState::default());
        assert!(registry.generation() > before);
    }
}
