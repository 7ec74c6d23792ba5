//! [`Remote`]: who is calling, as the transport knows it. The engine's [`Peer`](crate::Peer)
//! carries it, the request's telemetry reads it, and mail forwarded to another instance
//! ([`crate::mailbox`]) takes it along on the bus.

use std::net::IpAddr;

/// Who is calling, as the transport knows it: the client's address, and its port when the
/// connection is with the client itself (an address a proxy forwarded comes without one).
#[derive(Debug, Clone, Copy, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
pub struct Remote {
    /// The client's IP address (OpenTelemetry's `client.address`).
    pub address: IpAddr,
    /// The client's port (`client.port`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub port: Option<u16>,
}

impl From<IpAddr> for Remote {
    /// An address without a port.
    fn from(address: IpAddr) -> Self {
        Remote { address, port: None }
    }
}
