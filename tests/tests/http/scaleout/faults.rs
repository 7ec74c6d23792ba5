//! Faults: an instance dying mid-call (its streams end, its sessions go on on the other
//! instance, its tasks are failed as they are next read once its heartbeat lapses, saying its
//! instance stopped), and Redis going away
//! and coming back (503 "Store unavailable", never a false 404, then serving resumes), and a
//! Redis Cluster losing a primary until its replica takes over.

use std::time::{Duration, Instant};

use http::{Method, StatusCode};
use serde_json::{Value, json};

use super::redis_server::{RedisCluster, RedisServer};
use super::{Cluster, LEGACY, assert_ends, bounded_for, eventually, init, next_message, request, tool_call, within};

const STOPPED: &str = mcp_runtime::tasks::INSTANCE_STOPPED;
const URI: &str = "test://doc";

/// Polls `tasks/get` of session `sid` until the task is no longer `working` (`within`).
async fn until_ended(c: &Cluster, sid: &str, task: &str, within: Duration) -> Value {
    let deadline = tokio::time::Instant::now() + within;
    loop {
        let (resp, _) = c
            .send(c.legacy(sid, LEGACY, request(90, "tasks/get", json!({"taskId": task}))))
            .await;
        assert_eq!(resp.status, StatusCode::OK);
        let body = resp.json().await;
        let status = body["result"]["status"].as_str().unwrap_or_default().to_owned();
        if status != "working" {
            return body["result"].clone();
        }
        assert!(
            tokio::time::Instant::now() < deadline,
            "the task of the dead instance is still working after {within:?}: {body}"
        );
        tokio::time::sleep(Duration::from_millis(200)).await;
    }
}

/// Creates a 2025-11-25 task of `work` (tag `tag`) on instance `at` and waits until it runs;
/// returns its id.
async fn task_on(c: &Cluster, at: usize, sid: &str, tag: &str) -> String {
    let call = request(
        1,
        "tools/call",
        json!({"name": "work", "arguments": {"tag": tag}, "task": {}}),
    );
    let resp = c.send_to(at, c.legacy(sid, LEGACY, call)).await;
    let created = resp.json().await;
    let task = created["result"]["task"]["taskId"]
        .as_str()
        .expect("a task id")
        .to_owned();
    let i = c.instance(at);
    eventually("the task runs", || i.probe.saw(&format!("work:start:{tag}"))).await;
    task
}

/// Scenario 10: instance A dies with a call streaming and a GET stream on it. The client's
/// streams end; the session goes on on B (loaded from the store), its GET stream included.
async fn an_instance_dies(mut c: Cluster) {
    let sid = c.initialize_on(0, LEGACY).await;
    let mut body = tool_call(2, "hold", json!({"tag": "dies"}));
    body["params"]["_meta"] = json!({"progressToken": "dies"});
    let resp = c.send_to(0, c.legacy(&sid, LEGACY, body)).await;
    let mut call = resp.sse();
    let (_, progress) = next_message(&mut call, "the call's progress").await;
    assert_eq!(progress["method"], "notifications/progress", "{progress}");
    let (mut get, _) = c.open_get(0, &sid).await;

    c.proxy.set_down(0, true);
    c.a.kill().await;
    assert_ends(
        &mut call,
        Duration::from_secs(5),
        "the call stream of the dead instance",
    )
    .await;
    assert_ends(&mut get, Duration::from_secs(5), "the GET stream of the dead instance").await;

    for k in 0..3 {
        let (resp, at) = c
            .send(c.legacy(&sid, LEGACY, tool_call(10 + k, "echo", json!({"k": k}))))
            .await;
        assert_eq!(at, 1, "everything goes to B");
        assert_eq!(resp.status, StatusCode::OK);
        let body = resp.json().await;
        assert_eq!(
            body["result"]["content"][0]["text"],
            format!("echo: {}", json!({"k": k})),
            "{body}"
        );
    }
    let (resp, at) = c.send(c.get(&sid)).await;
    assert_eq!(
        (resp.status, at),
        (StatusCode::OK, 1),
        "the session's GET stream reopens on B"
    );
    let mut get = resp.sse();
    let priming = within("the priming event on B", get.next())
        .await
        .expect("a priming event");
    assert!(priming.data.is_empty(), "{priming:?}");
    c.b.registry.add_tool(crate::support::tool(
        "after_death",
        json!({"type": "object"}),
        super::tools::noop,
    ));
    let (_, e) = next_message(&mut get, "a change on B's stream").await;
    assert_eq!(e, super::tools_changed());
    assert!(c.proxy.counts()[0] > 0 && c.proxy.counts()[1] > 0);
}
both_stores!(an_instance_dies, 30);

