//! DNS-rebinding protection of our streamable HTTP server, with the `Host` and `Origin`
//! headers a browser sends: a loopback server answers requests for loopback names and from
//! pages of its own origin, as the MCP conformance suite's `dns-rebinding-protection`
//! scenario checks, and refuses every other host and origin with `403`.

use std::time::Duration;

use pi_runtime::mcp::{HttpServing, McpServer};
use pi_runtime::tool;

use crate::mcp_support::initialize;

/// Echo a text.
#[tool]
async fn echo(text: String) -> String {
    text
}

/// Each request takes milliseconds; a hung one fails the test rather than stalling it.
const BOUND: Duration = Duration::from_secs(10);

/// The status of an `initialize` POSTed to `url` with these `Host` and `Origin` headers.
async fn status(url: &str, host: &str, origin: Option<&str>) -> u16 {
    let mut request = reqwest::Client::new()
        .post(url)
        .header("host", host)
        .header("accept", "application/json, text/event-stream")
        .header("mcp-protocol-version", "2025-06-18")
        .json(&initialize());
    if let Some(origin) = origin {
        request = request.header("origin", origin);
    }
    let response = tokio::time::timeout(BOUND, request.send())
        .await
        .expect("answered in time")
        .expect("an answer");
    response.status().as_u16()
}

#[tokio::test]
async fn a_loopback_server_accepts_loopback_hosts_and_origins_and_refuses_the_rest() {
    let server = McpServer::new((Echo,))
        .expect("tools register")
        .serve_http(
            "127.0.0.1:0".parse().expect("an address"),
            HttpServing::default(),
        )
        .await
        .expect("a loopback port");
    let url = server.url();
    let port = server.local_addr().port();
    let own = format!("127.0.0.1:{port}");
    let cases = [
        // What the conformance suite sends: the server's own host, and its origin.
        (own.clone(), Some(format!("http://{own}")), 200),
        (own.clone(), None, 200),
        (
            format!("localhost:{port}"),
            Some(format!("http://localhost:{port}")),
            200,
        ),
        (
            format!("[::1]:{port}"),
            Some(format!("http://[::1]:{port}")),
            200,
        ),
        // A page of another local app, and one served over TLS.
        (own.clone(), Some("http://localhost:3000".to_owned()), 200),
        (own.clone(), Some("https://127.0.0.1".to_owned()), 200),
        // DNS rebinding: a page of evil.example whose name now points at 127.0.0.1.
        (
            "evil.example.com".to_owned(),
            Some("http://evil.example.com".to_owned()),
            403,
        ),
        ("evil.example.com".to_owned(), None, 403),
        // A page of another site calling the loopback address.
        (own.clone(), Some("http://evil.example.com".to_owned()), 403),
        (
            own.clone(),
            Some(format!("http://localhost.evil.example:{port}")),
            403,
        ),
        (own.clone(), Some("null".to_owned()), 403),
        (own.clone(), Some(format!("ws://{own}")), 403),
    ];
    for (host, origin, expected) in cases {
        assert_eq!(
            status(&url, &host, origin.as_deref()).await,
            expected,
            "Host {host}, Origin {origin:?}"
        );
    }
    server.shutdown().await;
}

#[tokio::test]
async fn a_router_for_host_names_accepts_pages_of_those_hosts_only() {
    let router = McpServer::new((Echo,)).expect("tools register").router(
        "/mcp",
        HttpServing::default().with_allowed_hosts(["tools.example.com", "admin.example.com:8443"]),
    );
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0")
        .await
        .expect("a port");
    let url = format!("http://{}/mcp", listener.local_addr().expect("an address"));
    let task = tokio::spawn(async move {
        let _ = axum::serve(listener, router).await;
    });
    let cases = [
        ("tools.example.com", Some("https://tools.example.com"), 200),
        (
            "tools.example.com",
            Some("http://tools.example.com:8080"),
            200,
        ),
        ("tools.example.com", None, 200),
        (
            "admin.example.com:8443",
            Some("https://admin.example.com:8443"),
            200,
        ),
        (
            "admin.example.com:8443",
            Some("https://admin.example.com"),
            403,
        ),
        ("tools.example.com", Some("http://localhost:3000"), 403),
        ("tools.example.com", Some("https://evil.example.com"), 403),
        ("localhost", Some("http://localhost"), 403),
    ];
    for (host, origin, expected) in cases {
        assert_eq!(
            status(&url, host, origin).await,
            expected,
            "Host {host}, Origin {origin:?}"
        );
    }
    task.abort();
    let _ = task.await;
}
