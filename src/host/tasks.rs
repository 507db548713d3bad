//! What the MCP server's Tasks extension needs from below the facade: the store area its
//! task records live in, and what a tool's registration says about tasks.

use super::Host;
use crate::registry::{CallContext, TaskSupport};
use std::time::Duration;

impl Host {
    /// The task records' area of the store's backend (the SQLite file, the PostgreSQL
    /// database shared by every replica, or memory for a memory store): a namespace of its
    /// own that no tool's `store` reaches.
    pub(crate) fn task_records(&self) -> crate::store::Store {
        crate::store::Store::new(self.inner.inputs.store.clone(), crate::store::TASKS)
    }

    /// Whether the tool `name`, as a caller of `scope` sees it, declares a `task` field at
    /// all: what [`task_tool`](Self::task_tool) checks first, without a call's context.
    pub(crate) fn declares_task(&self, name: &str, scope: Option<&str>) -> bool {
        let (_, state) = self.current();
        state
            .lookup(name, scope)
            .is_some_and(|tool| tool.task.is_some())
    }

    /// The `task` field of the tool `name` as the caller of `ctx` sees it (its scope and
    /// toolset selection), with its handler's deadline (`timeout_ms`, else `[runtime]
    /// timeout_ms`); `None` for a tool that is not a task tool, or none this caller may
    /// call (so a refusal never tells of a tool outside the caller's selection).
    pub(crate) fn task_tool(
        &self,
        name: &str,
        ctx: &CallContext,
    ) -> Option<(TaskSupport, Duration)> {
        let (world, state) = self.current();
        let tool = state.lookup(name, ctx.scope.as_deref())?;
        let support = tool.task?;
        let config = &world.config.config;
        if !self.inner.pipeline.selects(&state, config, ctx, name) {
            return None;
        }
        let budget = tool.timeout_ms.unwrap_or(
            config
                .runtime
                .timeout_ms
                .unwrap_or(crate::dispatch::DEFAULT_TIMEOUT_MS),
        );
        Some((support, Duration::from_millis(budget)))
    }
}
