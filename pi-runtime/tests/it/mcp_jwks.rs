//! The JWT verifier while its key set misbehaves, against a JWKS served on loopback that can
//! be made slow, hang or fail: tokens whose key is known never wait for a fetch, one fetch at
//! a time serves every request that needs it, fetches are rate-limited, and a key set that
//! cannot be fetched answers `503` at once rather than `401`.

use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Mutex, PoisonError};
use std::time::{Duration, Instant};

use axum::extract::State;
use axum::http::StatusCode;
use axum::response::{IntoResponse, Response};
use jsonwebtoken::jwk::JwkSet;
use pi_runtime::mcp::auth::{Authentication, JwksSource, JwtVerifier, TokenVerifier};
use pi_runtime::mcp::{HttpServing, McpServer};
use pi_runtime::tool;
use serde_json::{Value, json};

use crate::mcp_auth::{AUD, ISS, jwk, token};
use crate::mcp_support::{RawClient, initialize};

/// Echo a text.
#[tool]
async fn echo(text: String) -> String {
    text
}

/// How the key set answers its next fetches.
#[derive(Debug, Clone, Copy)]
enum Mood {
    /// At once.
    Prompt,
    /// After this long.
    Slow(Duration),
    /// Never.
    Hanging,
    /// With `500`.
    Failing,
}

struct Jwks {
    keys: JwkSet,
    mood: Mood,
}

/// An authorization server's key set on loopback that counts its fetches.
struct KeySet {
    state: Arc<Mutex<Jwks>>,
    fetches: Arc<AtomicUsize>,
    url: String,
    task: tokio::task::JoinHandle<()>,
}

impl KeySet {
    async fn start() -> KeySet {
        let state = Arc::new(Mutex::new(Jwks {
            keys: JwkSet {
                keys: vec![jwk("issuer", "k1")],
            },
            mood: Mood::Prompt,
        }));
        let fetches = Arc::new(AtomicUsize::new(0));
        let app = axum::Router::new()
            .route("/jwks.json", axum::routing::get(serve_keys))
            .with_state((Arc::clone(&state), Arc::clone(&fetches)));
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
        KeySet {
            state,
            fetches,
            url,
            task,
        }
    }

    fn set_mood(&self, mood: Mood) {
        self.state
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .mood = mood;
    }

    fn rotate(&self, keys: JwkSet) {
        self.state
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .keys = keys;
    }

    fn fetches(&self) -> usize {
        self.fetches.load(Ordering::SeqCst)
    }

    /// A verifier of this key set: `max_age` and `min_interval` as `with_key_refresh` takes
    /// them.
    fn verifier(&self, max_age: Duration, min_interval: Duration) -> JwtVerifier {
        JwtVerifier::new(JwksSource::Url(self.url.clone()), ISS, AUD)
            .with_key_refresh(max_age, min_interval)
    }
}

impl Drop for KeySet {
    fn drop(&mut self) {
        self.task.abort();
    }
}

type Shared = (Arc<Mutex<Jwks>>, Arc<AtomicUsize>);

async fn serve_keys(State((state, fetches)): State<Shared>) -> Response {
    fetches.fetch_add(1, Ordering::SeqCst);
    let (keys, mood) = {
        let jwks = state.lock().unwrap_or_else(PoisonError::into_inner);
        (jwks.keys.clone(), jwks.mood)
    };
    match mood {
        Mood::Prompt => {}
        Mood::Slow(delay) => tokio::time::sleep(delay).await,
        Mood::Hanging => std::future::pending::<()>().await,
        Mood::Failing => return StatusCode::INTERNAL_SERVER_ERROR.into_response(),
    }
    axum::Json(keys).into_response()
}

/// Verifies `token` and says how long it took.
async fn timed(verifier: &JwtVerifier, token: &str) -> (bool, Duration) {
    let started = Instant::now();
    let verified = verifier.verify(token).await.is_ok();
    (verified, started.elapsed())
}

