//! JWT access tokens, verified against a JSON Web Key Set: fetched from the authorization
//! server's `jwks_uri` and cached, or fixed.

use std::fmt;
use std::sync::Arc;
use std::time::Duration;

use futures::future::BoxFuture;
use jsonwebtoken::errors::ErrorKind;
use jsonwebtoken::jwk::{Jwk, JwkSet};
use jsonwebtoken::{Algorithm, DecodingKey, Validation};
use serde::Deserialize;

use super::jwks::{FetchedKeys, find, unknown_key};
use super::{Principal, TokenError, TokenVerifier};

/// Where a [`JwtVerifier`] gets its keys.
#[derive(Debug, Clone)]
#[non_exhaustive]
pub enum JwksSource {
    /// The authorization server's `jwks_uri`: fetched when first needed, again every five
    /// minutes, and at once (at most every ten seconds) when a token names a key the set
    /// lacks, so keys rotate without a restart. While a fetch fails, the last set is kept.
    ///
    /// A token of a key already fetched never waits for a fetch, however slow the key set's
    /// server: the five-minute refresh runs in the background. A token naming a key the set
    /// lacks waits for the one fetch under way (however many such tokens arrive), at most
    /// its timeout (five seconds); when no fetch may start yet, it is answered at once. If
    /// the last fetch failed, such a token gets [`TokenError::Unavailable`] (`503`, retry
    /// later) rather than a refusal, since its key may be one the set now holds.
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
/// use pi_runtime::mcp::HttpServing;
/// use pi_runtime::mcp::auth::{Authentication, JwksSource, JwtVerifier};
///
/// let verifier = JwtVerifier::new(
///     JwksSource::Url("https://auth.example.com/.well-known/jwks.json".into()),
///     "https://auth.example.com",
///     "https://tools.example.com/mcp",
/// );
/// let options = HttpServing::default().with_authentication(
///     Authentication::new(verifier)
///         .with_resource("https://tools.example.com/mcp")
///         .with_authorization_server("https://auth.example.com"),
/// );
/// # let _ = options;
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
    Fetched(FetchedKeys),
}

impl JwtVerifier {
    /// Tokens issued by `issuer` for `audience` (this server's URI), signed with a key from
    /// `keys`.
    pub fn new(keys: JwksSource, issuer: impl Into<String>, audience: impl Into<String>) -> Self {
        let keys = match keys {
            JwksSource::Static(set) => Keys::Static(Arc::new(set)),
            JwksSource::Url(url) => Keys::Fetched(FetchedKeys::new(url)),
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

    /// For keys from a URL: how long a fetched set is used before it is refreshed in the
    /// background (default five minutes), and the least time between the starts of two
    /// fetches however many tokens name an unknown key (default ten seconds).
    #[must_use]
    pub fn with_key_refresh(mut self, max_age: Duration, min_interval: Duration) -> Self {
        if let Keys::Fetched(fetched) = &mut self.keys {
            fetched.max_age = max_age;
            fetched.min_interval = min_interval;
        }
        self
    }

    /// For keys from a URL: how long one fetch of the set may take (default five seconds),
    /// which is the longest a token naming an unknown key waits before its `503` while the
    /// key set's server does not answer. Tokens of known keys never wait for a fetch.
    #[must_use]
    pub fn with_fetch_timeout(mut self, timeout: Duration) -> Self {
        if let Keys::Fetched(fetched) = &mut self.keys {
            fetched.set_timeout(timeout);
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
