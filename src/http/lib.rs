//! svc-http: every surface of a node as an adapter over the use cases in
//! `svc-node`: the HTTP API (`api`), the portals, the public MCP server,
//! the front door, and the node that binds them to listeners. A handler
//! reads the request, calls one use case and maps its typed error once.

pub mod api;
pub mod forwarded;
pub mod front_door;
pub mod group_node;
pub mod mcp;
pub mod node;
pub mod portal;
pub mod sandbox;
pub mod surfaces;
pub mod tls;
