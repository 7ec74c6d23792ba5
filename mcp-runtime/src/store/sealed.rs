//! Task records sealed at rest (issue #43, item 5): [`SealedTaskStore`] wraps any
//! [`TaskStore`] and seals what a task carries for its client (its result or error, its status
//! message, its outstanding input requests, the call a worker runs again with its arguments, and
//! its last checkpoint) before the record reaches the store, so that
//! whoever reads the store (a Redis dump, a `MONITOR`, a backup) reads no user's task data.
//!
//! - **The AEAD.** XChaCha20-Poly1305 (RustCrypto's `chacha20poly1305`): a 256-bit key, a
//!   random 192-bit nonce per write (random nonces of that size never repeat in practice, so no
//!   counter has to be shared between instances). The associated data is the task id and the
//!   key id, so a sealed part moved to another record does not open.
//! - **Rotation.** Each sealed part names the key that sealed it ([`TaskKey::id`], derived from
//!   the key, so nobody has to name keys). Writes use the current key; the old keys given
//!   beside it still open what they sealed, and a record is sealed again with the current key at
//!   its next write.
//! - **What stays clear.** What the store indexes and the runtime decides on without a client:
//!   the id, owner, client, status, times, ttl and the instance running it.
//! - **A record that does not open** (a key that is gone, tampered bytes) is a corrupt record:
//!   it is logged, `get` answers a store error (the client sees a generic -32603), and lists
//!   leave it out. Its data is never returned, to its owner or anyone else.
//!
//! A record written before a key was configured stays readable as it is.

use std::sync::Arc;

use base64::Engine;
use base64::engine::general_purpose::STANDARD_NO_PAD;
use chacha20poly1305::aead::{Aead, KeyInit, Payload};
use chacha20poly1305::{Key, XChaCha20Poly1305, XNonce};
use serde::{Deserialize, Serialize};
use serde_json::{Map, Value};
use sha2::{Digest, Sha256};

use crate::store::error::{StoreError, StoreFuture};
use crate::store::tasks::{Sealed, TaskCall, TaskOutcome, TaskOwner, TaskRecord, TaskStore};

/// A key that seals task records: 32 bytes, named by an id derived from it.
#[derive(Clone)]
pub struct TaskKey {
    id: String,
    key: Key,
}

impl std::fmt::Debug for TaskKey {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("TaskKey").field("id", &self.id).finish_non_exhaustive()
    }
}

/// Why a [`TaskKey`] could not be made.
#[derive(Debug, thiserror::Error, PartialEq, Eq)]
#[non_exhaustive]
pub enum TaskKeyError {
    /// Not 64 hexadecimal digits.
    #[error("a task key is 64 hexadecimal digits (32 bytes)")]
    NotHex,
}

impl TaskKey {
    /// The key of these 32 bytes (draw them from a secure random source, and give every
    /// instance the same).
    pub fn new(secret: [u8; 32]) -> Self {
        let digest = Sha256::new()
            .chain_update(b"mcp task key id\0")
            .chain_update(secret)
            .finalize();
        let id = digest[..6].iter().map(|b| format!("{b:02x}")).collect();
        TaskKey {
            id,
            key: Key::from(secret),
        }
    }

    /// The key written as 64 hexadecimal digits (as `openssl rand -hex 32` prints one).
    pub fn from_hex(hex: &str) -> Result<Self, TaskKeyError> {
        let hex = hex.trim().as_bytes();
        if hex.len() != 64 {
            return Err(TaskKeyError::NotHex);
        }
        let mut secret = [0u8; 32];
        for (byte, pair) in secret.iter_mut().zip(hex.chunks_exact(2)) {
            let text = std::str::from_utf8(pair).map_err(|_| TaskKeyError::NotHex)?;
            *byte = u8::from_str_radix(text, 16).map_err(|_| TaskKeyError::NotHex)?;
        }
        Ok(TaskKey::new(secret))
    }

