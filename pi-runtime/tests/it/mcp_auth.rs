//! Our MCP server as an OAuth resource server, over real HTTP on loopback: bearer tokens on
//! every request (fixed ones, and JWTs checked against a JWKS served by a second server that
//! rotates its keys), the RFC 9728 challenge and metadata, per-tool scopes, sessions bound to
//! their subject, and the refusal to serve beyond loopback unprotected.
//!
//! The keys in `keys/` are P-256 keys made with openssl for these tests only.

use std::sync::{Arc, Mutex, PoisonError};
use std::time::{Duration, SystemTime, UNIX_EPOCH};

use axum::extract::State;
use jsonwebtoken::jwk::{Jwk, JwkSet};
use jsonwebtoken::{Algorithm, EncodingKey, Header};
use pi_runtime::mcp::auth::{
    Authentication, JwksSource, JwtVerifier, Principal, StaticTokens, TokenVerifier,
};
use pi_runtime::mcp::{HttpServing, McpClient, McpError, McpHttpServer, McpServer};
use pi_runtime::tool;
use serde_json::{Value, json};

use crate::mcp_support::{RawClient, call, initialize, message};

/// Add two numbers.
#[tool]
async fn add(a: f64, b: f64) -> String {
    (a + b).to_string()
}

/// Echo a text.
#[tool]
async fn echo(text: String) -> String {
    text
}

const MATH: &str = "0123456789abcdef-math";
const PLAIN: &str = "0123456789abcdef-plain";

fn static_tokens() -> StaticTokens {
    StaticTokens::new()
        .with_token(MATH, Principal::new("math-service").with_scopes(["math"]))
        .with_token(PLAIN, Principal::new("plain-service"))
}

async fn serve(auth: Authentication) -> McpHttpServer {
    let options =
        HttpServing::default().with_authentication(auth.with_required_scopes("add", ["math"]));
    McpServer::new((Add, Echo))
        .expect("tools register")
        .serve_http("127.0.0.1:0".parse().expect("an address"), options)
        .await
        .expect("a loopback port")
}

fn challenge(response: &reqwest::Response) -> String {
    response
        .headers()
        .get("www-authenticate")
        .and_then(|v| v.to_str().ok())
        .unwrap_or_default()
        .to_owned()
}

#[tokio::test]
async fn a_request_without_a_token_is_told_where_the_metadata_is() {
    let server = serve(
        Authentication::new(static_tokens()).with_authorization_server("https://auth.example.com"),
    )
    .await;
    let url = server.url();
    let addr = server.local_addr();
    let metadata_url = format!("http://{addr}/.well-known/oauth-protected-resource/mcp");

    let response = RawClient::new(&url).post(None, initialize()).await;
    assert_eq!(response.status(), 401);
    assert_eq!(
        challenge(&response),
        format!("Bearer resource_metadata=\"{metadata_url}\"")
    );

    let response = RawClient::new(&url)
        .with_token("0123456789abcdef-wrong")
        .post(None, initialize())
        .await;
    assert_eq!(response.status(), 401);
    assert_eq!(
        challenge(&response),
        format!(
            "Bearer error=\"invalid_token\", error_description=\"the token is not one this \
             server accepts\", resource_metadata=\"{metadata_url}\""
        )
    );

    let expected = json!({
        "resource": url,
        "bearer_methods_supported": ["header"],
        "authorization_servers": ["https://auth.example.com"],
        "scopes_supported": ["math"],
    });
    for path in [
        "/.well-known/oauth-protected-resource/mcp",
        "/.well-known/oauth-protected-resource",
    ] {
        let metadata: Value = reqwest::get(format!("http://{addr}{path}"))
            .await
            .expect("an answer")
            .json()
            .await
            .expect("JSON");
        assert_eq!(metadata, expected, "{path}");
    }
    server.shutdown().await;
}

