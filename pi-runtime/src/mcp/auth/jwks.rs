//! A key set fetched from the authorization server's `jwks_uri` and cached, so that a token
//! of a known key never waits on the network, whatever the key set's server does.
//!
//! - A token whose key is in the cache is checked at once, even when the cache is older
//!   than its maximum age: the refresh that age calls for runs in the background.
//! - A token naming a key the cache lacks (the issuer may have rotated its keys) waits for a
//!   fetch: the one under way if there is one (single flight), else a new one, but only if
//!   the least interval has passed since the last began. Otherwise it is answered at once:
//!   an unknown key if the last fetch succeeded, [`TokenError::Unavailable`] (a `503`) if it
//!   failed, since the key may well be one the set now holds.
//! - A fetch runs in a task of its own, so a request that gives up does not cancel it for
//!   the others; dropping the cache stops it.

use std::sync::{Arc, Mutex, MutexGuard, PoisonError};
use std::time::{Duration, Instant};

use futures::FutureExt;
use futures::future::{BoxFuture, Shared};
use jsonwebtoken::jwk::{Jwk, JwkSet};
use tokio::task::AbortHandle;

use super::TokenError;

/// How long fetched keys are used before they are fetched again, by default.
pub(super) const KEYS_MAX_AGE: Duration = Duration::from_secs(300);
/// The least time between two fetches, by default. A token naming a key the set lacks makes
/// a fetch, but a flood of such tokens makes one at most this often.
pub(super) const MIN_REFETCH_INTERVAL: Duration = Duration::from_secs(10);
/// How long one fetch may take, by default: what a token naming an unknown key waits at
/// most before its `503` while the key set's server does not answer.
pub(super) const FETCH_TIMEOUT: Duration = Duration::from_secs(5);
/// The largest key set taken: real ones hold a few keys of a kilobyte or so.
const MAX_JWKS_BYTES: usize = 1 << 20;

/// What a fetch ends with: the keys, or why there are none.
type Outcome = Result<Arc<JwkSet>, String>;

/// The key set at a URL, as last fetched.
pub(super) struct FetchedKeys {
    source: Source,
    /// How long fetched keys are used before they are refreshed.
    pub(super) max_age: Duration,
    /// The least time between the starts of two fetches.
    pub(super) min_interval: Duration,
    state: Arc<Mutex<State>>,
}

/// Where and how a fetch gets the keys.
#[derive(Clone)]
struct Source {
    url: String,
    client: reqwest::Client,
    timeout: Duration,
}

/// The cache. Its lock is held for a few instructions at a time, never across an `await`.
#[derive(Default)]
struct State {
    keys: Option<Arc<JwkSet>>,
    /// When `keys` were fetched.
    fetched_at: Option<Instant>,
    /// When the last fetch began, for the least interval.
    attempted_at: Option<Instant>,
    /// Why the last fetch failed; `None` once one succeeds.
    failure: Option<String>,
    /// The fetch under way.
    fetching: Option<Fetching>,
}

struct Fetching {
    outcome: Shared<BoxFuture<'static, Outcome>>,
    task: AbortHandle,
}

impl FetchedKeys {
    pub(super) fn new(url: String) -> Self {
        FetchedKeys {
            source: Source {
                url,
                client: reqwest::Client::new(),
                timeout: FETCH_TIMEOUT,
            },
            max_age: KEYS_MAX_AGE,
            min_interval: MIN_REFETCH_INTERVAL,
            state: Arc::default(),
        }
    }

    /// How long one fetch may take.
    pub(super) fn set_timeout(&mut self, timeout: Duration) {
        self.source.timeout = timeout;
    }

    /// The key `kid` names (the set's only key when the token names none).
    pub(super) async fn key(&self, kid: Option<&str>) -> Result<Jwk, TokenError> {
        let fetching = {
            let mut state = lock(&self.state);
            let fresh = state
                .fetched_at
                .is_some_and(|at| at.elapsed() < self.max_age);
            if let Some(jwk) = state.keys.as_deref().and_then(|set| find(set, kid)) {
                let jwk = jwk.clone();
                if !fresh {
                    // Refreshed in the background: this token does not wait for it.
                    drop(self.fetch(&mut state));
                }
                return Ok(jwk);
            }
            match self.fetch(&mut state) {
                Some(fetching) => fetching,
                None => {
                    return Err(match &state.failure {
                        Some(reason) => TokenError::Unavailable(reason.clone()),
                        None => unknown_key(kid),
                    });
                }
            }
        };
        let keys = fetching.await.map_err(TokenError::Unavailable)?;
        find(&keys, kid).cloned().ok_or_else(|| unknown_key(kid))
    }