/// Scenario 10, the tasks of the dead instance: a task running on A when it dies is failed by
/// B (which never created a task itself) when it is next read once A's heartbeat (6 s) lapsed,
/// with a message that says its instance stopped.
async fn a_dead_instances_task_is_failed(mut c: Cluster) {
    let sid = c.initialize_on(0, LEGACY).await;
    let task = task_on(&c, 0, &sid, "dies").await;
    c.proxy.set_down(0, true);
    c.a.kill().await;
    let failed = until_ended(&c, &sid, &task, Duration::from_secs(10)).await;
    assert_eq!(failed["status"], "failed", "{failed}");
    assert_eq!(failed["statusMessage"], STOPPED, "{failed}");
    let (resp, at) = c
        .send(c.legacy(&sid, LEGACY, request(20, "tasks/result", json!({"taskId": task}))))
        .await;
    assert_eq!(at, 1);
    let body = resp.json().await;
    assert_eq!(body["error"], json!({"code": -32603, "message": STOPPED}), "{body}");
}
both_stores!(a_dead_instances_task_is_failed, 30);

/// The same, when B created a task of its own before A died (its sweeper runs).
async fn a_dead_instances_task_is_failed_by_a_sweeping_instance(mut c: Cluster) {
    let sid = c.initialize_on(0, LEGACY).await;
    let task = task_on(&c, 0, &sid, "dies").await;
    task_on(&c, 1, &sid, "lives").await;
    c.proxy.set_down(0, true);
    c.a.kill().await;
    let failed = until_ended(&c, &sid, &task, Duration::from_secs(10)).await;
    assert_eq!(failed["status"], "failed", "{failed}");
    assert_eq!(failed["statusMessage"], STOPPED, "{failed}");
    let (resp, _) = c
        .send(c.legacy(&sid, LEGACY, request(20, "tasks/result", json!({"taskId": task}))))
        .await;
    let body = resp.json().await;
    assert_eq!(body["error"], json!({"code": -32603, "message": STOPPED}), "{body}");
}
both_stores!(a_dead_instances_task_is_failed_by_a_sweeping_instance, 30);

/// The answer while Redis is away: 503 with -32603 "Store unavailable" (naming `id`), quickly.
async fn assert_unavailable(c: &Cluster, req: crate::support::Req, id: Value, what: &str) -> usize {
    let start = Instant::now();
    let (resp, at) = c.send(req).await;
    unavailable_within(
        resp,
        start,
        Duration::from_secs(3),
        id,
        &format!("{what} on instance {at}"),
    )
    .await;
    at
}

