//! Task records sealed at rest (issue #43, item 5), seen from outside: `everything --redis URL
//! --task-key HEX` runs a 2025-11-25 task whose result names a marker, and a resumable one whose
//! arguments carry another (kept with its call, beside its checkpoints); a `MONITOR` on the
//! Redis sees every command the instance sends, and neither marker nor a checkpoint is in any of
//! them, while the client reads its results whole.

use std::io::{Read, Write};
use std::net::TcpStream;
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::Duration;

use mcp_store_redis::testing::{TestRedis, unique_prefix};
use serde_json::{Value, json};

use crate::support::{Fixture, Legacy, bounded};

const KEY: &str = "5f1c0de5a11c0ffee0ddba11defaced0b0bca7c0de5eed5a1ad5c0ffee15900d";
const MARKER: &str = "quarterly-numbers-7f3a";
/// In the arguments of a resumable task: kept with its call (for another worker to run it
/// again), sealed.
const ARGUMENT: &str = "payroll-export-29c1";

/// A `MONITOR` connection read on a thread until stopped: everything Redis executed meanwhile.
struct Monitor {
    stop: Arc<AtomicBool>,
    reader: std::thread::JoinHandle<String>,
}

impl Monitor {
    fn start(url: &str) -> Monitor {
        let address = url.trim_start_matches("redis://").trim_end_matches('/');
        let mut tcp = TcpStream::connect(address).expect("connect to Redis");
        tcp.write_all(b"MONITOR\r\n").expect("MONITOR");
        tcp.set_read_timeout(Some(Duration::from_millis(100))).expect("timeout");
        let stop = Arc::new(AtomicBool::new(false));
        let flag = stop.clone();
        let reader = std::thread::spawn(move || {
            let (mut seen, mut buf) = (Vec::new(), [0u8; 8192]);
            while !flag.load(Ordering::Relaxed) {
                match tcp.read(&mut buf) {
                    Ok(0) => break,
                    Ok(n) => seen.extend_from_slice(&buf[..n]),
                    Err(_) => {}
                }
            }
            String::from_utf8_lossy(&seen).into_owned()
        });
        Monitor { stop, reader }
    }

    fn stop(self) -> String {
        self.stop.store(true, Ordering::Relaxed);
        self.reader.join().expect("monitor thread")
    }
}

#[tokio::test]
async fn no_task_result_reaches_redis_in_clear() {
    bounded(60, async {
        let redis = TestRedis::new();
        let prefix = unique_prefix("tasks-sealed");
        let f = Fixture::start_with(&["--redis", redis.url(), "--redis-prefix", &prefix, "--task-key", KEY]).await;
        let monitor = Monitor::start(redis.url());
        let session = Legacy::open(&f).await;
        let params = json!({"name": "slow_compute", "arguments": {"seconds": 0, "label": MARKER}, "task": {}});
        let created = session.call(&f, 1, "tools/call", params).await;
        let task = created["result"]["task"]["taskId"].as_str().expect("a task").to_owned();
        let mut status = Value::Null;
        for n in 0..100 {
            status = session.call(&f, 10 + n, "tasks/get", json!({"taskId": task})).await;
            if status["result"]["status"] == "completed" {
                break;
            }
            tokio::time::sleep(Duration::from_millis(50)).await;
        }
        assert_eq!(status["result"]["status"], "completed", "{status}");
        // A resumable task keeps its call (its arguments) and checkpoints in the store.
        let params = json!({"name": "test_resumable_count", "arguments": {"steps": 3, "step_ms": 20, "note": ARGUMENT}, "task": {}});
        let resumable = session.call(&f, 300, "tools/call", params).await;
        let resumable = resumable["result"]["task"]["taskId"].as_str().expect("a task").to_owned();
        for n in 0..100 {
            let got = session.call(&f, 310 + n, "tasks/get", json!({"taskId": resumable})).await;
            if got["result"]["status"] == "completed" {
                break;
            }
            tokio::time::sleep(Duration::from_millis(50)).await;
        }
        let counted = session.call(&f, 400, "tasks/result", json!({"taskId": resumable})).await;
        assert!(counted.to_string().contains("counted 3 steps"), "{counted}");
        let result = session.call(&f, 200, "tasks/result", json!({"taskId": task})).await;
        assert!(
            result.to_string().contains(MARKER),
            "the client reads its result: {result}"
        );
        tokio::time::sleep(Duration::from_millis(200)).await;
        let seen = monitor.stop();
        assert!(seen.contains(&task), "the monitor saw the task's writes");
        // MONITOR quotes each argument, escaping the quotes inside.
        assert!(seen.contains(r#"\"sealed\":{"#), "its record was sealed");
        assert!(!seen.contains(MARKER), "the result never reached Redis in clear");
        assert!(seen.contains(&resumable), "the monitor saw the resumable task's writes");
        assert!(!seen.contains(ARGUMENT), "its arguments never reached Redis in clear");
        assert!(!seen.contains(r#"\"checkpoint\":"#), "nor its checkpoints");
    })
    .await;
}