    /// The fetch under way, else a new one if the least interval has passed since the last
    /// began, else `None`.
    fn fetch(&self, state: &mut State) -> Option<Shared<BoxFuture<'static, Outcome>>> {
        if let Some(fetching) = &state.fetching {
            return Some(fetching.outcome.clone());
        }
        if state
            .attempted_at
            .is_some_and(|at| at.elapsed() < self.min_interval)
        {
            return None;
        }
        state.attempted_at = Some(Instant::now());
        // The task takes the lock to record its outcome, so it records it after `fetching`
        // is stored below, whenever it ends.
        let task = tokio::spawn(fetch_and_keep(self.source.clone(), Arc::clone(&self.state)));
        let abort = task.abort_handle();
        let outcome = async move {
            task.await
                .unwrap_or_else(|e| Err(format!("the fetch of the key set ended: {e}")))
        }
        .boxed()
        .shared();
        state.fetching = Some(Fetching {
            outcome: outcome.clone(),
            task: abort,
        });
        Some(outcome)
    }
}

impl Drop for FetchedKeys {
    fn drop(&mut self) {
        if let Some(fetching) = lock(&self.state).fetching.take() {
            fetching.task.abort();
        }
    }
}

/// Fetch the keys and record the outcome in `state`: new keys replace the old; on a failure
/// the old are kept.
async fn fetch_and_keep(source: Source, state: Arc<Mutex<State>>) -> Outcome {
    let outcome = source.fetch().await.map(Arc::new);
    let mut state = lock(&state);
    state.fetching = None;
    match &outcome {
        Ok(keys) => {
            state.keys = Some(Arc::clone(keys));
            state.fetched_at = Some(Instant::now());
            state.failure = None;
        }
        Err(error) => {
            tracing::warn!(url = %source.url, %error, "the JWKS could not be fetched");
            state.failure = Some(error.clone());
        }
    }
    outcome
}

impl Source {
    async fn fetch(&self) -> Result<JwkSet, String> {
        let failed = |e: reqwest::Error| format!("the key set at {} failed: {e}", self.url);
        let mut response = self
            .client
            .get(&self.url)
            .timeout(self.timeout)
            .send()
            .await
            .map_err(failed)?
            .error_for_status()
            .map_err(failed)?;
        let mut body = Vec::new();
        while let Some(chunk) = response.chunk().await.map_err(failed)? {
            if body.len() + chunk.len() > MAX_JWKS_BYTES {
                return Err(format!(
                    "the key set at {} is larger than {MAX_JWKS_BYTES} bytes",
                    self.url
                ));
            }
            body.extend_from_slice(&chunk);
        }
        serde_json::from_slice(&body)
            .map_err(|e| format!("the key set at {} is not a JWKS: {e}", self.url))
    }
}

fn lock(state: &Mutex<State>) -> MutexGuard<'_, State> {
    // Nothing panics while holding it; were it poisoned, the cache is still whole.
    state.lock().unwrap_or_else(PoisonError::into_inner)
}

/// The key of `set` that `kid` names, or its only key when the token names none.
pub(super) fn find<'a>(set: &'a JwkSet, kid: Option<&str>) -> Option<&'a Jwk> {
    match kid {
        Some(kid) => set.find(kid),
        None => match set.keys.as_slice() {
            [only] => Some(only),
            _ => None,
        },
    }
}

/// The refusal of a token whose key the set lacks.
pub(super) fn unknown_key(kid: Option<&str>) -> TokenError {
    match kid {
        Some(kid) => TokenError::Malformed(format!("no key of the issuer has the id {kid:?}")),
        None => TokenError::Malformed("the token names no key (kid)".to_owned()),
    }
}
