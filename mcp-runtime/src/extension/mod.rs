//! The extension registry: the extensions a server declares (SEP-2133) and the methods the core
//! protocol does not know (vendor methods, and the methods an extension adds).
//!
//! An [`Extension`] has an identifier (`com.example/notes`), a settings object, the eras that
//! declare it and the [`CustomMethod`]s it adds. It is declared in `capabilities.extensions`
//! of `server/discover` and (unless it is modern-only) of the legacy `initialize` result. Its
//! methods answer only clients that declared the extension (per request in 2026-07-28, at
//! `initialize` in a legacy session): another client gets -32021 naming the extension
//! (HTTP 400), unless the extension serves undeclared clients
//! ([`Extension::serving_undeclared_clients`], for extensions a client uses after reading the
//! server's declaration). A vendor method registered on its own
//! ([`Extensions::add_method`]) belongs to no extension and answers every client.
//!
//! Custom methods run through the same pipeline as core methods: authentication, the legacy
//! session, routing (a method served in neither the era nor the registry is -32601),
//! observation, the middleware chain, cancellation, progress and deadlines. The registry is
//! built with the server and does not change afterwards.

mod method;

use std::collections::HashMap;
use std::sync::Arc;

use mcp_protocol::extension::{Declared, ExtensionError, check_id, check_settings};
use mcp_protocol::model::ClientCapabilities;
use serde_json::{Map, Value};

use crate::background::Background;

pub use method::{CustomMethod, Eras, MethodHandler, MethodResult, schema_of};

/// An extension a server offers: its identifier, settings and methods.
///
/// ```
/// # mod mcp_server { pub use mcp_runtime::extension::{CustomMethod, Extension}; }
/// use mcp_server::{CustomMethod, Extension};
/// use serde_json::json;
///
/// let notes = Extension::new("com.example/notes")
///     .and_then(|e| e.settings(json!({"maxNotes": 100})))
///     .expect("a valid extension");
/// let count = CustomMethod::new("com.example/notes.count", |_params, _ctx| async { Ok(json!({"count": 3})) })
///     .expect("a valid method name");
/// let notes = notes.method(count);
/// assert_eq!(notes.id(), "com.example/notes");
/// ```
#[derive(Debug, Clone)]
pub struct Extension {
    id: Arc<str>,
    settings: Map<String, Value>,
    eras: Eras,
    serves_undeclared: bool,
    methods: Vec<CustomMethod>,
    services: Vec<Service>,
}

/// A service of an extension: what starts its background work, called once when the engine's
/// driver is made.
#[derive(Clone)]
pub(crate) struct Service(Arc<dyn Fn() -> Background + Send + Sync>);

impl std::fmt::Debug for Service {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("Service(<start>)")
    }
}

impl Service {
    /// Starts the service: the future the driver runs.
    pub(crate) fn start(&self) -> Background {
        (self.0)()
    }
}

impl Extension {
    /// An extension with no settings (`{}`), declared in both eras, whose methods answer
    /// declaring clients only. Refused when the identifier is not `{prefix}/{name}`, or uses
    /// a prefix reserved for the specification's own extensions.
    pub fn new(id: &str) -> Result<Self, ExtensionError> {
        check_id(id)?;
        Ok(Extension {
            id: Arc::from(id),
            settings: Map::new(),
            eras: Eras::Both,
            serves_undeclared: false,
            methods: Vec::new(),
            services: Vec::new(),
        })
    }

    /// Its settings object, as declared to clients (a JSON object).
    pub fn settings(mut self, settings: Value) -> Result<Self, ExtensionError> {
        self.settings = check_settings(&self.id, settings)?;
        Ok(self)
    }

    /// Declares and serves the extension in these eras only (default: both). Its methods are
    /// served in the eras both it and they name.
    pub fn eras(mut self, eras: Eras) -> Self {
        self.eras = eras;
        self
    }

    /// Its methods also answer clients that did not declare the extension (for an extension
    /// a client uses once it read the server's declaration).
    pub fn serving_undeclared_clients(mut self) -> Self {
        self.serves_undeclared = true;
        self
    }

    /// Adds a method.
    pub fn method(mut self, method: CustomMethod) -> Self {
        self.methods.push(method);
        self
    }

    /// Adds a service: background work the engine's [`Driver`](crate::Driver) runs beside the
    /// requests from the moment it is spawned, whether or not a request ever comes (a sweeper, a
    /// delivery scheduler). `start` is called once per started engine; the future it returns
    /// stops when the driver does.
    pub fn service<F>(mut self, start: impl Fn() -> F + Send + Sync + 'static) -> Self
    where
        F: std::future::Future<Output = ()> + Send + 'static,
    {
        self.services
            .push(Service(Arc::new(move || crate::background::boxed(start()))));
        self
    }

    /// The identifier.
    pub fn id(&self) -> &str {
        &self.id
    }
}

/// A registered custom method, with the extension it belongs to.
#[derive(Debug)]
pub(crate) struct MethodEntry {
    pub(crate) method: CustomMethod,
    /// The extension whose declaration a client needs to call it (`None`: anyone may).
    pub(crate) gate: Option<Arc<str>>,
    /// The eras that serve it (the method's and its extension's together).
    eras: Eras,
}

impl MethodEntry {
    /// Whether `era` serves the method.
    pub(crate) fn serves(&self, era: mcp_protocol::Era) -> bool {
        self.eras.has(era)
    }