    /// The key's id, stored with what it seals (12 hexadecimal digits derived from the key).
    pub fn id(&self) -> &str {
        &self.id
    }
}

/// What a task carries for its client: sealed together.
#[derive(Debug, Default, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
struct Secrets {
    #[serde(default)]
    outcome: Option<TaskOutcome>,
    #[serde(default)]
    status_message: Option<String>,
    #[serde(default)]
    input_requests: Map<String, Value>,
    #[serde(default)]
    call: Option<TaskCall>,
    #[serde(default)]
    checkpoint: Option<Value>,
}

/// A [`TaskStore`] that seals what a task carries for its client before `inner` sees it (see
/// the module docs).
pub struct SealedTaskStore {
    inner: Arc<dyn TaskStore>,
    current: TaskKey,
    old: Vec<TaskKey>,
}

impl std::fmt::Debug for SealedTaskStore {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("SealedTaskStore")
            .field("current", &self.current)
            .field("old", &self.old)
            .finish_non_exhaustive()
    }
}

/// The associated data of task `task_id`'s part sealed with key `key`.
fn associated(task_id: &str, key: &str) -> Vec<u8> {
    [b"mcp task\0", task_id.as_bytes(), b"\0", key.as_bytes()].concat()
}

fn corrupt(task_id: &str, why: &str) -> StoreError {
    tracing::warn!(
        task = task_id,
        why,
        "a sealed task record does not open: treated as corrupt"
    );
    StoreError::Backend(format!("task record {task_id} does not open ({why})"))
}

impl SealedTaskStore {
    /// Seals with `current`; `old` keys only open what they sealed (a rotation).
    pub fn new(inner: Arc<dyn TaskStore>, current: TaskKey, old: Vec<TaskKey>) -> Self {
        SealedTaskStore { inner, current, old }
    }

    /// The record with its client's data sealed (unchanged when it carries none).
    fn seal(&self, mut record: TaskRecord) -> Result<TaskRecord, StoreError> {
        let secrets = Secrets {
            outcome: record.outcome.take(),
            status_message: record.status_message.take(),
            input_requests: std::mem::take(&mut record.input_requests),
            call: record.call.take(),
            checkpoint: record.checkpoint.take(),
        };
        record.sealed = None;
        if secrets.outcome.is_none()
            && secrets.status_message.is_none()
            && secrets.input_requests.is_empty()
            && secrets.call.is_none()
            && secrets.checkpoint.is_none()
        {
            return Ok(record);
        }
        let plain =
            serde_json::to_vec(&secrets).map_err(|e| StoreError::Backend(format!("a task does not encode: {e}")))?;
        let mut nonce = [0u8; 24];
        getrandom::fill(&mut nonce).map_err(|e| StoreError::Backend(format!("no random nonce: {e}")))?;
        let aad = associated(&record.task_id, self.current.id());
        let data = XChaCha20Poly1305::new(&self.current.key)
            .encrypt(XNonce::from_slice(&nonce), Payload { msg: &plain, aad: &aad })
            .map_err(|_| StoreError::Backend("a task record could not be sealed".into()))?;
        record.sealed = Some(Sealed {
            key: self.current.id().to_owned(),
            nonce: STANDARD_NO_PAD.encode(nonce),
            data: STANDARD_NO_PAD.encode(data),
        });
        Ok(record)
    }

