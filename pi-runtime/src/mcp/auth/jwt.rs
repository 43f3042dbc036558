//! JWT access tokens, verified against a JSON Web Key Set: fetched from the authorization
//! server's `jwks_uri` and cached, or fixed.

use std::fmt;
use std::sync::Arc;
use std::time::{Duration, Instant};

use futures::future::BoxFuture;
use jsonwebtoken::errors::ErrorKind;
use jsonwebtoken::jwk::{Jwk, JwkSet};
use jsonwebtoken::{Algorithm, DecodingKey, Validation};
use serde::Deserialize;
use tokio::sync::Mutex;

use super::{Principal, TokenError, TokenVerifier};

/// How long fetched keys are used before they are fetched again, by default.
const KEYS_MAX_AGE: Duration = Duration::from_secs(300);
/// The least time between two fetches, by default. A token naming a key the set lacks makes
/// a fetch (the issuer may have rotated its keys), but a flood of such tokens makes one at
/// most this often.
const MIN_REFETCH_INTERVAL: Duration = Duration::from_secs(10);
/// How long one fetch of the key set may take.
const FETCH_TIMEOUT: Duration = Duration::from_secs(10);
/// The largest key set taken: real ones hold a few keys of a kilobyte or so.
const MAX_JWKS_BYTES: usize = 1 << 20;

/// Where a [`JwtVerifier`] gets its keys.
#[derive(Debug, Clone)]
#[non_exhaustive]
pub enum JwksSource {
    /// The authorization server's `jwks_uri`: fetched when first needed, again every five
    /// minutes, and at once (at most every ten seconds) when a token names a key the set
    /// lacks, so keys rotate without a restart. While a fetch fails, the last set is kept.
    Url(String),
    /// A fixed key set.
    Static(JwkSet),
}

/// Verifies JWT access tokens: the signature with a key of the set (chosen by the token's
/// `kid`, with the key's own algorithm; symmetric algorithms are refused), then `iss`
/// (the issuer), `aud` (this server's URI), `exp` and `nbf`, each required but `nbf`, with
/// 30 seconds of leeway for clock skew.
///
/// The principal's subject is `sub`; its scopes are the space-separated `scope` claim
/// (RFC 9068), or an `scp` list.
///
/// ```no_run
/// use pi_runtime::mcp::McpServer;
/// use pi_runtime::mcp::auth::{Authentication, JwksSource, JwtVerifier};
/// # use pi_runtime::tool;
/// # /// Add.
/// # #[tool]
/// # async fn add(a: f64, b: f64) -> String { (a + b).to_string() }
///
/// # fn main() -> Result<(), pi_runtime::mcp::McpError> {
/// let verifier = JwtVerifier::new(
///     JwksSource::Url("https://auth.example.com/.well-known/jwks.json".into()),
///     "https://auth.example.com",
///     "https://tools.example.com/mcp",
/// );
/// let server = McpServer::new((Add,))?.with_authentication(
///     Authentication::new(verifier)
///         .with_resource("https://tools.example.com/mcp")
///         .with_authorization_server("https://auth.example.com"),
/// );
/// # let _ = server;
/// # Ok(())
/// # }
/// ```
pub struct JwtVerifier {
    keys: Keys,
    issuer: String,
    audience: String,
    leeway: Duration,
}

impl fmt::Debug for JwtVerifier {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("JwtVerifier")
            .field("issuer", &self.issuer)
            .field("audience", &self.audience)
            .field("leeway", &self.leeway)
            .finish_non_exhaustive()
    }
}

enum Keys {
    Static(Arc<JwkSet>),
    Fetched(Fetched),
}

/// A key set fetched from a URL, and when.
struct Fetched {
    url: String,
    client: reqwest::Client,
    cache: Mutex<Cache>,
    max_age: Duration,
    min_interval: Duration,
}

#[derive(Default)]
struct Cache {
    keys: Option<Arc<JwkSet>>,
    fetched_at: Option<Instant>,
}

impl JwtVerifier {
    /// Tokens issued by `issuer` for `audience` (this server's URI), signed with a key from
    /// `keys`.
    pub fn new(keys: JwksSource, issuer: impl Into<String>, audience: impl Into<String>) -> Self {
        let keys = match keys {
            JwksSource::Static(set) => Keys::Static(Arc::new(set)),
            JwksSource::Url(url) => Keys::Fetched(Fetched {
                url,
                client: reqwest::Client::new(),
                cache: Mutex::default(),
                max_age: KEYS_MAX_AGE,
                min_interval: MIN_REFETCH_INTERVAL,
            }),
        };
        JwtVerifier {
            keys,
            issuer: issuer.into(),
            audience: audience.into(),
            leeway: Duration::from_secs(30),
        }
    }

    /// The clock skew allowed on `exp` and `nbf` (default 30 seconds).
    #[must_use]
    pub fn with_leeway(mut self, leeway: Duration) -> Self {
        self.leeway = leeway;
        self
    }

    /// For keys from a URL: how long a fetched set is used (default five minutes), and the
    /// least time between two fetches however many tokens name an unknown key (default ten
    /// seconds).
    #[must_use]
    pub fn with_key_refresh(mut self, max_age: Duration, min_interval: Duration) -> Self {
        if let Keys::Fetched(fetched) = &mut self.keys {
            fetched.max_age = max_age;
            fetched.min_interval = min_interval;
        }
        self
    }