/// While the key set hangs, or takes 20 seconds, and a token with a key id the set lacks
/// arrives every 50 ms, tokens of a known key are verified at once: the slowest of 20 takes
/// milliseconds (it waited for the fetch, 20 s or forever, before the fix). Also while the
/// known keys are stale and every request would refresh them.
#[tokio::test]
async fn valid_tokens_do_not_wait_while_the_key_set_hangs_or_is_slow_and_bogus_kids_arrive() {
    const BOUND: Duration = Duration::from_secs(2);
    let keys = KeySet::start().await;
    let valid = token("issuer", "k1", json!({}));
    let bogus = token("attacker", "bogus", json!({}));
    for (mood, max_age) in [
        (Mood::Hanging, Duration::from_secs(300)),
        (
            Mood::Slow(Duration::from_secs(20)),
            Duration::from_secs(300),
        ),
        // The known keys are stale from the start: each request would refresh them.
        (Mood::Hanging, Duration::ZERO),
    ] {
        keys.set_mood(Mood::Prompt);
        let verifier = Arc::new(keys.verifier(max_age, Duration::ZERO));
        assert!(timed(&verifier, &valid).await.0, "the first fetch");
        keys.set_mood(mood);

        let attack = tokio::spawn({
            let verifier = Arc::clone(&verifier);
            let bogus = bogus.clone();
            async move {
                let mut waiting = tokio::task::JoinSet::new();
                loop {
                    let verifier = Arc::clone(&verifier);
                    let bogus = bogus.clone();
                    waiting.spawn(async move { verifier.verify(&bogus).await });
                    tokio::time::sleep(Duration::from_millis(50)).await;
                }
            }
        });
        let mut slowest = Duration::ZERO;
        for _ in 0..20 {
            let (verified, took) = timed(&verifier, &valid).await;
            assert!(verified, "{mood:?}");
            assert!(
                took < BOUND,
                "{mood:?}, max age {max_age:?}: a valid token waited {took:?}"
            );
            slowest = slowest.max(took);
            tokio::time::sleep(Duration::from_millis(25)).await;
        }
        attack.abort();
        let _ = attack.await;
        eprintln!("{mood:?}, max age {max_age:?}: the slowest valid token took {slowest:?}");
    }
}

/// Twenty requests at once naming key ids the set lacks, while the key set takes half a
/// second: ten name the key the issuer has just rotated to, ten a bogus one. One fetch serves
/// them all, in about its half second (before the fix, with no least interval between
/// fetches, each bogus one made its own, one after another: eleven fetches, 5.5 s).
#[tokio::test]
async fn concurrent_requests_for_unknown_kids_share_one_fetch() {
    let keys = KeySet::start().await;
    let verifier = Arc::new(keys.verifier(Duration::from_secs(300), Duration::ZERO));
    assert!(timed(&verifier, &token("issuer", "k1", json!({}))).await.0);
    assert_eq!(keys.fetches(), 1);

    keys.rotate(JwkSet {
        keys: vec![jwk("issuer", "k1"), jwk("rotated", "k2")],
    });
    keys.set_mood(Mood::Slow(Duration::from_millis(500)));
    let rotated = token("rotated", "k2", json!({}));
    let bogus = token("attacker", "bogus", json!({}));
    let started = Instant::now();
    let mut requests = tokio::task::JoinSet::new();
    for n in 0..20 {
        let verifier = Arc::clone(&verifier);
        let token = if n % 2 == 0 { &rotated } else { &bogus }.clone();
        requests.spawn(async move {
            (
                n,
                verifier
                    .verify(&token)
                    .await
                    .map(|p| p.subject)
                    .map_err(|e| e.to_string()),
            )
        });
    }
    let mut answers: Vec<_> = requests.join_all().await;
    let took = started.elapsed();
    answers.sort_by_key(|(n, _)| *n);
    let expected: Vec<_> = (0..20)
        .map(|n| {
            let answer = if n % 2 == 0 {
                Ok("alice".to_owned())
            } else {
                Err("the token is malformed: no key of the issuer has the id \"bogus\"".to_owned())
            };
            (n, answer)
        })
        .collect();
    assert_eq!(answers, expected);
    assert_eq!(keys.fetches(), 2, "one fetch for the twenty");
    assert!(took < Duration::from_secs(3), "took {took:?}");
}

/// Tokens naming unknown key ids, fifty in a burst, make one fetch; within the least interval
/// (two seconds here) none more, after it one more.
#[tokio::test]
async fn unknown_kids_refetch_no_more_often_than_the_least_interval() {
    let interval = Duration::from_secs(2);
    let keys = KeySet::start().await;
    let verifier = keys.verifier(Duration::from_secs(300), interval);
    assert!(timed(&verifier, &token("issuer", "k1", json!({}))).await.0);
    tokio::time::sleep(interval).await;
    for burst in 1..=2 {
        let started = Instant::now();
        for n in 0..50 {
            let error = verifier
                .verify(&token("attacker", &format!("bogus-{n}"), json!({})))
                .await
                .expect_err("an unknown key");
            assert_eq!(
                error.to_string(),
                format!("the token is malformed: no key of the issuer has the id \"bogus-{n}\"")
            );
        }
        assert!(
            started.elapsed() < interval,
            "the burst took too long to tell"
        );
        assert_eq!(keys.fetches(), 1 + burst, "burst {burst}");
        tokio::time::sleep(interval).await;
    }
}

