//! [`States`]: values the server owner hands to every handler, one per type.

use std::any::{Any, TypeId, type_name};
use std::collections::HashMap;
use std::sync::Arc;

use crate::api::error::HandlerError;

/// The server's shared state: at most one value of each type, set once when the server is
/// built ([`ServerConfig::state`](crate::ServerConfig::state)) and read by handlers with
/// [`Ctx::state`](crate::Ctx::state). Cheap to clone (one `Arc`).
#[derive(Clone, Default)]
pub struct States {
    values: Arc<HashMap<TypeId, Arc<dyn Any + Send + Sync>>>,
}

impl States {
    /// Adds `value`, replacing an earlier value of the same type.
    pub fn insert<T: Send + Sync + 'static>(&mut self, value: T) {
        Arc::make_mut(&mut self.values).insert(TypeId::of::<T>(), Arc::new(value));
    }

    /// Adds the value `value` points to, shared: [`get`](Self::get) gives back this very
    /// `Arc` (so an `Arc<T>` an application already holds is shared as `T`, not as
    /// `Arc<Arc<T>>`). Replaces an earlier value of the same type.
    pub fn insert_arc<T: Send + Sync + 'static>(&mut self, value: Arc<T>) {
        Arc::make_mut(&mut self.values).insert(TypeId::of::<T>(), value);
    }

    /// The value of type `T`, or an internal error naming the type when none was set.
    pub fn get<T: Send + Sync + 'static>(&self) -> Result<Arc<T>, HandlerError> {
        self.find::<T>()
            .ok_or_else(|| HandlerError::internal(format!("no server state of type {} was set", type_name::<T>())))
    }

    /// The value of type `T`, if one was set.
    pub fn find<T: Send + Sync + 'static>(&self) -> Option<Arc<T>> {
        self.values
            .get(&TypeId::of::<T>())
            .and_then(|v| v.clone().downcast::<T>().ok())
    }

    /// How many values are kept.
    pub fn len(&self) -> usize {
        self.values.len()
    }

    /// Whether no value is kept.
    pub fn is_empty(&self) -> bool {
        self.values.is_empty()
    }
}

impl std::fmt::Debug for States {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("States").field("len", &self.values.len()).finish()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn one_value_per_type() {
        let mut s = States::default();
        s.insert(3u32);
        s.insert(String::from("notes"));
        s.insert(4u32);
        assert_eq!(*s.get::<u32>().ok().unwrap_or_default(), 4);
        assert_eq!(s.get::<String>().map(|v| v.len()).ok(), Some(5));
        let missing = s.get::<i8>().err().map(|e| e.to_string()).unwrap_or_default();
        assert!(missing.contains("i8"), "{missing}");
        assert!(s.find::<i8>().is_none());
    }

    #[test]
    fn a_shared_value_is_the_same_arc() {
        let held = Arc::new(String::from("pool"));
        let mut s = States::default();
        s.insert_arc(held.clone());
        let got = s.find::<String>().unwrap_or_default();
        assert!(Arc::ptr_eq(&held, &got));
        assert!(s.find::<Arc<String>>().is_none());
    }
}
