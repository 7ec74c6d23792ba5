//! The ports the layers below the cluster reach other instances through, implemented:
//! [`Replication`] for sessions, [`Sharing`] for tasks.

use std::sync::Weak;
use std::time::Duration;

use mcp_protocol::{RequestId, RpcError};
use serde_json::Value;

use super::{Append, Cluster, Note};
use crate::session::{Replication, Session};
use crate::sink::Sink;
use crate::store::{SessionField, StoreError, StoreFuture, StreamKey};
use crate::tasks::{Following, Sharing};

impl Replication for Cluster {
    fn instance(&self) -> &str {
        &self.instance
    }

    /// A change to a session's record: written through, and announced when it changes what
    /// the other replicas do (`notifications/initialized` changes nothing they do: they read it
    /// from the record when they load or check it).
    fn changed(&self, session: &str, field: SessionField) {
        let Some(me) = self.me.get().and_then(Weak::upgrade) else {
            return;
        };
        // Announced at once, before the request that made the change is answered: a change
        // this instance raises next (a resource update after `resources/subscribe`) is published
        // after it, and the bus keeps one publisher's order. The record follows.
        if field != SessionField::Initialized {
            let _ = self.publish(Note::SessionChanged {
                session: session.to_owned(),
                field: field.clone(),
            });
        }
        let session = session.to_owned();
        crate::background::spawn(async move {
            if let Err(e) = me.store.sessions.update(&session, &field).await {
                tracing::warn!(session, error = %e, "session change not stored");
            }
        });
    }

    fn write<'a>(&'a self, session: &'a str, field: SessionField) -> StoreFuture<'a, ()> {
        Box::pin(async move { self.store.sessions.update(session, &field).await })
    }

    /// Pushes a session's record expiry back.
    fn touched(&self, session: &str) {
        let Some(me) = self.me.get().and_then(Weak::upgrade) else {
            return;
        };
        let session = session.to_owned();
        crate::background::spawn(async move {
            if let Err(e) = me.store.sessions.touch(&session, me.session_ttl).await {
                tracing::debug!(session, error = %e, "session expiry not pushed back");
            }
        });
    }

    /// How often a replica pushes its record's expiry back.
    fn touch_every(&self) -> Duration {
        self.session_ttl / 8
    }

    /// Appends an event to a session's stream log (in order, stored before it is announced and
    /// sent); `false` when the queue is full (the event is lost, and logged).
    fn append(&self, session: &str, stream: u64, frame: Vec<u8>) -> bool {
        let append = Append {
            key: StreamKey {
                session: session.to_owned(),
                stream,
            },
            frame,
            capacity: self.event_capacity,
        };
        match self.appends.try_send(append) {
            Ok(()) => true,
            Err(_) => {
                tracing::warn!(session, "stream event queue full: event dropped");
                false
            }
        }
    }

    fn claim_stream(&self, session: &str) {
        let _ = self.publish(Note::StreamOpened {
            session: session.to_owned(),
        });
    }

    /// To the instance that asked, named in the request's id (to every instance when the id
    /// does not name one: none of them then holds it, and the response is dropped there).
    fn forward_response(&self, session: &str, id: &RequestId, outcome: Result<Value, RpcError>) -> bool {
        let note = Note::Response {
            session: session.to_owned(),
            id: id.clone(),
            outcome,
        };
        match Session::asker(id) {
            Some(asker) => self.publish_to(asker, note),
            None => self.publish(note),
        }
        .is_ok()
    }

    fn forward_cancel(&self, session: &str, id: &RequestId) -> bool {
        self.publish(Note::Cancel {
            session: session.to_owned(),
            id: id.clone(),
        })
        .is_ok()
    }
}

impl Sharing for Cluster {
    fn instance(&self) -> &str {
        &self.instance
    }

    fn is_alive<'a>(&'a self, instance: &'a str) -> StoreFuture<'a, bool> {
        self.store.members.alive(instance)
    }

    fn forward_cancel(&self, instance: &str, task: &str) -> Result<(), StoreError> {
        self.publish_to(instance, Note::TaskCancel { task: task.to_owned() })
    }

    fn forward_input(
        &self,
        instance: &str,
        task: &str,
        responses: &serde_json::Map<String, Value>,
    ) -> Result<(), StoreError> {
        self.publish_to(
            instance,
            Note::TaskInput {
                task: task.to_owned(),
                responses: responses.clone(),
            },
        )
    }

    fn task_changed(&self, task: &str, params: &serde_json::Map<String, Value>) {
        let _ = self.publish(Note::TaskChanged {
            task: task.to_owned(),
            params: params.clone(),
        });
    }

    fn follow(&self, instance: &str, task: &str, sink: Sink) -> Following {
        Cluster::follow(self, instance, task, sink)
    }
}