    /// The -32021 of a client that did not declare the method's extension, if it did not.
    pub(crate) fn check_client(&self, caps: &ClientCapabilities) -> Result<(), mcp_protocol::RpcError> {
        match &self.gate {
            Some(id) if !caps.extension(id) => Err(mcp_protocol::RpcError::undeclared_extension(id)),
            _ => Ok(()),
        }
    }
}

/// The extensions and custom methods of a server. Cheap to clone.
#[derive(Debug, Clone, Default)]
pub struct Extensions {
    declared: Arc<Vec<Declared>>,
    methods: Arc<HashMap<Arc<str>, Arc<MethodEntry>>>,
    services: Arc<Vec<Service>>,
}

impl Extensions {
    /// No extension, no custom method.
    pub fn new() -> Self {
        Self::default()
    }

    /// Adds an extension and its methods; refused when the extension or one of its methods is
    /// already registered.
    pub fn add(&mut self, extension: Extension) -> Result<(), ExtensionError> {
        if self.declared.iter().any(|d| d.id == *extension.id) {
            return Err(ExtensionError::DuplicateExtension(extension.id.to_string()));
        }
        let Extension {
            id,
            settings,
            eras,
            serves_undeclared,
            methods,
            services,
        } = extension;
        if eras.has(mcp_protocol::Era::Modern) {
            mcp_protocol::extension::check_modern_settings(&id, &settings)?;
        }
        let gate = (!serves_undeclared).then(|| id.clone());
        for method in methods {
            let eras = match (eras, method.served_in()) {
                (Eras::Both, m) => m,
                (e, Eras::Both) => e,
                (e, m) if e == m => e,
                // Served in no era: refused rather than silently dead.
                _ => {
                    return Err(ExtensionError::InvalidMethod(
                        method.name().to_owned(),
                        "its eras and its extension's have none in common",
                    ));
                }
            };
            self.insert(MethodEntry {
                method,
                gate: gate.clone(),
                eras,
            })?;
        }
        Arc::make_mut(&mut self.declared).push(Declared {
            id: id.to_string(),
            settings,
            legacy: eras.has(mcp_protocol::Era::Legacy),
            modern: eras.has(mcp_protocol::Era::Modern),
        });
        Arc::make_mut(&mut self.services).extend(services);
        Ok(())
    }

    /// Adds a vendor method that belongs to no extension (every client may call it).
    pub fn add_method(&mut self, method: CustomMethod) -> Result<(), ExtensionError> {
        let eras = method.served_in();
        self.insert(MethodEntry {
            method,
            gate: None,
            eras,
        })
    }

    fn insert(&mut self, entry: MethodEntry) -> Result<(), ExtensionError> {
        let name: Arc<str> = Arc::from(entry.method.name());
        if self.methods.contains_key(&name) {
            return Err(ExtensionError::DuplicateMethod(name.to_string()));
        }
        Arc::make_mut(&mut self.methods).insert(name, Arc::new(entry));
        Ok(())
    }

    /// The declared extensions.
    pub(crate) fn declared(&self) -> &[Declared] {
        &self.declared
    }

    /// The background work of every extension, started (for the engine's driver).
    pub(crate) fn start_services(&self) -> impl Iterator<Item = Background> + '_ {
        self.services.iter().map(Service::start)
    }

    /// The custom method `name`, if registered.
    pub(crate) fn method(&self, name: &str) -> Option<&Arc<MethodEntry>> {
        self.methods.get(name)
    }

    /// Whether nothing is registered.
    pub fn is_empty(&self) -> bool {
        self.declared.is_empty() && self.methods.is_empty()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use mcp_protocol::Era;
    use serde_json::json;

    fn method(name: &str) -> CustomMethod {
        CustomMethod::new(name, |_p, _c| async { Ok(json!({})) }).unwrap_or_else(|e| panic!("{e}"))
    }

    #[test]
    fn registration_rules() {
        let mut x = Extensions::new();
        let ext = Extension::new("com.example/a")
            .unwrap()
            .method(method("com.example/a.get"));
        assert!(x.add(ext.clone()).is_ok());
        assert!(matches!(x.add(ext), Err(ExtensionError::DuplicateExtension(_))));
        assert!(matches!(
            x.add_method(method("com.example/a.get")),
            Err(ExtensionError::DuplicateMethod(_))
        ));
        assert!(Extension::new("a").is_err());
        assert!(Extension::new("com.example/b").unwrap().settings(json!([1])).is_err());
        let dead = Extension::new("com.example/c")
            .unwrap()
            .eras(Eras::Modern)
            .method(method("com.example/c.x").eras(Eras::Legacy));
        assert!(x.add(dead).is_err());
    }

    #[test]
    fn gates_and_eras() {
        let mut x = Extensions::new();
        let modern = Extension::new("com.example/m")
            .unwrap()
            .eras(Eras::Modern)
            .method(method("com.example/m.x"));
        x.add(modern).unwrap();
        x.add(
            Extension::new("com.example/open")
                .unwrap()
                .serving_undeclared_clients()
                .method(method("com.example/open.x")),
        )
        .unwrap();
        x.add_method(method("acme/free")).unwrap();
        let m = x.method("com.example/m.x").unwrap();
        assert!(m.serves(Era::Modern) && !m.serves(Era::Legacy));
        let none = ClientCapabilities::default();
        let declared = ClientCapabilities::new(
            json!({"extensions": {"com.example/m": {}}})
                .as_object()
                .unwrap()
                .clone(),
        );
        assert_eq!(m.check_client(&none).unwrap_err().code, -32021);
        assert!(m.check_client(&declared).is_ok());
        assert!(x.method("com.example/open.x").unwrap().check_client(&none).is_ok());
        assert!(x.method("acme/free").unwrap().check_client(&none).is_ok());
        assert_eq!(x.declared().len(), 2);
        assert!(!x.declared()[0].legacy && x.declared()[1].legacy);
    }
}
