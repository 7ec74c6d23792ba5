//! # mcp-transport-http
//!
//! The HTTP transports of the MCP server library, on axum and hyper:
//! Streamable HTTP for every revision on one endpoint (legacy sessions and
//! the stateless modern era side by side), the simple POST-only mode, and the
//! 2024-11-05 HTTP+SSE pair. Protocol decisions are asked of `mcp-protocol`;
//! handlers run in `mcp-runtime`; authentication comes from `mcp-auth`.
//!
//! The transport is being built; the server currently serves stdio through
//! `mcp-transport-stdio`.
