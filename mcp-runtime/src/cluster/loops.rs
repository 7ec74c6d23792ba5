//! The cluster's loops, each run as a background task for as long as the runtime lives: the bus
//! listener applying what other instances say, the forwarder of this instance's registry
//! changes, the heartbeat, and the appender of stream events.

use std::collections::HashSet;
use std::sync::{Arc, Weak};

use mcp_protocol::auth::AuthInfo;
use tokio::sync::mpsc;

use super::load::REPORT_MOST;
use super::numbers::Incoming;
use super::{Append, BUS_VERSION, Cluster, HEARTBEAT_EVERY, HEARTBEAT_TTL, Heard, Note};
use crate::catalog::{Change, Registry};
use crate::session::LogNews;
use crate::session::store::{SessionStore, StartedHere};
use crate::store::BusEvent;
use crate::tasks::Tasks;

/// Applies what other instances say.
pub(super) async fn listen(
    cluster: Weak<Cluster>,
    mut bus: mpsc::Receiver<BusEvent>,
    sessions: Weak<SessionStore>,
    registry: Weak<Registry>,
) {
    let mut heard = Incoming::default();
    let mut strangers = Strangers::default();
    while let Some(event) = bus.recv().await {
        let (Some(cluster), Some(sessions), Some(registry)) =
            (cluster.upgrade(), sessions.upgrade(), registry.upgrade())
        else {
            return;
        };
        let bytes = match event {
            BusEvent::Message(bytes) => bytes,
            BusEvent::Gap => {
                gap(&cluster, &registry, "bus gap: messages may have been lost");
                continue;
            }
        };
        let mut envelope = match Heard::read(&bytes) {
            Heard::Envelope(e) => e,
            // What this instance cannot read may have been for it: lost, as far as it knows.
            Heard::Foreign { from, version } => {
                if strangers.first(&from) {
                    tracing::error!(
                        instance = %from,
                        version,
                        expected = BUS_VERSION,
                        "an instance of another build shares the store: its bus messages are ignored \
                         (the instances sharing a store must run one build)"
                    );
                    gap(&cluster, &registry, "bus gap: an instance's messages cannot be read");
                }
                continue;
            }
            Heard::Unreadable(e) => {
                tracing::warn!(error = %e, "unreadable bus message");
                gap(&cluster, &registry, "bus gap: a message could not be read");
                continue;
            }
        };
        let direct = match &envelope.to {
            // Another instance's (a bus without addresses hands everything to everyone).
            Some(to) if **to != *cluster.instance => continue,
            Some(_) => true,
            None => false,
        };
        if !heard.in_order(&envelope.from, envelope.seq, direct) {
            gap(&cluster, &registry, "bus gap: a message of another instance was lost");
        }
        if *envelope.from == *cluster.instance {
            // One to this instance itself is not counted with those to every instance.
            if direct {
                continue;
            }
            cluster.heard_own(envelope.seq);
            // Our own change, back from the bus: every instance has it by now.
            if let Note::Change { change } = envelope.note {
                registry.announce(change.into());
            }
            continue;
        }
        match &envelope.note {
            Note::Ended { session } => {
                cluster.acknowledged(session, &envelope.from);
                continue;
            }
            Note::SessionEnded { session } => {
                // Its tasks first: their workers stop as the replica closes, and must not write
                // back the records the ending instance deletes.
                if let Some(tasks) = cluster.tasks.get().and_then(Weak::upgrade) {
                    tasks.forget_session(session);
                }
                sessions.drop_replica(session);
                let _ = cluster.publish_to(
                    &envelope.from,
                    Note::Ended {
                        session: session.clone(),
                    },
                );
                continue;
            }
            _ => {}
        }
        match envelope.note {
            Note::Mail {
                n,
                mailbox,
                principal,
                scopes,
                claims,
                client,
                payload,
            } => {
                let auth = AuthInfo::new(principal).with_scopes(scopes).with_claims(claims);
                cluster.mail(&envelope.from, n, mailbox, auth, client, payload);
                continue;
            }
            Note::MailReceipt { n, outcome } => {
                cluster.mail_receipt(n, outcome);
                continue;
            }
            note => envelope.note = note,
        }
        let Some(note) = super::on_behalf::apply(&cluster, &envelope.from, envelope.note) else {
            continue;
        };
        envelope.note = note;
        if let Note::User { topic, payload } = &envelope.note {
            cluster.user(topic, payload);
            continue;
        }
        if let Note::Load { sessions, heavy } = envelope.note {
            let report = StartedHere { total: sessions, heavy };
            cluster.loads.record(&envelope.from, report);
            continue;
        }
        let tasks = cluster.tasks.get().and_then(Weak::upgrade);
        apply(envelope.note, &sessions, &registry, tasks);
    }
}

/// The instances heard writing another version of the bus format: each is reported, and
/// counted as a gap, the first time only (a bounded number of them).
#[derive(Default)]
struct Strangers(HashSet<String>);

impl Strangers {
    /// The most remembered; a stranger beyond them is not reported.
    const MOST: usize = 64;

    /// Whether `instance` is heard for the first time.
    fn first(&mut self, instance: &str) -> bool {
        self.0.len() < Self::MOST && self.0.insert(instance.to_owned())
    }
}