#[tokio::test]
async fn a_token_sees_and_calls_only_the_tools_its_scopes_allow() {
    let server = serve(Authentication::new(static_tokens())).await;
    let url = server.url();

    let math = McpClient::builder("s")
        .bearer_token(MATH)
        .http(&url)
        .await
        .expect("connects");
    assert_eq!(math.tool_names(), ["mcp__s__add", "mcp__s__echo"]);
    let plain = McpClient::builder("s")
        .bearer_token(PLAIN)
        .http(&url)
        .await
        .expect("connects");
    assert_eq!(plain.tool_names(), ["mcp__s__echo"]);
    math.close().await;
    plain.close().await;

    // Calling a tool it cannot see: 403, with the scope it lacks.
    let plain = RawClient::new(&url).with_token(PLAIN);
    let plain_session = plain.open_session().await.expect("a session");
    let response = plain
        .post(
            Some(&plain_session),
            call(1, "add", json!({"a": 1, "b": 2})),
        )
        .await;
    assert_eq!(response.status(), 403);
    let metadata_url = format!(
        "http://{}/.well-known/oauth-protected-resource/mcp",
        server.local_addr()
    );
    assert_eq!(
        challenge(&response),
        format!(
            "Bearer error=\"insufficient_scope\", scope=\"math\", \
             resource_metadata=\"{metadata_url}\""
        )
    );
    assert_eq!(
        response.headers().get("content-type").map(|v| v.as_bytes()),
        Some(&b"application/json"[..])
    );
    assert_eq!(
        response.text().await.expect("a body"),
        r#"{"jsonrpc":"2.0","id":1,"error":{"code":-32001,"message":"The token may not call the tool \"add\": it needs the scopes math"}}"#
    );
    // The tool it may call answers.
    let response = plain
        .post(Some(&plain_session), call(1, "echo", json!({"text": "hi"})))
        .await;
    assert_eq!(response.status(), 200);
    assert_eq!(
        message(response).await["result"]["content"][0]["text"],
        "hi"
    );

    // Another token does not find the session, even with the scope the call needs.
    let response = RawClient::new(&url)
        .with_token(MATH)
        .post(Some(&plain_session), call(1, "echo", json!({"text": "hi"})))
        .await;
    assert_eq!(response.status(), 404);
    server.shutdown().await;
}

#[tokio::test]
async fn serving_beyond_loopback_needs_authentication_or_an_explicit_opt_out() {
    let server = McpServer::new((Echo,)).expect("tools register");
    let error = server
        .serve_http(
            "0.0.0.0:0".parse().expect("an address"),
            HttpServing::default(),
        )
        .await
        .expect_err("refused");
    assert!(matches!(error, McpError::Unprotected(_)), "{error:?}");
    assert_eq!(
        error.to_string(),
        "refusing to serve MCP on 0.0.0.0:0 without authentication: other machines can reach \
         it, and anyone who does could call every tool. Give the server a token verifier \
         (HttpServing::with_authentication), bind a loopback address, or opt out with \
         HttpServing::allow_unauthenticated"
    );
    let open = server
        .serve_http(
            "0.0.0.0:0".parse().expect("an address"),
            HttpServing::default().allow_unauthenticated(),
        )
        .await
        .expect("served, as asked");
    open.shutdown().await;
    let protected = server
        .serve_http(
            "0.0.0.0:0".parse().expect("an address"),
            HttpServing::default().with_authentication(Authentication::new(static_tokens())),
        )
        .await
        .expect("served with authentication");
    protected.shutdown().await;
}

#[tokio::test]
async fn a_browser_origin_is_refused_unless_allowed() {
    let server = McpServer::new((Echo,))
        .expect("tools register")
        .serve_http(
            "127.0.0.1:0".parse().expect("an address"),
            HttpServing::default().with_allowed_origins(["http://app.localhost:*"]),
        )
        .await
        .expect("a loopback port");
    let origin = |origin: &'static str| {
        reqwest::Client::new()
            .post(server.url())
            .header("accept", "application/json, text/event-stream")
            .header("origin", origin)
            .json(&initialize())
            .send()
    };
    assert_eq!(
        origin("http://evil.example")
            .await
            .expect("an answer")
            .status(),
        403
    );
    assert_eq!(
        origin("http://app.localhost:3000")
            .await
            .expect("an answer")
            .status(),
        200
    );
    server.shutdown().await;
}

