//! [`Peer`]: what only the transport knows about an inbound message (the caller, the revision
//! declared beside the body, how legacy sessions are kept, whether replies may stream, the
//! headers, the client's address, attachments for the handler).

use std::net::IpAddr;
use std::sync::{Arc, Mutex, PoisonError};

use mcp_protocol::TransportRevision;
use mcp_protocol::auth::AuthInfo;

use crate::attachments::Attachments;
use crate::observe::Network;
use crate::remote::Remote;
use crate::session::slot::SessionSlot;

/// Reads one HTTP request header by (lowercase) name.
pub type HeaderLookup<'h> = dyn Fn(&str) -> Option<&'h [u8]> + Sync + 'h;

/// How a transport keeps legacy sessions.
#[derive(Clone, Copy)]
pub enum Sessions<'a> {
    /// In the runtime's session store, named by each request (Streamable HTTP's
    /// `Mcp-Session-Id`): `initialize` mints one, every other legacy request but
    /// `server/discover` must name one. `Some("")` names no session that exists (use it for a
    /// header that is not valid text).
    Store(Option<&'a str>),
    /// One session per connection or process, in its slot (stdio, a held stream): requests
    /// before `initialize` run without a session.
    Slot(&'a SessionSlot),
    /// None (HTTP simple mode, or sessions turned off): `initialize` is answered, nothing kept.
    None,
}

impl std::fmt::Debug for Sessions<'_> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Sessions::Store(id) => f.debug_tuple("Store").field(id).finish(),
            Sessions::Slot(_) => f.write_str("Slot"),
            Sessions::None => f.write_str("None"),
        }
    }
}

/// What only the transport knows about an inbound message.
pub struct Peer<'a> {
    /// The authenticated caller.
    pub auth: Arc<AuthInfo>,
    /// The revision declared beside the body (HTTP `MCP-Protocol-Version`).
    pub revision: TransportRevision,
    /// How legacy sessions are kept.
    pub sessions: Sessions<'a>,
    /// Whether a reply may stream (false in HTTP simple mode).
    pub streams: bool,
    /// Whether the transport serves the legacy revisions only (a transport of the 2024-11-05 revision).
    pub legacy_only: bool,
    /// The HTTP headers, for the modern header/body agreement checks (none on stdio).
    pub headers: Option<&'a HeaderLookup<'a>>,
    /// The client's address, where the transport tells peers apart (HTTP): bounds that protect
    /// clients from each other (open subscriptions) count per peer.
    pub remote: Option<Remote>,
    /// How the transport carries messages (OpenTelemetry's `network.*` attributes of the
    /// request's telemetry): [`Network::PIPE`] on stdio, [`Network::http`] over HTTP; `None`
    /// (in process) records none.
    pub network: Option<Network>,
    /// What the transport attaches for middleware and handlers (over HTTP, the request's
    /// extensions, the `http` crate's `Extensions`): moved into the call the message becomes (a batch's calls get
    /// copies), so that a single request never copies them.
    pub attachments: Mutex<Attachments>,
}

impl<'a> Peer<'a> {
    /// A peer with a caller and a session policy: no declared revision, streaming, both eras,
    /// no headers, no network, no attachments.
    pub fn new(auth: Arc<AuthInfo>, sessions: Sessions<'a>) -> Self {
        Peer {
            auth,
            revision: TransportRevision::Absent,
            sessions,
            streams: true,
            legacy_only: false,
            headers: None,
            remote: None,
            network: None,
            attachments: Mutex::default(),
        }
    }

    /// The client's address, where the transport knows it.
    pub(crate) fn address(&self) -> Option<IpAddr> {
        self.remote.map(|r| r.address)
    }

    /// Sets how the transport carries messages.
    pub fn with_network(mut self, network: Network) -> Self {
        self.network = Some(network);
        self
    }

    /// Sets what is attached for middleware and handlers.
    pub fn with_attachments(mut self, attachments: Attachments) -> Self {
        self.attachments = Mutex::new(attachments);
        self
    }

    /// Takes the attachments (the call the message becomes owns them).
    pub(crate) fn take_attachments(&self) -> Attachments {
        std::mem::take(&mut *self.attachments.lock().unwrap_or_else(PoisonError::into_inner))
    }
}
