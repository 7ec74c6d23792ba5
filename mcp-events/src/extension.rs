//! The extension a server registers: `io.modelcontextprotocol/events` and its methods.

use mcp_protocol::events::{LIST, POLL, STREAM};
use mcp_protocol::extension::ExtensionError;
use mcp_runtime::extension::Extension;

use crate::events::Events;

impl Events {
    /// The extension to register with a server (`McpServerBuilder::events` does):
    /// `io.modelcontextprotocol/events`, declared as `{"listChanged": true}` in both eras (a
    /// type added or withdrawn at run time is announced on the open push streams as
    /// `notifications/events/list_changed`), with `events/list`,
    /// `events/poll` and `events/stream` (long-lived), and with webhooks `events/subscribe`,
    /// `events/unsubscribe` and the service that adopts the subscriptions no instance delivers.
    /// Its methods answer clients that did not declare the extension too: a client learns of it
    /// from the server's declaration.
    pub fn extension(&self) -> Result<Extension, ExtensionError> {
        // Types can be added and withdrawn at run time: open push streams are told.
        let settings = serde_json::json!({ mcp_protocol::events::LIST_CHANGED_SETTING: true });
        let mut extension = Extension::new(mcp_protocol::events::EXTENSION)?
            .settings(settings)?
            .serving_undeclared_clients();
        for method in methods(self)? {
            extension = extension.method(method);
        }
        if self.inner.webhooks.is_some() {
            // Deliveries of subscriptions nobody delivers (made on another instance, or left
            // by one that stopped) are adopted from the start.
            let events = self.clone();
            extension = extension.service(move || crate::webhook::deliver::sweep(events.clone()));
        }
        Ok(extension)
    }
}

/// The list, poll and stream methods of `events`.
fn methods(
    events: &Events,
) -> Result<Vec<mcp_runtime::extension::CustomMethod>, mcp_protocol::extension::ExtensionError> {
    use mcp_protocol::events::{SUBSCRIBE, UNSUBSCRIBE};
    use mcp_runtime::extension::CustomMethod;
    let (a, b, c) = (events.clone(), events.clone(), events.clone());
    let mut methods = vec![
        CustomMethod::new(LIST, move |params, _ctx| crate::methods::list(a.clone(), params))?,
        CustomMethod::new(POLL, move |params, ctx| crate::methods::poll(b.clone(), params, ctx))?,
        CustomMethod::new(STREAM, move |params, ctx| {
            crate::methods::stream(c.clone(), params, ctx)
        })?
        .long_lived(),
    ];
    if events.inner.webhooks.is_some() {
        let (d, e) = (events.clone(), events.clone());
        methods.push(CustomMethod::new(SUBSCRIBE, move |params, ctx| {
            crate::webhook::methods::subscribe(d.clone(), params, ctx)
        })?);
        methods.push(CustomMethod::new(UNSUBSCRIBE, move |params, ctx| {
            crate::webhook::methods::unsubscribe(e.clone(), params, ctx)
        })?);
    }
    Ok(methods)
}