    /// The record with its sealed part opened (as it is when it has none).
    fn open(&self, mut record: TaskRecord) -> Result<TaskRecord, StoreError> {
        let Some(sealed) = record.sealed.take() else {
            return Ok(record);
        };
        let id = record.task_id.as_str();
        let key = std::iter::once(&self.current)
            .chain(&self.old)
            .find(|k| k.id() == sealed.key)
            .ok_or_else(|| corrupt(id, "its key is not configured"))?;
        let nonce = STANDARD_NO_PAD.decode(&sealed.nonce).ok().filter(|n| n.len() == 24);
        let data = STANDARD_NO_PAD.decode(&sealed.data).ok();
        let (Some(nonce), Some(data)) = (nonce, data) else {
            return Err(corrupt(id, "not base64"));
        };
        let aad = associated(id, key.id());
        let plain = XChaCha20Poly1305::new(&key.key)
            .decrypt(XNonce::from_slice(&nonce), Payload { msg: &data, aad: &aad })
            .map_err(|_| corrupt(id, "its tag does not verify"))?;
        let secrets: Secrets = serde_json::from_slice(&plain).map_err(|_| corrupt(id, "not a task's data"))?;
        record.outcome = secrets.outcome;
        record.status_message = secrets.status_message;
        record.input_requests = secrets.input_requests;
        record.call = secrets.call;
        record.checkpoint = secrets.checkpoint;
        Ok(record)
    }

    /// The records that open (the others are logged and left out).
    fn open_all(&self, records: Vec<TaskRecord>) -> Vec<TaskRecord> {
        records.into_iter().filter_map(|r| self.open(r).ok()).collect()
    }
}

impl TaskStore for SealedTaskStore {
    fn get<'a>(&'a self, task_id: &'a str) -> StoreFuture<'a, Option<TaskRecord>> {
        Box::pin(async move { self.inner.get(task_id).await?.map(|r| self.open(r)).transpose() })
    }

    fn put(&self, record: TaskRecord) -> StoreFuture<'_, ()> {
        Box::pin(async move { self.inner.put(self.seal(record)?).await })
    }

    fn delete<'a>(&'a self, task_id: &'a str) -> StoreFuture<'a, ()> {
        self.inner.delete(task_id)
    }

    fn list<'a>(&'a self, owner: &'a TaskOwner) -> StoreFuture<'a, Vec<TaskRecord>> {
        Box::pin(async move { Ok(self.open_all(self.inner.list(owner).await?)) })
    }

    fn count(&self) -> StoreFuture<'_, usize> {
        self.inner.count()
    }

    fn count_for_client<'a>(&'a self, client: &'a str) -> StoreFuture<'a, usize> {
        self.inner.count_for_client(client)
    }

    fn list_for_client<'a>(&'a self, client: &'a str) -> StoreFuture<'a, Vec<TaskRecord>> {
        Box::pin(async move { Ok(self.open_all(self.inner.list_for_client(client).await?)) })
    }

    fn expired(&self, now_ms: u64) -> StoreFuture<'_, Vec<String>> {
        self.inner.expired(now_ms)
    }

    fn recover(&self) -> StoreFuture<'_, Vec<TaskRecord>> {
        Box::pin(async move { Ok(self.open_all(self.inner.recover().await?)) })
    }
}

#[cfg(test)]
mod tests {
    use mcp_protocol::RpcError;
    use mcp_protocol::model::TaskStatus;
    use serde_json::json;

    use super::*;
    use crate::store::tasks::InMemoryTaskStore;

    const SECRET: &str = "the quarterly numbers";

    fn key(byte: u8) -> TaskKey {
        TaskKey::new([byte; 32])
    }

    fn finished(id: &str) -> TaskRecord {
        let mut r = TaskRecord::new(id, TaskOwner::Principal("alice".into()), 1, Some(60_000), None);
        r.status = TaskStatus::Completed;
        r.status_message = Some(format!("summarised {SECRET}"));
        r.outcome = Some(TaskOutcome::Result(
            json!({"content": [{"type": "text", "text": SECRET}]}),
        ));
        r
    }

