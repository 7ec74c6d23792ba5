//! [`SessionValues`]: what handlers keep for one legacy session, one value per type, created on
//! first use and dropped with the session ([`Ctx::session_state`](crate::Ctx::session_state)).
//!
//! The values live in the process that holds the session. With a shared store, the instances a
//! session's requests land on each hold a copy of the session and so values of their own:
//! state every instance must see belongs in the store, not here.

use std::any::{Any, TypeId};
use std::collections::HashMap;
use std::fmt;
use std::sync::{Arc, Mutex, OnceLock, PoisonError};

/// Values by type.
type ByType = HashMap<TypeId, Arc<dyn Any + Send + Sync>>;

/// A session's values by type; nothing is allocated until a handler asks for one.
#[derive(Default)]
pub(crate) struct SessionValues {
    map: OnceLock<Box<Mutex<ByType>>>,
}

impl fmt::Debug for SessionValues {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let n = self
            .map
            .get()
            .map_or(0, |m| m.lock().unwrap_or_else(PoisonError::into_inner).len());
        f.debug_struct("SessionValues").field("values", &n).finish()
    }
}

impl SessionValues {
    /// The session's value of type `T`, made with `T::default()` the first time it is asked
    /// for. Share what changes through interior mutability (a `Mutex`, atomics).
    pub(crate) fn get_or_default<T: Default + Send + Sync + 'static>(&self) -> Arc<T> {
        let map = self.map.get_or_init(Box::default);
        let mut map = map.lock().unwrap_or_else(PoisonError::into_inner);
        let value = map
            .entry(TypeId::of::<T>())
            .or_insert_with(|| Arc::new(T::default()) as Arc<dyn Any + Send + Sync>)
            .clone();
        drop(map);
        // The entry of `TypeId::of::<T>()` always holds a `T`.
        value.downcast::<T>().unwrap_or_else(|_| Arc::new(T::default()))
    }
}

#[cfg(test)]
mod tests {
    use std::sync::atomic::{AtomicU32, Ordering};

    use super::*;

    #[test]
    fn one_value_per_type_made_once() {
        let values = SessionValues::default();
        assert_eq!(format!("{values:?}"), "SessionValues { values: 0 }");
        values.get_or_default::<AtomicU32>().fetch_add(2, Ordering::Relaxed);
        values.get_or_default::<AtomicU32>().fetch_add(3, Ordering::Relaxed);
        assert_eq!(values.get_or_default::<AtomicU32>().load(Ordering::Relaxed), 5);
        assert!(values.get_or_default::<Mutex<Vec<String>>>().lock().unwrap().is_empty());
        assert_eq!(format!("{values:?}"), "SessionValues { values: 2 }");
    }
}
