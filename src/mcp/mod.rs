//! MCP: `toolhost serve` speaks the Model Context Protocol (rmcp) over stdio — through the
//! JSON-RPC [`guard`] — or streamable HTTP ([`http`], feature `http`), so any MCP client
//! can list and call the tools.

pub(crate) mod guard;
#[cfg(feature = "http")]
pub(crate) mod http;
pub(crate) mod server;
pub(crate) mod shutdown;
