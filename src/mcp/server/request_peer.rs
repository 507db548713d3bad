//! Who sent one request, as the request declares it: the protocol revision it speaks, the
//! client capabilities it may use and the log level it asked for.
//!
//! On 2025-11-25 (and older) a session declares these once, at `initialize` (the log level
//! through `logging/setLevel`); on 2026-07-28 every request carries them in its `_meta`
//! and two requests of one connection may differ. The call path reads this one value
//! instead of asking the session, so both revisions behave the same from there on.

use rmcp::model::{
    ClientCapabilities, InitializeRequestParams, LoggingLevel, ProtocolVersion, RequestMetaObject,
};
use rmcp::service::{RequestContext, RoleServer};

/// The declared client of one request.
#[derive(Debug, Clone, PartialEq)]
pub(crate) struct RequestPeer {
    /// The protocol revision of this request (a session's negotiated one, or the request's
    /// `_meta` `protocolVersion`).
    pub(crate) protocol: ProtocolVersion,
    /// The capabilities the client declared (at `initialize`, or in the request's `_meta`).
    pub(crate) capabilities: ClientCapabilities,
    /// The lowest log level the client wants as `notifications/message` during this
    /// request (`None`: the revision's default — the session's default level on
    /// 2025-11-25, no log lines at all on 2026-07-28, where logging is an opt-in per
    /// request).
    pub(crate) log_level: Option<LoggingLevel>,
}

impl RequestPeer {
    /// The peer of a request in a session that began with `initialize` (2025-11-25 and
    /// older): what `initialize` declared, and `logging/setLevel`'s level.
    pub(crate) fn from_session(
        info: &InitializeRequestParams,
        log_level: Option<LoggingLevel>,
    ) -> Self {
        Self {
            protocol: info.protocol_version.clone(),
            capabilities: info.capabilities.clone(),
            log_level,
        }
    }

    /// The peer a 2026-07-28 request declares in its `_meta`; `None` when the `_meta`
    /// names no protocol version (the request belongs to a session, or is malformed —
    /// rmcp refuses those before a handler runs).
    pub(crate) fn from_meta(meta: &RequestMetaObject) -> Option<Self> {
        Some(Self {
            protocol: meta.protocol_version()?,
            capabilities: meta.client_capabilities().unwrap_or_default(),
            log_level: meta.log_level(),
        })
    }

    /// The peer of the request behind `context`: its own `_meta` when it declares a
    /// protocol version, else its session's `initialize` (with `session_level`, the
    /// session's `logging/setLevel`). A request with neither (a session rmcp started
    /// without `initialize`) gets the newest protocol and no capabilities.
    pub(crate) fn of_request(
        context: &RequestContext<RoleServer>,
        session_level: Option<LoggingLevel>,
    ) -> Self {
        if let Some(peer) = Self::from_meta(&context.meta) {
            return peer;
        }
        match context.peer.peer_info() {
            // A request's own level (`_meta`, which 2025-11-25 clients may send too, and the
            // only level a `--stateless` request can have) decides in place of the session's.
            Some(info) => Self::from_session(&info, context.meta.log_level().or(session_level)),
            None => Self {
                protocol: ProtocolVersion::LATEST,
                capabilities: context.client_capabilities().unwrap_or_default(),
                log_level: context.meta.log_level(),
            },
        }
    }

    /// Whether this request speaks 2026-07-28 or newer: no session, per-request `_meta`,
    /// caching hints, `subscriptions/listen`.
    pub(crate) fn is_stateless_revision(&self) -> bool {
        // ISO dates compare as text, as rmcp compares them.
        self.protocol.as_str() >= ProtocolVersion::V_2026_07_28.as_str()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn meta(value: serde_json::Value) -> RequestMetaObject {
        serde_json::from_value(value).expect("a _meta object")
    }

    #[test]
    fn a_2026_request_declares_its_peer_in_meta() {
        let peer = RequestPeer::from_meta(&meta(json!({
            "io.modelcontextprotocol/protocolVersion": "2026-07-28",
            "io.modelcontextprotocol/clientCapabilities": {"elicitation": {}},
            "io.modelcontextprotocol/clientInfo": {"name": "c", "version": "1"},
            "io.modelcontextprotocol/logLevel": "info",
        })))
        .expect("a declared peer");
        assert_eq!(peer.protocol, ProtocolVersion::V_2026_07_28);
        assert!(peer.capabilities.elicitation.is_some());
        assert_eq!(peer.log_level, Some(LoggingLevel::Info));
        assert!(peer.is_stateless_revision());
    }

    #[test]
    fn a_request_without_a_declared_version_has_no_meta_peer() {
        assert_eq!(
            RequestPeer::from_meta(&meta(json!({"progressToken": 1}))),
            None
        );
    }

    #[test]
    fn a_2025_session_peer_comes_from_initialize() {
        let info: InitializeRequestParams = serde_json::from_value(json!({
            "protocolVersion": "2025-11-25",
            "capabilities": {"roots": {}},
            "clientInfo": {"name": "c", "version": "1"},
        }))
        .unwrap();
        let peer = RequestPeer::from_session(&info, Some(LoggingLevel::Debug));
        assert_eq!(peer.protocol, ProtocolVersion::V_2025_11_25);
        assert!(peer.capabilities.roots.is_some());
        assert_eq!(peer.log_level, Some(LoggingLevel::Debug));
        assert!(!peer.is_stateless_revision());
    }
}