/// An authorization server's key set, served over HTTP; `keys` can be swapped (a rotation).
struct Issuer {
    keys: Arc<Mutex<JwkSet>>,
    url: String,
    task: tokio::task::JoinHandle<()>,
}

impl Issuer {
    async fn start(keys: JwkSet) -> Issuer {
        let keys = Arc::new(Mutex::new(keys));
        let app = axum::Router::new()
            .route(
                "/jwks.json",
                axum::routing::get(|State(keys): State<Arc<Mutex<JwkSet>>>| async move {
                    let keys = keys.lock().unwrap_or_else(PoisonError::into_inner).clone();
                    axum::Json(keys)
                }),
            )
            .with_state(Arc::clone(&keys));
        let listener = tokio::net::TcpListener::bind("127.0.0.1:0")
            .await
            .expect("a port");
        let url = format!(
            "http://{}/jwks.json",
            listener.local_addr().expect("an address")
        );
        let task = tokio::spawn(async move {
            let _ = axum::serve(listener, app).await;
        });
        Issuer { keys, url, task }
    }

    fn rotate(&self, keys: JwkSet) {
        *self.keys.lock().unwrap_or_else(PoisonError::into_inner) = keys;
    }
}

impl Drop for Issuer {
    fn drop(&mut self) {
        self.task.abort();
    }
}

pub(crate) const ISS: &str = "https://auth.example.com";
pub(crate) const AUD: &str = "https://tools.example.com/mcp";

fn key(name: &str) -> EncodingKey {
    let pem = std::fs::read(format!(
        "{}/tests/it/keys/{name}.pem",
        env!("CARGO_MANIFEST_DIR")
    ))
    .expect("a test key");
    EncodingKey::from_ec_pem(&pem).expect("a P-256 key")
}

/// The public key of `name` as a JWK with the id `kid`.
pub(crate) fn jwk(name: &str, kid: &str) -> Jwk {
    let mut jwk = Jwk::from_encoding_key(&key(name), Algorithm::ES256).expect("a JWK");
    jwk.common.key_id = Some(kid.to_owned());
    jwk
}

fn now() -> u64 {
    SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .expect("after 1970")
        .as_secs()
}

/// A token signed by the key `name` under the id `kid`, with `claims` over valid defaults.
pub(crate) fn token(name: &str, kid: &str, claims: Value) -> String {
    let mut all = json!({"iss": ISS, "aud": AUD, "sub": "alice", "exp": now() + 600,
                         "iat": now(), "scope": "math read"});
    for (claim, value) in claims.as_object().expect("claims").clone() {
        if value.is_null() {
            all.as_object_mut().expect("an object").remove(&claim);
        } else {
            all[claim] = value;
        }
    }
    let mut header = Header::new(Algorithm::ES256);
    header.kid = Some(kid.to_owned());
    jsonwebtoken::encode(&header, &all, &key(name)).expect("signed")
}

