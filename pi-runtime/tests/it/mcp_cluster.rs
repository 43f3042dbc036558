//! Three instances of one server, each knowing the others, over real HTTP on loopback: a
//! session opened on one is served by it whichever instance a request reaches (calls,
//! progress, cancellation), and when it stops, its sessions answer 404 and a call it was
//! running through another instance gets an error instead of hanging.

use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::{Duration, Instant};

use pi_runtime::mcp::{Cluster, HttpServing, McpHttpServer, McpServer};
use pi_runtime::{State, ToolContext, ToolResult, tool};
use serde_json::{Value, json};

use crate::mcp_support::{RawClient, call, messages_until_answer};

/// Reports progress, then waits until cancelled and says so.
#[tool]
async fn wait(State(cancelled): State<Arc<AtomicBool>>, ctx: ToolContext) -> String {
    ctx.update(ToolResult::text("waiting"));
    ctx.signal().cancelled().await;
    cancelled.store(true, Ordering::SeqCst);
    "cancelled".to_owned()
}

/// Echo a text.
#[tool]
async fn echo(text: String) -> String {
    text
}

const NAMES: [&str; 3] = ["a", "b", "c"];

/// Three instances on loopback; each one's `cancelled` flag.
async fn cluster() -> (Vec<McpHttpServer>, Vec<Arc<AtomicBool>>) {
    // Ports first, so each instance can be told where the others are.
    let mut ports = Vec::new();
    for _ in NAMES {
        let listener = std::net::TcpListener::bind("127.0.0.1:0").expect("a port");
        ports.push(listener.local_addr().expect("an address").port());
    }
    let mut servers = Vec::new();
    let mut flags = Vec::new();
    for (i, name) in NAMES.iter().enumerate() {
        let mut cluster = Cluster::new(*name).expect("a name");
        for (j, peer) in NAMES.iter().enumerate() {
            if i != j {
                let url = format!("http://127.0.0.1:{}/mcp", ports[j]);
                cluster = cluster.with_peer(*peer, url).expect("a peer");
            }
        }
        let cancelled = Arc::new(AtomicBool::new(false));
        let server =
            McpServer::new((Wait::new(Arc::clone(&cancelled)), Echo)).expect("tools register");
        let addr = format!("127.0.0.1:{}", ports[i])
            .parse()
            .expect("an address");
        let options = HttpServing::default().with_cluster(cluster);
        servers.push(
            server
                .serve_http(addr, options)
                .await
                .expect("the port is free"),
        );
        flags.push(cancelled);
    }
    (servers, flags)
}

/// A `tools/call` that asks for progress (its token is its id).
fn call_with_progress(id: u32, name: &str, arguments: Value) -> Value {
    let mut message = call(id, name, arguments);
    message["params"]["_meta"] = json!({"progressToken": id});
    message
}

#[tokio::test]
async fn every_instance_serves_a_session_on_the_instance_that_holds_it() {
    let (servers, flags) = cluster().await;
    let urls: Vec<String> = servers.iter().map(McpHttpServer::url).collect();
    let instances: Vec<RawClient> = urls.iter().map(RawClient::new).collect();
    let session = instances[0].open_session().await.expect("a session");
    assert!(session.starts_with("a."), "{session}");

    // A call through each instance.
    for (i, (url, instance)) in urls.iter().zip(&instances).enumerate() {
        let id = u32::try_from(i).expect("small") + 1;
        let echo = call_with_progress(id, "echo", json!({"text": url}));
        let mut response = instance.post(Some(&session), echo).await;
        assert_eq!(response.status(), 200, "through {url}");
        let messages = messages_until_answer(&mut response, id).await;
        let answer = messages.last().expect("an answer");
        assert_eq!(answer["result"]["content"][0]["text"], url.as_str());
    }

    // A call through b, cancelled through c: the tool on a sees it, and b's stream carries
    // the progress and then the answer.
    let mut waiting = instances[1]
        .post(Some(&session), call_with_progress(7, "wait", json!({})))
        .await;
    assert_eq!(waiting.status(), 200);
    let mut buffer = String::new();
    while !buffer.contains("notifications/progress") {
        let chunk = tokio::time::timeout(Duration::from_secs(10), waiting.chunk())
            .await
            .expect("progress arrives")
            .expect("readable")
            .expect("not ended");
        buffer.push_str(&String::from_utf8_lossy(&chunk));
    }
    assert!(buffer.contains("\"message\":\"waiting\""), "{buffer}");
    let cancel = json!({"jsonrpc": "2.0", "method": "notifications/cancelled",
                        "params": {"requestId": 7, "reason": "enough"}});
    assert_eq!(
        instances[2].post(Some(&session), cancel).await.status(),
        202
    );
    let start = Instant::now();
    while !flags[0].load(Ordering::SeqCst) {
        assert!(
            start.elapsed() < Duration::from_secs(10),
            "the call was not cancelled"
        );
        tokio::time::sleep(Duration::from_millis(10)).await;
    }
    assert!(!flags[1].load(Ordering::SeqCst) && !flags[2].load(Ordering::SeqCst));

    // Another instance's name, or a forged one, finds nothing.
    let (_, id) = session.split_once('.').expect("named");
    for forged in [format!("b.{id}"), format!("x.{id}"), id.to_owned()] {
        let echo = call_with_progress(9, "echo", json!({"text": "x"}));
        let response = instances[0].post(Some(&forged), echo).await;
        assert_eq!(response.status(), 404, "{forged}");
    }
    for server in servers {
        server.shutdown().await;
    }
}

#[tokio::test]
async fn when_an_instance_stops_its_calls_fail_and_its_sessions_are_gone() {
    let (mut servers, _flags) = cluster().await;
    let instances: Vec<RawClient> = servers.iter().map(|s| RawClient::new(s.url())).collect();
    let session = instances[0].open_session().await.expect("a session");
    // A call running on a, through b.
    let mut waiting = instances[1]
        .post(Some(&session), call_with_progress(3, "wait", json!({})))
        .await;
    assert_eq!(waiting.status(), 200);
    let mut seen = String::new();
    while !seen.contains("notifications/progress") {
        let chunk = waiting.chunk().await.expect("readable").expect("not ended");
        seen.push_str(&String::from_utf8_lossy(&chunk));
    }
    let started = Instant::now();
    servers.remove(0).shutdown().await;
    let messages = messages_until_answer(&mut waiting, 3).await;
    let took = started.elapsed();
    assert_eq!(
        messages.last(),
        Some(
            &json!({"jsonrpc": "2.0", "id": 3, "error": {"code": -32603, "message":
            "The server instance running this request stopped before it answered"}})
        )
    );
    assert!(took < Duration::from_secs(5), "the error took {took:?}");
    // Its sessions are gone; the other instances serve new ones.
    let echo = call_with_progress(4, "echo", json!({"text": "x"}));
    let response = instances[2].post(Some(&session), echo).await;
    assert_eq!(response.status(), 404);
    let fresh = instances[2].open_session().await.expect("a session");
    let echo = call_with_progress(5, "echo", json!({"text": "x"}));
    let mut response = instances[1].post(Some(&fresh), echo).await;
    let messages = messages_until_answer(&mut response, 5).await;
    assert_eq!(
        messages.last().expect("an answer")["result"]["content"][0]["text"],
        "x"
    );
    for server in servers {
        server.shutdown().await;
    }
}