    #[tokio::test]
    async fn what_reaches_the_store_is_sealed_and_reads_back_whole() {
        let inner = Arc::new(InMemoryTaskStore::new());
        let sealed = SealedTaskStore::new(inner.clone(), key(1), Vec::new());
        let record = finished("t1");
        sealed.put(record.clone()).await.unwrap();
        let raw = inner.get("t1").await.unwrap().unwrap();
        let text = serde_json::to_string(&raw).unwrap();
        assert!(!text.contains("quarterly"), "{text}");
        assert_eq!(
            (raw.status, raw.outcome.is_none()),
            (TaskStatus::Completed, true),
            "the status stays clear"
        );
        assert_eq!(raw.sealed.as_ref().unwrap().key, key(1).id());
        assert_eq!(sealed.get("t1").await.unwrap(), Some(record.clone()));
        assert_eq!(sealed.list(&record.owner).await.unwrap(), vec![record]);
        // A record with nothing for its client is written as it is.
        sealed
            .put(TaskRecord::new("t2", TaskOwner::Principal("bob".into()), 1, None, None))
            .await
            .unwrap();
        assert!(inner.get("t2").await.unwrap().unwrap().sealed.is_none());
    }

    #[tokio::test]
    async fn keys_rotate_and_what_does_not_open_is_never_returned() {
        let inner = Arc::new(InMemoryTaskStore::new());
        SealedTaskStore::new(inner.clone(), key(1), Vec::new())
            .put(finished("old"))
            .await
            .unwrap();
        // Rotated: the old key opens its records; writes use the new key.
        let rotated = SealedTaskStore::new(inner.clone(), key(2), vec![key(1)]);
        assert_eq!(rotated.get("old").await.unwrap(), Some(finished("old")));
        rotated.put(finished("old")).await.unwrap();
        assert_eq!(
            inner.get("old").await.unwrap().unwrap().sealed.unwrap().key,
            key(2).id()
        );
        // Without the key: a store error for get, left out of lists.
        let forgot = SealedTaskStore::new(inner.clone(), key(3), Vec::new());
        assert!(forgot.get("old").await.is_err());
        assert!(
            forgot
                .list(&TaskOwner::Principal("alice".into()))
                .await
                .unwrap()
                .is_empty()
        );
        // A sealed part moved to another task's record does not open there.
        let mut moved = finished("victim");
        moved.sealed = inner.get("old").await.unwrap().unwrap().sealed;
        moved.outcome = None;
        moved.status_message = None;
        inner.put(moved).await.unwrap();
        assert!(rotated.get("victim").await.is_err());
        // Tampered bytes do not open.
        let mut tampered = inner.get("old").await.unwrap().unwrap();
        let sealed = tampered.sealed.as_mut().unwrap();
        sealed
            .data
            .replace_range(0..1, if sealed.data.starts_with('A') { "B" } else { "A" });
        inner.put(tampered).await.unwrap();
        assert!(rotated.get("old").await.is_err());
        // An error outcome is sealed like a result.
        let mut failed = finished("e");
        failed.outcome = Some(TaskOutcome::Error(RpcError::internal_with(SECRET)));
        rotated.put(failed.clone()).await.unwrap();
        assert!(
            !serde_json::to_string(&inner.get("e").await.unwrap())
                .unwrap()
                .contains("quarterly")
        );
        assert_eq!(rotated.get("e").await.unwrap(), Some(failed));
    }

    #[test]
    fn keys_are_read_from_hex_and_named_by_what_they_are() {
        let hex = "00".repeat(31) + "ff";
        let k = TaskKey::from_hex(&hex).unwrap();
        assert_eq!(k.id().len(), 12);
        assert_eq!(k.id(), TaskKey::from_hex(&hex.to_uppercase()).unwrap().id());
        assert_ne!(k.id(), key(0).id());
        assert_eq!(TaskKey::from_hex("abc").unwrap_err(), TaskKeyError::NotHex);
        assert_eq!(TaskKey::from_hex(&"zz".repeat(32)).unwrap_err(), TaskKeyError::NotHex);
        assert!(!format!("{k:?}").contains(&hex), "the secret is not in its Debug");
    }
}
