//! [`Attachments`]: data a transport or a middleware layer attaches to a message for the layers
//! after it and the handler, one value per type.
//!
//! The runtime's own type map, so that its API names no transport's types: the HTTP transport
//! attaches its request's extensions (the `http` crate's `Extensions`) whole, as one attachment (a handler reads what axum
//! or the authentication provider put there through it), and a layer attaches values of its own
//! types beside.
//!
//! Most messages carry nothing or one value (over HTTP, the request's extensions): an empty map
//! allocates nothing, and the first value costs only its box. A batch's calls each get a copy of the batch's attachments, hence values are `Clone`.

use std::any::{Any, TypeId};
use std::fmt;

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
    /// The first value attached: a message carries one attachment or none nearly always (the
    /// HTTP transport's), which then costs one allocation, its box.
    first: Option<Slot>,
    /// The values after it (allocated on the second insert), found by a scan: a message
    /// carries few.
    rest: Vec<Slot>,
}

/// One attached value and its type.
type Slot = (TypeId, Box<dyn Attachment>);

impl Attachments {
    /// An empty map (allocates nothing).
    pub fn new() -> Self {
        Self::default()
    }

    fn slots(&self) -> impl Iterator<Item = &Slot> {
        self.first.iter().chain(&self.rest)
    }

    fn slot_mut(&mut self, id: TypeId) -> Option<&mut Box<dyn Attachment>> {
        self.first
            .iter_mut()
            .chain(&mut self.rest)
            .find(|(t, _)| *t == id)
            .map(|(_, v)| v)
    }

    /// Attaches `value`, returning the value of its type attached before, if any.
    pub fn insert<T: Clone + Send + Sync + 'static>(&mut self, value: T) -> Option<T> {
        let id = TypeId::of::<T>();
        let boxed: Box<dyn Attachment> = Box::new(value);
        if let Some(slot) = self.slot_mut(id) {
            let previous = std::mem::replace(slot, boxed);
            let previous: Box<dyn Any> = previous;
            return previous.downcast::<T>().ok().map(|b| *b);
        }
        match self.first {
            None => self.first = Some((id, boxed)),
            Some(_) => self.rest.push((id, boxed)),
        }
        None
    }

    /// The value of type `T`, if one is attached.
    pub fn get<T: Send + Sync + 'static>(&self) -> Option<&T> {
        let id = TypeId::of::<T>();
        let value: &dyn Any = &*self.slots().find(|(t, _)| *t == id)?.1;
        value.downcast_ref()
    }

    /// The value of type `T`, mutably, if one is attached.
    pub fn get_mut<T: Send + Sync + 'static>(&mut self) -> Option<&mut T> {
        let value: &mut dyn Any = &mut **self.slot_mut(TypeId::of::<T>())?;
        value.downcast_mut()
    }

    /// Detaches the value of type `T`, if one is attached.
    pub fn remove<T: Send + Sync + 'static>(&mut self) -> Option<T> {
        let id = TypeId::of::<T>();
        let value = if self.first.as_ref().is_some_and(|(t, _)| *t == id) {
            let first = self.first.take().map(|(_, v)| v);
            self.first = self.rest.pop();
            first
        } else {
            let at = self.rest.iter().position(|(t, _)| *t == id)?;
            Some(self.rest.swap_remove(at).1)
        }?;
        let value: Box<dyn Any> = value;
        value.downcast::<T>().ok().map(|b| *b)
    }

    /// Whether a value of type `T` is attached.
    pub fn contains<T: Send + Sync + 'static>(&self) -> bool {
        let id = TypeId::of::<T>();
        self.slots().any(|(t, _)| *t == id)
    }

    /// Whether nothing is attached.
    pub fn is_empty(&self) -> bool {
        self.first.is_none()
    }

    /// How many values are attached.
    pub fn len(&self) -> usize {
        usize::from(self.first.is_some()) + self.rest.len()
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
        assert!(
            a.first.is_none() && a.rest.capacity() == 0,
            "an empty map allocates nothing"
        );
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
        // The first value removed, the next one takes its place.
        a.insert(1u8);
        assert_eq!(a.remove::<Tenant>(), Some(Tenant("umbrella".into())));
        assert_eq!(a.get::<u8>(), Some(&1));
        assert_eq!(a.len(), 1);
        assert_eq!(a.remove::<u8>(), Some(1));
        assert!(a.is_empty());
        a.insert(Tenant("x".into()));
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
