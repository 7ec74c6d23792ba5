//! [`Network`]: how a transport carries messages, as OpenTelemetry's `network.*` attributes.

/// How a transport carries messages: the `network.transport`, `network.protocol.name` and
/// `network.protocol.version` attributes of the request span and the duration metrics. Each
/// transport tells the engine its own ([`Peer::network`](crate::engine::Peer::network)). One
/// byte: it travels with every request.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub struct Network(Kind);

#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
enum Kind {
    Pipe,
    /// HTTP over TCP, of a version (`None`: not known here).
    Http(Option<HttpVersion>),
}

/// A version of HTTP, as [`Network::http`] records it (the HTTP transport maps its request's
/// version to it).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum HttpVersion {
    /// HTTP/0.9.
    V0_9,
    /// HTTP/1.0.
    V1_0,
    /// HTTP/1.1.
    V1_1,
    /// HTTP/2.
    V2,
    /// HTTP/3.
    V3,
}

impl Network {
    /// stdio: `network.transport = pipe`, no application protocol.
    pub const PIPE: Network = Network(Kind::Pipe);

    /// HTTP over TCP, of a version not known here (a message relayed from another instance):
    /// `network.transport = tcp`, `network.protocol.name = http`.
    pub const HTTP: Network = Network(Kind::Http(None));

    /// HTTP of `version` over TCP: `network.transport = tcp`, `network.protocol.name = http`
    /// and `network.protocol.version` (`1.0`, `1.1`, `2` or `3`).
    pub fn http(version: HttpVersion) -> Network {
        Network(Kind::Http(Some(version)))
    }

    /// The `network.transport` value (`pipe`, `tcp`).
    pub fn transport(&self) -> &'static str {
        match self.0 {
            Kind::Pipe => "pipe",
            Kind::Http(_) => "tcp",
        }
    }

    /// The `network.protocol.name` value (`http`), where there is one.
    pub fn protocol_name(&self) -> Option<&'static str> {
        match self.0 {
            Kind::Pipe => None,
            Kind::Http(_) => Some("http"),
        }
    }

    /// The `network.protocol.version` value (`1.1`, `2`), where it is known.
    pub fn protocol_version(&self) -> Option<&'static str> {
        match self.0 {
            Kind::Pipe => None,
            Kind::Http(version) => version.map(|v| match v {
                HttpVersion::V0_9 => "0.9",
                HttpVersion::V1_0 => "1.0",
                HttpVersion::V1_1 => "1.1",
                HttpVersion::V2 => "2",
                HttpVersion::V3 => "3",
            }),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn http_versions() {
        let h2 = Network::http(HttpVersion::V2);
        assert_eq!(
            (h2.transport(), h2.protocol_name(), h2.protocol_version()),
            ("tcp", Some("http"), Some("2"))
        );
        assert_eq!(Network::http(HttpVersion::V1_1).protocol_version(), Some("1.1"));
        assert_eq!(Network::http(HttpVersion::V0_9).protocol_version(), Some("0.9"));
        assert_eq!(Network::PIPE.protocol_name(), None);
        assert_eq!(Network::PIPE.transport(), "pipe");
        assert_eq!(Network::HTTP.protocol_version(), None);
        assert_eq!(std::mem::size_of::<Network>(), 1);
    }
}