/// Answers a loss like a lag: every list re-announced, every stream that follows a log re-reading it.
fn gap(cluster: &Cluster, registry: &Registry, why: &str) {
    tracing::warn!("{why}; every list is re-announced and every stream re-reads its log");
    for change in Change::EVERY_LIST {
        registry.announce(change);
    }
    cluster.gaps.send_modify(|n| *n += 1);
}

fn apply(note: Note, sessions: &SessionStore, registry: &Registry, tasks: Option<Arc<Tasks>>) {
    match note {
        Note::TaskCancel { task } => {
            if let Some(tasks) = tasks.filter(|t| t.live(&task).is_some()) {
                crate::background::spawn(async move {
                    let _ = tasks.cancel(&task).await;
                });
            }
        }
        Note::TaskInput { task, responses } => {
            if let Some(tasks) = tasks.filter(|t| t.live(&task).is_some()) {
                crate::background::spawn(async move {
                    let _ = tasks.feed_input(&task, None, &responses).await;
                });
            }
        }
        Note::User { .. }
        | Note::Ended { .. }
        | Note::Load { .. }
        | Note::CompleteElicitation { .. }
        | Note::Answer { .. }
        | Note::TaskFollow { .. }
        | Note::TaskFrame { .. }
        | Note::TaskUnfollow { .. }
        | Note::Mail { .. }
        | Note::MailReceipt { .. } => {}
        Note::TaskChanged { task, params } => {
            if let Some(tasks) = tasks {
                tasks.subscriptions().task_changed(&task, params);
            }
        }
        Note::Change { change } => registry.announce(change.into()),
        Note::SessionEnded { session } => {
            sessions.drop_replica(&session);
        }
        Note::SessionChanged { session, field } => {
            if let Some(s) = sessions.replica(&session) {
                s.apply_remote(&field);
            }
        }
        Note::Response { session, id, outcome } => {
            if let Some(s) = sessions.replica(&session) {
                s.deliver_local(&id, outcome);
            }
        }
        Note::Cancel { session, id } => {
            if let Some(s) = sessions.replica(&session) {
                s.in_flight().cancel(&id);
            }
        }
        Note::Event { session, stream, id } => {
            if let Some(s) = sessions.replica(&session) {
                s.log_news(LogNews::Appended { stream, id });
            }
        }
        Note::StreamOpened { session } => {
            if let Some(s) = sessions.replica(&session) {
                s.log_news(LogNews::Claimed);
            }
        }
    }
}

/// Publishes this instance's registry changes; one the bus cannot take is announced here at
/// once (the bus would never bring it back).
pub(super) async fn forward_changes(
    cluster: Weak<Cluster>,
    mut changes: tokio::sync::broadcast::Receiver<Change>,
    registry: Weak<Registry>,
) {
    use tokio::sync::broadcast::error::RecvError;
    loop {
        let missed = match changes.recv().await {
            Ok(c) => vec![c],
            // Changes were missed: tell every instance that every list may have changed.
            Err(RecvError::Lagged(_)) => Change::EVERY_LIST.to_vec(),
            Err(RecvError::Closed) => return,
        };
        let (Some(c), Some(registry)) = (cluster.upgrade(), registry.upgrade()) else {
            return;
        };
        for change in missed {
            if c.publish(Note::Change {
                change: (&change).into(),
            })
            .is_err()
            {
                registry.announce(change);
            }
        }
    }
}

/// Renews the instance's heartbeat, and reports the sessions it started, until the cluster is
/// dropped.
pub(super) async fn heartbeat(cluster: Weak<Cluster>) {
    let mut tick = tokio::time::interval(HEARTBEAT_EVERY);
    loop {
        tick.tick().await;
        let Some(c) = cluster.upgrade() else { return };
        if let Err(e) = c.store.members.heartbeat(&c.instance, HEARTBEAT_TTL).await {
            tracing::warn!(error = %e, "heartbeat not renewed");
        }
        if let Some(sessions) = c.sessions.get().and_then(Weak::upgrade) {
            let StartedHere { total, heavy } = sessions.started_here(c.report_from, REPORT_MOST);
            let _ = c.publish(Note::Load { sessions: total, heavy });
        }
    }
}

/// Appends stream events in order, then announces them (here and on the bus).
pub(super) async fn append(cluster: Weak<Cluster>, mut rx: mpsc::Receiver<Append>) {
    while let Some(a) = rx.recv().await {
        let Some(c) = cluster.upgrade() else { return };
        match c.store.events.append(&a.key, &a.frame, a.capacity).await {
            Ok(id) => {
                let _ = c.publish(Note::Event {
                    session: a.key.session.clone(),
                    stream: a.key.stream,
                    id,
                });
                // The local replica (if any) hears it too: the bus skips our own notes.
                c.local_event(&a.key.session, a.key.stream, id);
            }
            Err(e) => tracing::warn!(session = %a.key.session, error = %e, "stream event not stored: dropped"),
        }
    }
}

impl Cluster {
    /// Wakes the local replica's streams for an event appended here.
    fn local_event(&self, session: &str, stream: u64, id: u64) {
        if let Some(s) = self
            .sessions
            .get()
            .and_then(Weak::upgrade)
            .and_then(|st| st.replica(session))
        {
            s.log_news(LogNews::Appended { stream, id });
        }
    }
}