/// Waits (at most `within`) until `initialize` succeeds twice after `what`, 503 meanwhile.
async fn new_sessions_start_again(c: &Cluster, what: &str, within: Duration) {
    let deadline = tokio::time::Instant::now() + within;
    let mut fresh = 0;
    while fresh < 2 {
        let (resp, at) = c.send(c.client.post(init(LEGACY))).await;
        match resp.status {
            StatusCode::OK => fresh += 1,
            StatusCode::SERVICE_UNAVAILABLE => {}
            other => panic!("initialize after {what} on {at}: {other}"),
        }
        assert!(tokio::time::Instant::now() < deadline, "initialize never works again");
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
}

/// Checks a 503 "Store unavailable" answer naming `id`, received within `bound` of `start`.
async fn unavailable_within(resp: crate::support::Resp, start: Instant, bound: Duration, id: Value, what: &str) {
    let took = start.elapsed();
    assert_eq!(resp.status, StatusCode::SERVICE_UNAVAILABLE, "{what}");
    assert_eq!(
        resp.json().await,
        json!({"jsonrpc": "2.0", "id": id, "error": {"code": -32603, "message": "Store unavailable"}}),
        "{what}"
    );
    assert!(took < bound, "{what} took {took:?}");
}

/// Scenario 11 (Redis only): Redis stops mid-run. `initialize` and requests naming a session
/// the instance does not hold are 503 "Store unavailable" (never 404), at once; what an
/// instance serves from its replicas goes on. When Redis is back (with its data), serving
/// resumes: new sessions, the old ones on either instance, the bus.
#[tokio::test]
async fn redis_goes_away_and_comes_back() {
    bounded_for(30, async {
        let server = RedisServer::persistent();
        let url = server.url();
        let mut c = Cluster::on_redis(url, Some(server)).await;
        let mut redis = c.redis.take().expect("the test's Redis");

        // S1: held by both instances, subscribed to URI. S2: held by A only.
        let s1 = c.initialize_on(0, LEGACY).await;
        let subscribe = request(1, "resources/subscribe", json!({"uri": URI}));
        assert_eq!(
            c.send_to(0, c.legacy(&s1, LEGACY, subscribe)).await.status,
            StatusCode::OK
        );
        let resp = c.send_to(0, c.client.post(init(LEGACY))).await;
        assert_eq!(resp.status, StatusCode::OK);
        let s2 = resp.header("mcp-session-id").expect("a session id").to_owned();
        assert!(c.b.replica(&s2).is_none(), "B never met S2");
        let (a, b) = (&c.a, &c.b);
        eventually("the subscription reached B", || {
            b.replica(&s1).is_some_and(|s| s.is_subscribed(URI))
        })
        .await;
        assert!(a.replica(&s1).is_some());

        let mut redis = tokio::task::spawn_blocking(move || {
            redis.stop();
            redis
        })
        .await
        .expect("stopping Redis");

        let mut seen = Vec::new();
        for _ in 0..2 {
            seen.push(assert_unavailable(&c, c.client.post(init(LEGACY)), json!(0), "initialize").await);
        }
        assert_ne!(seen[0], seen[1], "both instances");
        c.steer(1).await;
        let list = c.legacy(&s2, LEGACY, request(3, "tools/list", json!({})));
        assert_eq!(
            assert_unavailable(&c, list, json!(3), "a session B does not hold").await,
            1
        );
        let resp = c.send_to(0, c.legacy(&s2, LEGACY, request(4, "ping", json!({})))).await;
        assert_eq!(resp.status, StatusCode::OK, "A serves S2 from its replica");
        for at in [0, 1] {
            let call = c.legacy(&s1, LEGACY, tool_call(5, "echo", json!({})));
            let resp = c.send_to(at, call).await;
            assert_eq!(resp.status, StatusCode::OK, "instance {at} serves S1 from its replica");
        }
        for at in [1, 1] {
            let start = Instant::now();
            let get = c.send_to(at, c.get(&s2)).await;
            assert_eq!(get.status, StatusCode::SERVICE_UNAVAILABLE, "a GET stream of S2 on B");
            let del = c
                .send_to(at, c.client.req(Method::DELETE).header("mcp-session-id", &s2))
                .await;
            assert_eq!(del.status, StatusCode::SERVICE_UNAVAILABLE, "DELETE of S2 on B");
            assert!(start.elapsed() < Duration::from_secs(6), "{:?}", start.elapsed());
        }

        let redis = tokio::task::spawn_blocking(move || {
            redis.restart();
            redis
        })
        .await
        .expect("restarting Redis");

        // Serving resumes: a new session on each instance (the first tries may still fail).
        new_sessions_start_again(&c, "the restart", Duration::from_secs(10)).await;
        // The old sessions, on both instances (S2 loaded by B from the restarted Redis).
        for at in [0, 1] {
            for sid in [&s1, &s2] {
                let resp = c
                    .send_to(at, c.legacy(sid, LEGACY, request(6, "ping", json!({}))))
                    .await;
                assert_eq!(resp.status, StatusCode::OK, "an existing session on instance {at}");
            }
        }
        // The bus is back: an update raised on B reaches S1's GET stream on A.
        let (mut sse, _) = c.open_get(0, &s1).await;
        let heard = tokio::time::timeout(Duration::from_secs(8), async {
            loop {
                b.registry.notify_resource_updated(URI);
                if let Some(e) = sse.next_within(Duration::from_millis(300)).await
                    && !e.data.is_empty()
                    && e.json()["method"] == "notifications/resources/updated"
                {
                    return;
                }
            }
        })
        .await;
        assert!(heard.is_ok(), "the bus came back: B's update reaches A's stream");
        c.assert_both_used();
        drop(redis);
    })
    .await;
}

/// A session both instances hold (A made it, B loaded it), whose record is then deleted behind
/// their backs, as a flush or a restart without persistence would.
async fn held_by_both_then_forgotten(c: &Cluster) -> String {
    let sid = c.initialize_on(0, LEGACY).await;
    for at in [0, 1] {
        let resp = c
            .send_to(at, c.legacy(&sid, LEGACY, request(1, "ping", json!({}))))
            .await;
        assert_eq!(resp.status, StatusCode::OK, "instance {at} serves the session");
    }
    assert!(
        c.store
            .sessions
            .delete(&sid)
            .await
            .expect("the store answers")
            .is_some()
    );
    sid
}

/// What the store forgets is forgotten by every instance: a session record deleted behind the
/// instances' backs (as a flush or a restart without persistence would) is answered 404 by
/// both, the one that created it included, within the check interval; nothing serves the copy.
async fn a_session_the_store_lost_is_gone_everywhere(c: Cluster) {
    let sid = held_by_both_then_forgotten(&c).await;
    // Past the check interval (2 s by default), each instance asks the store again.
    tokio::time::sleep(Duration::from_millis(2_100)).await;
    for at in [0, 1] {
        let resp = c
            .send_to(at, c.legacy(&sid, LEGACY, request(2, "ping", json!({}))))
            .await;
        assert_eq!(resp.status, StatusCode::NOT_FOUND, "instance {at} forgot the session");
    }
    assert!(c.instance(0).replica(&sid).is_none() && c.instance(1).replica(&sid).is_none());
}
both_stores!(a_session_the_store_lost_is_gone_everywhere, 30);

/// DELETE ends a session everywhere even when the store has already forgotten it: the other
/// instance drops its copy at once, not at its next check of the record.
async fn a_delete_after_the_store_forgot_ends_every_copy(c: Cluster) {
    let sid = held_by_both_then_forgotten(&c).await;
    let del = c
        .send_to(0, c.client.req(Method::DELETE).header("mcp-session-id", &sid))
        .await;
    assert_eq!(del.status, StatusCode::NOT_FOUND, "the store has no such session");
    // Well inside the check interval (2 s): only the bus can have told B.
    eventually("B drops its copy", || c.instance(1).replica(&sid).is_none()).await;
    let resp = c
        .send_to(1, c.legacy(&sid, LEGACY, request(2, "ping", json!({}))))
        .await;
    assert_eq!(resp.status, StatusCode::NOT_FOUND, "B forgot the session");
    assert!(c.instance(0).replica(&sid).is_none());
}
both_stores!(a_delete_after_the_store_forgot_ends_every_copy);

/// A 503 "Store unavailable" (naming `id`) within 5 s: the store gives up within its 3 s reply
/// bound while a cluster has no primary for a slot.
async fn assert_unavailable_soon(c: &Cluster, at: usize, req: crate::support::Req, id: Value, what: &str) {
    let start = Instant::now();
    let resp = c.send_to(at, req).await;
    unavailable_within(
        resp,
        start,
        Duration::from_secs(5),
        id,
        &format!("{what} on instance {at}"),
    )
    .await;
}

/// Scenario 12 (Redis Cluster only): the primary serving a session's slot dies mid-run. Its
/// replica is held back from taking over (so that the outage can be seen), then released to the
/// cluster's own failover. Once the other nodes see the primary failed (the cluster refuses
/// every command while a slot is unserved), `initialize` and requests naming the session on the
/// instance that does not hold it are 503 "Store unavailable", quickly; once the
/// replica is primary, the session (its slot moved) works on both instances, and new sessions
/// start.
#[tokio::test]
async fn a_redis_cluster_primary_dies() {
    bounded_for(90, async {
        let cluster = tokio::task::spawn_blocking(RedisCluster::start)
            .await
            .expect("starting a Redis Cluster");
        let mut c = Cluster::on_redis_cluster(cluster).await;
        let (mut cluster, prefix) = c.redis_cluster.take().expect("the test's cluster");

        // A session only A holds (no `notifications/initialized`, which would go to B).
        let resp = c.send_to(0, c.client.post(init(LEGACY))).await;
        assert_eq!(resp.status, StatusCode::OK);
        let sid = resp.header("mcp-session-id").expect("a session id").to_owned();
        assert!(c.b.replica(&sid).is_none(), "B never met the session");
        let victim = cluster
            .primary_of(&format!("{prefix}:{{{sid}}}:session"))
            .expect("the session's primary");
        let replica = cluster.replica_of(victim).expect("its replica");
        let hold = move |cluster: &RedisCluster, on: &str| {
            cluster
                .cli(replica, &["CONFIG", "SET", "cluster-replica-no-failover", on])
                .expect("CONFIG SET")
        };
        let mut cluster = tokio::task::spawn_blocking(move || {
            cluster
                .wait_replicated(victim, Duration::from_secs(10))
                .expect("replicated");
            hold(&cluster, "yes");
            cluster.kill(victim);
            // The other nodes see it failed: with a slot unserved, they refuse every command
            // (`cluster-require-full-coverage`, on by default).
            let deadline = Instant::now() + Duration::from_secs(10);
            while !cluster
                .cli(replica, &["CLUSTER", "INFO"])
                .is_ok_and(|info| info.contains("cluster_state:fail"))
            {
                assert!(Instant::now() < deadline, "the cluster never saw the primary fail");
                std::thread::sleep(Duration::from_millis(50));
            }
            cluster
        })
        .await
        .expect("killing a primary");

        let resp = c
            .send_to(0, c.legacy(&sid, LEGACY, request(1, "ping", json!({}))))
            .await;
        assert_eq!(resp.status, StatusCode::OK, "A serves the session from its replica");
        for at in [0, 1] {
            assert_unavailable_soon(&c, at, c.client.post(init(LEGACY)), json!(0), "initialize").await;
        }
        let list = c.legacy(&sid, LEGACY, request(3, "tools/list", json!({})));
        assert_unavailable_soon(&c, 1, list, json!(3), "a session B does not hold").await;

        cluster = tokio::task::spawn_blocking(move || {
            hold(&cluster, "no");
            cluster
                .wait_ok(Duration::from_secs(30))
                .expect("the cluster is ok again");
            cluster
        })
        .await
        .expect("the failover");
        assert_ne!(cluster.primary_of(&format!("{prefix}:{{{sid}}}:session")), Ok(victim));

        // Serving resumes (the first tries may still fail while the instances learn the slots).
        new_sessions_start_again(&c, "the failover", Duration::from_secs(15)).await;
        for at in [0, 1] {
            let resp = c
                .send_to(at, c.legacy(&sid, LEGACY, request(6, "ping", json!({}))))
                .await;
            assert_eq!(resp.status, StatusCode::OK, "the moved session on instance {at}");
        }
        assert!(
            c.b.replica(&sid).is_some(),
            "B loaded the session from the promoted replica"
        );
        c.assert_both_used();
        drop(c);
        drop(cluster);
    })
    .await;
}
