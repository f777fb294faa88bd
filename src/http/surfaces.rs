//! Every public surface on one router: the API's own routes (`api`), the
//! public MCP server (`mcp`) and the portals (`portal`), both built on the
//! HTTP layer's pieces. The one module that knows all three, so none of
//! them imports another above it.

use axum::Router;

use svc_node::region::Region;

/// The router a region's public listener serves.
pub fn public_router(state: Region) -> Router {
    let mcp = crate::mcp::public::routes(&state);
    crate::api::public_router_with(state, mcp, crate::portal::routes())
}
