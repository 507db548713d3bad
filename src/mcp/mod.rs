//! MCP: `toolhost serve` speaks the Model Context Protocol (rmcp) over stdio — through the
//! JSON-RPC [`guard`] — or streamable HTTP ([`http`], feature `http`), so any MCP client
//! can list and call the tools; and, as a [`client`] (feature `mcp-client`), it brings
//! other MCP servers' tools into the registry.

#[cfg(feature = "mcp-client")]
pub(crate) mod client;
pub(crate) mod guard;
#[cfg(feature = "http")]
pub(crate) mod http;
pub(crate) mod server;
pub(crate) mod shutdown;
#[cfg(feature = "cli")]
pub(crate) mod stdio;
