//! MCP: `toolhost serve` speaks the Model Context Protocol (rmcp) over stdio — through the
//! JSON-RPC guard — or streamable HTTP (feature `http`), so any MCP client can list and call
//! the tools. Everything lives in [`server`]; the client side (other MCP servers' tools) is a
//! tool source below the host, `crate::mcp_client`.

pub(crate) mod server;