    async fn check(&self, token: &str) -> Result<Principal, TokenError> {
        let header = jsonwebtoken::decode_header(token)
            .map_err(|e| TokenError::Malformed(format!("it is not a JWT: {e}")))?;
        if matches!(
            header.alg,
            Algorithm::HS256 | Algorithm::HS384 | Algorithm::HS512
        ) {
            return Err(TokenError::Malformed(format!(
                "{:?} is a shared-secret algorithm, which a key set cannot verify",
                header.alg
            )));
        }
        let kid = header.kid.as_deref();
        let jwk = self.key(kid).await?;
        if let Some(algorithm) = jwk.common.key_algorithm {
            let expected = Algorithm::try_from(algorithm).map_err(|e| token_error(&e))?;
            if expected != header.alg {
                return Err(TokenError::Malformed(format!(
                    "the token is signed with {:?}, but its key is for {expected:?}",
                    header.alg
                )));
            }
        }
        let key = DecodingKey::from_jwk(&jwk).map_err(|e| token_error(&e))?;
        let mut validation = Validation::new(header.alg);
        validation.set_issuer(&[&self.issuer]);
        validation.set_audience(&[&self.audience]);
        validation.set_required_spec_claims(&["exp", "iss", "aud", "sub"]);
        validation.validate_nbf = true;
        validation.leeway = self.leeway.as_secs();
        let data = jsonwebtoken::decode::<Claims>(token, &key, &validation)
            .map_err(|e| token_error(&e))?;
        let claims = data.claims;
        let scopes: Vec<String> = match (claims.scope, claims.scp) {
            (Some(scope), _) => scope.split_whitespace().map(str::to_owned).collect(),
            (None, Some(Scp::One(scope))) => scope.split_whitespace().map(str::to_owned).collect(),
            (None, Some(Scp::Many(scopes))) => scopes,
            (None, None) => Vec::new(),
        };
        Ok(Principal::new(claims.sub).with_scopes(scopes))
    }

    /// The key `kid` names (the set's only key when the token names none).
    async fn key(&self, kid: Option<&str>) -> Result<Jwk, TokenError> {
        match &self.keys {
            Keys::Static(set) => find(set, kid).cloned().ok_or_else(|| unknown_key(kid)),
            Keys::Fetched(fetched) => fetched.key(kid).await,
        }
    }
}

impl TokenVerifier for JwtVerifier {
    fn verify<'a>(&'a self, token: &'a str) -> BoxFuture<'a, Result<Principal, TokenError>> {
        Box::pin(self.check(token))
    }
}

impl Fetched {
    async fn key(&self, kid: Option<&str>) -> Result<Jwk, TokenError> {
        // One fetch at a time: tokens arriving meanwhile wait for its keys.
        let mut cache = self.cache.lock().await;
        let age = cache.fetched_at.map(|at| at.elapsed());
        let stale = age.is_none_or(|age| age >= self.max_age);
        if !stale && let Some(jwk) = cache.keys.as_deref().and_then(|set| find(set, kid)) {
            return Ok(jwk.clone());
        }
        let may_fetch = age.is_none_or(|age| age >= self.min_interval);
        if may_fetch {
            cache.fetched_at = Some(Instant::now());
            match self.fetch().await {
                Ok(set) => cache.keys = Some(Arc::new(set)),
                Err(error) => {
                    tracing::warn!(url = %self.url, %error, "the JWKS could not be fetched");
                    if cache.keys.is_none() {
                        return Err(TokenError::Unavailable(error));
                    }
                }
            }
        }
        cache
            .keys
            .as_deref()
            .and_then(|set| find(set, kid))
            .cloned()
            .ok_or_else(|| unknown_key(kid))
    }

    async fn fetch(&self) -> Result<JwkSet, String> {
        let failed = |e: reqwest::Error| format!("the key set at {} failed: {e}", self.url);
        let mut response = self
            .client
            .get(&self.url)
            .timeout(FETCH_TIMEOUT)
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

fn find<'a>(set: &'a JwkSet, kid: Option<&str>) -> Option<&'a Jwk> {
    match kid {
        Some(kid) => set.find(kid),
        None => match set.keys.as_slice() {
            [only] => Some(only),
            _ => None,
        },
    }
}

fn unknown_key(kid: Option<&str>) -> TokenError {
    match kid {
        Some(kid) => TokenError::Malformed(format!("no key of the issuer has the id {kid:?}")),
        None => TokenError::Malformed("the token names no key (kid)".to_owned()),
    }
}

fn token_error(error: &jsonwebtoken::errors::Error) -> TokenError {
    match error.kind() {
        ErrorKind::ExpiredSignature => TokenError::Expired,
        ErrorKind::ImmatureSignature => TokenError::NotYetValid,
        ErrorKind::InvalidAudience => TokenError::WrongAudience,
        ErrorKind::InvalidIssuer => TokenError::WrongIssuer,
        ErrorKind::InvalidSignature => TokenError::BadSignature,
        ErrorKind::MissingRequiredClaim(claim) => {
            TokenError::Malformed(format!("it has no {claim:?} claim"))
        }
        _ => TokenError::Malformed(error.to_string()),
    }
}

#[derive(Deserialize)]
struct Claims {
    sub: String,
    #[serde(default)]
    scope: Option<String>,
    #[serde(default)]
    scp: Option<Scp>,
}

#[derive(Deserialize)]
#[serde(untagged)]
enum Scp {
    One(String),
    Many(Vec<String>),
}
