//! What the client side does with what a server sends unasked: a changed tool list wakes the
//! server's link (which lists again).

use rmcp::ClientHandler;
use rmcp::model::{ClientCapabilities, ClientConfig, Implementation, ProtocolVersion};
use rmcp::service::{NotificationContext, RoleClient};
use std::sync::Arc;
use tokio::sync::Notify;

/// The client handler of one server's session.
#[derive(Clone)]
pub(crate) struct Listener {
    /// Woken on `notifications/tools/list_changed`.
    pub tools_changed: Arc<Notify>,
}

impl ClientHandler for Listener {
    fn get_info(&self) -> ClientConfig {
        let mut info = ClientConfig::new(
            ClientCapabilities::default(),
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
}
