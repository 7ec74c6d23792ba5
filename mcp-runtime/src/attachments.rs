//! [`Attachments`]: data a transport or a middleware layer attaches to a message for the layers
//! after it and the handler, one value per type.
//!
//! The runtime's own type map, so that its API names no transport's types: the HTTP transport
//! attaches its request's extensions (the `http` crate's `Extensions`) whole, as one attachment (a handler reads what axum
//! or the authentication provider put there through it), and a layer attaches values of its own
//! types beside.
//!
//! Most messages carry nothing: an empty map allocates nothing, and the map is built on the first
//! insert. A batch's calls each get a copy of the batch's attachments, hence values are `Clone`.

use std::any::{Any, TypeId};
use std::fmt;

use crate::fast_map::FastMap;

/// One attached value: any `Clone + Send + Sync` type, kept behind a box that clones.
trait Attachment: Any + Send + Sync {
    /// A boxed copy of the value.
    fn clone_box(&self) -> Box<dyn Attachment>;
}

impl<T: Clone + Send + Sync + 'static> Attachment for T {
    fn clone_box(&self) -> Box<dyn Attachment> {
        Box::new(self.clone())
    }
}

impl Clone for Box<dyn Attachment> {
    fn clone(&self) -> Self {
        (**self).clone_box()
    }
}

/// Values attached to a message, at most one per type: by the transport (over HTTP, the
/// request's extensions, whole), by middleware layers ([`Inbound::attachments_mut`]), read by
/// later layers ([`Inbound::attachments`]) and the handler ([`Ctx::attachments`]).
///
/// ```
/// use mcp_runtime::Attachments;
///
/// #[derive(Clone, Debug, PartialEq)]
/// struct Tenant(&'static str);
///
/// let mut attachments = Attachments::new();
/// assert!(attachments.is_empty());
/// assert_eq!(attachments.insert(Tenant("acme")), None);
/// assert_eq!(attachments.get::<Tenant>(), Some(&Tenant("acme")));
/// assert_eq!(attachments.insert(Tenant("umbrella")), Some(Tenant("acme")));
/// assert_eq!(attachments.len(), 1);
/// ```
///
/// [`Inbound::attachments_mut`]: crate::middleware::Inbound::attachments_mut
/// [`Inbound::attachments`]: crate::middleware::Inbound::attachments
/// [`Ctx::attachments`]: crate::Ctx::attachments
#[derive(Clone, Default)]
pub struct Attachments {
    /// `None` until the first insert: a message with nothing attached allocates nothing.
    map: Option<Box<FastMap<TypeId, Box<dyn Attachment>>>>,
}

impl Attachments {
    /// An empty map (allocates nothing).
    pub fn new() -> Self {
        Self::default()
    }

    /// Attaches `value`, returning the value of its type attached before, if any.
    pub fn insert<T: Clone + Send + Sync + 'static>(&mut self, value: T) -> Option<T> {
        let previous = self
            .map
            .get_or_insert_with(Box::default)
            .insert(TypeId::of::<T>(), Box::new(value))?;
        let previous: Box<dyn Any> = previous;
        previous.downcast::<T>().ok().map(|b| *b)
    }

    /// The value of type `T`, if one is attached.
    pub fn get<T: Send + Sync + 'static>(&self) -> Option<&T> {
        let value: &dyn Any = &**self.map.as_ref()?.get(&TypeId::of::<T>())?;
        value.downcast_ref()
    }

    /// The value of type `T`, mutably, if one is attached.
    pub fn get_mut<T: Send + Sync + 'static>(&mut self) -> Option<&mut T> {
        let value: &mut dyn Any = &mut **self.map.as_mut()?.get_mut(&TypeId::of::<T>())?;
        value.downcast_mut()
    }

    /// Detaches the value of type `T`, if one is attached.
    pub fn remove<T: Send + Sync + 'static>(&mut self) -> Option<T> {
        let value: Box<dyn Any> = self.map.as_mut()?.remove(&TypeId::of::<T>())?;
        value.downcast::<T>().ok().map(|b| *b)
    }

    /// Whether a value of type `T` is attached.
    pub fn contains<T: Send + Sync + 'static>(&self) -> bool {
        self.map.as_ref().is_some_and(|m| m.contains_key(&TypeId::of::<T>()))
    }

    /// Whether nothing is attached.
    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    /// How many values are attached.
    pub fn len(&self) -> usize {
        self.map.as_ref().map_or(0, |m| m.len())
    }
}

impl fmt::Debug for Attachments {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Attachments").field("len", &self.len()).finish()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[derive(Clone, Debug, PartialEq)]
    struct Tenant(String);

    #[test]
    fn one_value_per_type() {
        let mut a = Attachments::new();
        assert!(a.is_empty());
        assert!(a.map.is_none(), "an empty map allocates nothing");
        assert_eq!(a.get::<Tenant>(), None);
        assert_eq!(a.remove::<Tenant>(), None);
        assert_eq!(a.insert(Tenant("acme".into())), None);
        assert_eq!(a.insert(7u32), None);
        assert_eq!(a.len(), 2);
        assert!(a.contains::<u32>());
        assert!(!a.contains::<u64>());
        assert_eq!(a.insert(Tenant("umbrella".into())), Some(Tenant("acme".into())));
        *a.get_mut::<u32>().unwrap() += 1;
        assert_eq!(a.get::<u32>(), Some(&8));
        assert_eq!(a.remove::<u32>(), Some(8));
        assert_eq!(a.len(), 1);
        assert_eq!(format!("{a:?}"), "Attachments { len: 1 }");
    }

    #[test]
    fn copies_are_deep() {
        let mut a = Attachments::new();
        a.insert(Tenant("acme".into()));
        let mut b = a.clone();
        b.get_mut::<Tenant>().unwrap().0.push_str("-copy");
        assert_eq!(a.get::<Tenant>(), Some(&Tenant("acme".into())));
        assert_eq!(b.get::<Tenant>(), Some(&Tenant("acme-copy".into())));
    }
}
