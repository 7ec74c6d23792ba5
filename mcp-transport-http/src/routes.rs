//! The router of an endpoint: which path goes where (the Streamable endpoint, the 2024-11-05
//! pair's two paths, the RFC 9728 document, the Server Card and the AI Catalog, the health
//! probes), and the Streamable endpoint's verbs.

use std::sync::Arc;

use axum::Router;
use axum::extract::{Request, State};
use axum::response::Response;
use axum::routing::{any, get};
use http::Method;

use crate::admit::{admit, with_cors};
use crate::config::HttpMode;
use crate::discovery::Document;
use crate::response::empty;
use crate::state::Shared;
use crate::{metadata, pair, probes, status, verbs};

/// The routes of the endpoint `shared` describes.
pub(crate) fn build(shared: Arc<Shared>) -> Router {
    let config = &shared.config;
    let mut router = Router::new().route(&config.path, any(entry));
    if let Some((sse, message)) = &config.sse_pair {
        router = router
            .route(sse, any(pair::stream::entry))
            .route(message, any(pair::message::entry));
    }
    if config.resource_metadata.is_some() {
        router = router.route(metadata::PATH, any(metadata::serve));
        if config.path != "/" {
            let suffixed = format!("{}{}", metadata::PATH, config.path);
            router = router.route(&suffixed, any(metadata::serve));
        }
    }
    if let Some(card) = &config.server_card {
        let doc = Document::card(card);
        let path = mcp_protocol::discovery::server_card_path(&config.path);
        router = router.route(&path, any(move |req: Request| std::future::ready(doc.serve(&req))));
    }
    if let Some(catalog) = &config.catalog {
        let doc = Document::catalog(catalog);
        let path = mcp_protocol::discovery::CATALOG_PATH;
        router = router.route(path, any(move |req: Request| std::future::ready(doc.serve(&req))));
    }
    if let Some((live, ready)) = &config.probes {
        router = router.route(live, get(probes::live)).route(ready, get(probes::ready));
    }
    router.with_state(shared)
}

/// Every verb of the endpoint, as the router's handler.
async fn entry(State(shared): State<Arc<Shared>>, req: Request) -> Response {
    endpoint(shared, req).await
}

/// Every verb of the endpoint: Origin and Host first, then the verb, then CORS. The router's
/// handler, and what [`serve`](crate::serve) calls for the endpoint's path without the router
/// (the path is the only thing the router decides for it).
pub(crate) async fn endpoint(shared: Arc<Shared>, req: Request) -> Response {
    let cors = match admit(&shared, &req) {
        Ok(c) => c,
        Err(r) => return *r,
    };
    let streamable = shared.config.mode == HttpMode::Streamable;
    let resp = match *req.method() {
        Method::POST => verbs::post::handle(&shared, req).await,
        Method::OPTIONS => empty(status::PREFLIGHT),
        Method::GET if streamable => verbs::session::get(&shared, req).await,
        Method::DELETE if streamable => verbs::session::delete(&shared, req).await,
        _ => shared.method_not_allowed(),
    };
    with_cors(&shared, resp, cors)
}
