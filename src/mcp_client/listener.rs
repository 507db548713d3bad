//! What the client side does with what a server sends unasked: a changed tool list wakes the
//! server's link (which lists again); progress and log notifications and elicitation
//! requests during our calls go to the calls that made them ([`Relays`]).

// Logging is deprecated by SEP-2577 from protocol 2026-07-28 on; servers of today still send it.
#![allow(deprecated)]

use super::relay::Relays;
use rmcp::ClientHandler;
use rmcp::ErrorData;
use rmcp::model::{
    ClientCapabilities, ClientConfig, ElicitRequestParams, ElicitResult, ElicitationCapability,
    Implementation, LoggingMessageNotificationParam, ProgressNotificationParam, ProtocolVersion,
};
use rmcp::service::{NotificationContext, RequestContext, RoleClient};
use std::sync::Arc;
use tokio::sync::Notify;

/// The client handler of one server's session.
#[derive(Clone)]
pub(crate) struct Listener {
    /// Woken on `notifications/tools/list_changed`.
    pub tools_changed: Arc<Notify>,
    /// The server's name (`[mcp_servers.NAME]`), for relayed log lines.
    pub server: Arc<str>,
    /// The calls whose progress and log lines are relayed.
    pub relays: Arc<Relays>,
}

impl ClientHandler for Listener {
    fn get_info(&self) -> ClientConfig {
        // Elicitation: a server's question during a call goes to the client behind it.
        let mut capabilities = ClientCapabilities::default();
        capabilities.elicitation = Some(ElicitationCapability::default());
        let mut info = ClientConfig::new(
            capabilities,
            Implementation::new("toolhost", env!("CARGO_PKG_VERSION")),
        );
        // The session-based protocol (initialize handshake): servers send list_changed as
        // plain notifications, which every SDK's server does.
        info.protocol_version = ProtocolVersion::LATEST_WITH_INITIALIZE;
        info
    }

    async fn on_tool_list_changed(&self, _context: NotificationContext<RoleClient>) {
        self.tools_changed.notify_one();
    }

    async fn on_progress(
        &self,
        params: ProgressNotificationParam,
        _context: NotificationContext<RoleClient>,
    ) {
        self.relays.progress(params);
    }

    async fn on_logging_message(
        &self,
        params: LoggingMessageNotificationParam,
        _context: NotificationContext<RoleClient>,
    ) {
        self.relays.log(&self.server, params);
    }

    async fn create_elicitation(
        &self,
        request: ElicitRequestParams,
        _context: RequestContext<RoleClient>,
    ) -> Result<ElicitResult, ErrorData> {
        Ok(self.relays.elicit(&self.server, request).await)
    }
}