async fn serve(verifier: JwtVerifier) -> pi_runtime::mcp::McpHttpServer {
    McpServer::new((Echo,))
        .expect("tools register")
        .serve_http(
            "127.0.0.1:0".parse().expect("an address"),
            HttpServing::default()
                .with_authentication(Authentication::new(verifier).with_resource(AUD)),
        )
        .await
        .expect("a loopback port")
}

/// The status and JSON body of a request with `token`, and how long it took.
async fn post(url: &str, token: &str) -> (StatusCode, Value, Duration) {
    let started = Instant::now();
    let response = RawClient::new(url)
        .with_token(token)
        .post(None, initialize())
        .await;
    let status = StatusCode::from_u16(response.status().as_u16()).expect("a status");
    let body = response.json().await.unwrap_or(Value::Null);
    (status, body, started.elapsed())
}

/// The key set fails (`500`): a token naming a key id the set lacks gets `503` with
/// `Retry-After` (it may be a key the issuer has just rotated to), at once, before the fix
/// a `401` "no key"; later such tokens get the same `503` without another fetch until the
/// least interval has passed; tokens of a known key still pass.
#[tokio::test]
async fn a_key_set_that_fails_answers_503_at_once_not_401() {
    const BOUND: Duration = Duration::from_secs(2);
    let keys = KeySet::start().await;
    let interval = Duration::from_secs(2);
    let server = serve(keys.verifier(Duration::from_secs(300), interval)).await;
    let url = server.url();
    let (status, _, _) = post(&url, &token("issuer", "k1", json!({}))).await;
    assert_eq!(status, StatusCode::OK);
    tokio::time::sleep(interval).await;

    keys.set_mood(Mood::Failing);
    let unavailable = json!({
        "error": "temporarily_unavailable",
        "error_description": format!(
            "the key set at {url} failed: HTTP status server error (500 Internal Server Error) \
             for url ({url})",
            url = keys.url
        ),
    });
    for _ in 0..3 {
        let (status, body, took) = post(&url, &token("rotated", "k2", json!({}))).await;
        assert_eq!(status, StatusCode::SERVICE_UNAVAILABLE);
        assert_eq!(body, unavailable);
        assert!(took < BOUND, "took {took:?}");
    }
    assert_eq!(
        keys.fetches(),
        2,
        "one fetch failed, and none more within the interval"
    );
    let (status, _, took) = post(&url, &token("issuer", "k1", json!({}))).await;
    assert_eq!(status, StatusCode::OK);
    assert!(took < BOUND, "took {took:?}");
    server.shutdown().await;
}

/// The key set stops answering: ten requests at once naming a key id the set lacks get `503`
/// when the one fetch they share times out (a second here), not one after another; requests
/// with a token of a known key pass at once meanwhile.
#[tokio::test]
async fn a_hanging_key_set_answers_503_after_one_fetch_timeout() {
    const TIMEOUT: Duration = Duration::from_secs(1);
    const BOUND: Duration = Duration::from_secs(4);
    let keys = KeySet::start().await;
    let server = serve(
        keys.verifier(Duration::from_secs(300), Duration::ZERO)
            .with_fetch_timeout(TIMEOUT),
    )
    .await;
    let url = server.url();
    let (status, _, _) = post(&url, &token("issuer", "k1", json!({}))).await;
    assert_eq!(status, StatusCode::OK);

    keys.set_mood(Mood::Hanging);
    let started = Instant::now();
    let mut requests = tokio::task::JoinSet::new();
    for n in 0..10 {
        let url = url.clone();
        let bogus = token("attacker", &format!("bogus-{n}"), json!({}));
        requests.spawn(async move { post(&url, &bogus).await });
    }
    let (status, _, took) = post(&url, &token("issuer", "k1", json!({}))).await;
    assert_eq!(status, StatusCode::OK);
    assert!(took < BOUND, "a valid token took {took:?}");
    let unavailable = json!({
        "error": "temporarily_unavailable",
        "error_description": format!(
            "the key set at {url} failed: error sending request for url ({url})",
            url = keys.url
        ),
    });
    for (status, body, _) in requests.join_all().await {
        assert_eq!(status, StatusCode::SERVICE_UNAVAILABLE);
        assert_eq!(body, unavailable);
    }
    let took = started.elapsed();
    assert!(took >= TIMEOUT && took < BOUND, "took {took:?}");
    assert_eq!(keys.fetches(), 2, "one fetch for the ten");
    server.shutdown().await;
}