#[tokio::test]
async fn jwts_are_checked_for_signature_issuer_audience_and_time() {
    let issuer = Issuer::start(JwkSet {
        keys: vec![jwk("issuer", "k1")],
    })
    .await;
    let verifier = JwtVerifier::new(JwksSource::Url(issuer.url.clone()), ISS, AUD)
        .with_key_refresh(Duration::from_secs(300), Duration::ZERO);

    let principal = verifier
        .verify(&token("issuer", "k1", json!({})))
        .await
        .expect("a valid token");
    assert_eq!(
        principal,
        Principal::new("alice").with_scopes(["math", "read"])
    );
    let scp = verifier
        .verify(&token(
            "issuer",
            "k1",
            json!({"scope": null, "scp": ["read"]}),
        ))
        .await
        .expect("a valid token");
    assert_eq!(scp, Principal::new("alice").with_scopes(["read"]));

    let refused = |claims: Value, signer: &'static str| {
        let token = token(signer, "k1", claims);
        let verifier = &verifier;
        async move {
            verifier
                .verify(&token)
                .await
                .expect_err("refused")
                .to_string()
        }
    };
    assert_eq!(
        refused(json!({"aud": "https://other.example.com/mcp"}), "issuer").await,
        "the token was issued for another audience"
    );
    assert_eq!(
        refused(json!({"iss": "https://evil.example.com"}), "issuer").await,
        "the token was issued by another issuer"
    );
    assert_eq!(
        refused(json!({"exp": now() - 120}), "issuer").await,
        "the token has expired"
    );
    assert_eq!(
        refused(json!({"nbf": now() + 600}), "issuer").await,
        "the token is not valid yet"
    );
    assert_eq!(
        refused(json!({}), "attacker").await,
        "the token's signature does not verify"
    );
    assert_eq!(
        refused(json!({"aud": null}), "issuer").await,
        "the token is malformed: it has no \"aud\" claim"
    );
    assert_eq!(
        verifier
            .verify("not.a.jwt")
            .await
            .expect_err("refused")
            .to_string(),
        "the token is malformed: it is not a JWT: Base64 error: Invalid last symbol 0x74 ('t') \
         at offset 2, decoded as 0b00101101."
    );
    assert_eq!(
        verifier
            .verify(&token("rotated", "k2", json!({})))
            .await
            .expect_err("refused")
            .to_string(),
        "the token is malformed: no key of the issuer has the id \"k2\""
    );

    // The issuer rotates to a new key: its tokens pass at once, without a restart, and
    // tokens of the retired key no longer do.
    issuer.rotate(JwkSet {
        keys: vec![jwk("rotated", "k2")],
    });
    let rotated = verifier
        .verify(&token("rotated", "k2", json!({})))
        .await
        .expect("the new key is fetched");
    assert_eq!(rotated.subject, "alice");
    let verifier = JwtVerifier::new(JwksSource::Url(issuer.url.clone()), ISS, AUD);
    assert!(
        verifier
            .verify(&token("issuer", "k1", json!({})))
            .await
            .is_err()
    );
}

#[tokio::test]
async fn the_server_takes_jwts_and_their_scopes() {
    let issuer = Issuer::start(JwkSet {
        keys: vec![jwk("issuer", "k1")],
    })
    .await;
    let verifier = JwtVerifier::new(JwksSource::Url(issuer.url.clone()), ISS, AUD);
    let server = serve(
        Authentication::new(verifier)
            .with_resource(AUD)
            .with_authorization_server(ISS),
    )
    .await;
    let url = server.url();

    let reader = token("issuer", "k1", json!({"scope": "read"}));
    let client = McpClient::builder("s")
        .bearer_token(&reader)
        .http(&url)
        .await
        .expect("connects");
    assert_eq!(client.tool_names(), ["mcp__s__echo"]);
    client.close().await;
    let mathematician = token("issuer", "k1", json!({}));
    let client = McpClient::builder("s")
        .bearer_token(&mathematician)
        .http(&url)
        .await
        .expect("connects");
    assert_eq!(client.tool_names(), ["mcp__s__add", "mcp__s__echo"]);
    client.close().await;

    // Tokens for another audience, or expired, do not connect.
    for bad in [
        token(
            "issuer",
            "k1",
            json!({"aud": "https://other.example.com/mcp"}),
        ),
        token("issuer", "k1", json!({"exp": now() - 120})),
    ] {
        let response = RawClient::new(&url)
            .with_token(&bad)
            .post(None, initialize())
            .await;
        assert_eq!(response.status(), 401);
        assert!(
            challenge(&response).contains(
                "resource_metadata=\"https://tools.example.com/.well-known/oauth-protected-resource/mcp\""
            ),
            "{}",
            challenge(&response)
        );
    }
    let error = McpClient::builder("s")
        .http(&url)
        .await
        .expect_err("no token, no connection");
    assert_eq!(
        error.to_string(),
        format!(
            "MCP connection failed: MCP server s at {url} did not initialize: Auth required: \
             authorization required: Bearer \
             resource_metadata=\"https://tools.example.com/.well-known/oauth-protected-resource/mcp\""
        )
    );
    server.shutdown().await;
}
