//! Who may use the streamable HTTP server: the server is an OAuth 2.1 resource server, as
//! the MCP specification makes it. Every request carries `Authorization: Bearer <token>`;
//! a [`TokenVerifier`] turns the token into a [`Principal`] (who, and with which scopes);
//! tools may require scopes, and a token sees and calls only the tools its scopes allow.
//!
//! - A request without a valid token gets `401` and `WWW-Authenticate: Bearer
//!   resource_metadata="…"`, pointing at the RFC 9728 metadata the server publishes at
//!   `/.well-known/oauth-protected-resource` (and at the same path followed by the endpoint's
//!   own, as RFC 9728 derives it from the resource URI).
//! - A `tools/call` of a tool whose scopes the token lacks gets `403` with
//!   `error="insufficient_scope"`, before the call is read any further; `tools/list` leaves
//!   such tools out.
//! - A session belongs to the token subject that opened it: another subject's requests do not
//!   find it.
//!
//! Two verifiers come with the crate: [`StaticTokens`] for service-to-service use, and, with
//! the `jwt` feature, `JwtVerifier` for access tokens signed by an authorization server.
//!
//! ```
//! use pi_runtime::mcp::auth::{Authentication, Principal, StaticTokens};
//! use pi_runtime::mcp::{HttpServing, McpServer};
//! use pi_runtime::tool;
//!
//! /// Add two numbers.
//! #[tool]
//! async fn add(a: f64, b: f64) -> String {
//!     (a + b).to_string()
//! }
//!
//! # #[tokio::main(flavor = "current_thread")]
//! # async fn main() -> Result<(), pi_runtime::mcp::McpError> {
//! let tokens = StaticTokens::new()
//!     .with_token("a-long-random-service-token", Principal::new("billing").with_scopes(["math"]));
//! let options = HttpServing::default().with_authentication(
//!     Authentication::new(tokens)
//!         .with_resource("https://tools.example.com/mcp")
//!         .with_required_scopes("add", ["math"]),
//! );
//! let server = McpServer::new((Add,))?;
//! let http = server.serve_http("127.0.0.1:0".parse().expect("an address"), options).await?;
//! # http.shutdown().await;
//! # Ok(())
//! # }
//! ```
//!
//! The principal reaches the tools: [`McpServer::with_context`](super::McpServer::with_context)
//! makes each call's context (what a `Ctx<T>` parameter and the hooks read) from it.

mod gate;
#[cfg(feature = "jwt")]
mod jwks;
#[cfg(feature = "jwt")]
mod jwt;
mod static_tokens;

use std::collections::{BTreeSet, HashMap};
use std::fmt;
use std::sync::Arc;

use futures::future::BoxFuture;
use thiserror::Error;

pub(super) use gate::{Caller, Gate, authenticate, authorize, metadata_router};
#[cfg(feature = "jwt")]
#[cfg_attr(docsrs, doc(cfg(feature = "jwt")))]
pub use jwt::{JwksSource, JwtVerifier};
pub use static_tokens::{MIN_TOKEN_LENGTH, StaticTokens};

/// Checks a bearer token and says whom it stands for.
///
/// Implement it to plug in your own token service (an introspection endpoint, a database of
/// API keys). The server calls it once per HTTP request, so cache what is slow.
pub trait TokenVerifier: Send + Sync + fmt::Debug + 'static {
    /// The principal `token` stands for, or why it is refused.
    fn verify<'a>(&'a self, token: &'a str) -> BoxFuture<'a, Result<Principal, TokenError>>;
}

/// Whom a token stands for: a subject (the key sessions and caps are counted under) and
/// the scopes it was granted. Each call's context is made from it
/// ([`McpServer::with_context`](super::McpServer::with_context)).
#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub struct Principal {
    /// Who: a JWT's `sub`, or the name given to a static token.
    pub subject: String,
    /// What the token may do.
    pub scopes: BTreeSet<String>,
}

impl Principal {
    /// A principal with no scopes.
    pub fn new(subject: impl Into<String>) -> Self {
        Principal {
            subject: subject.into(),
            scopes: BTreeSet::new(),
        }
    }

    /// These scopes added.
    #[must_use]
    pub fn with_scopes<I, S>(mut self, scopes: I) -> Self
    where
        I: IntoIterator<Item = S>,
        S: Into<String>,
    {
        self.scopes.extend(scopes.into_iter().map(Into::into));
        self
    }

    /// Whether it holds every one of `scopes`.
    pub fn has_all<'a>(&self, scopes: impl IntoIterator<Item = &'a String>) -> bool {
        scopes.into_iter().all(|scope| self.scopes.contains(scope))
    }
}

/// Why a token was refused. Each becomes a `401` with `error="invalid_token"` and this text
/// as its description, except [`Unavailable`](Self::Unavailable), a `503`.
#[derive(Debug, Clone, PartialEq, Eq, Error)]
#[non_exhaustive]
pub enum TokenError {
    /// No verifier knows the token.
    #[error("the token is not one this server accepts")]
    Unknown,
    /// Its `exp` has passed.
    #[error("the token has expired")]
    Expired,
    /// Its `nbf` has not come yet.
    #[error("the token is not valid yet")]
    NotYetValid,
    /// Its `aud` is not this server.
    #[error("the token was issued for another audience")]
    WrongAudience,
    /// Its `iss` is not the issuer the server trusts.
    #[error("the token was issued by another issuer")]
    WrongIssuer,
    /// Its signature does not verify with the key it names.
    #[error("the token's signature does not verify")]
    BadSignature,
    /// It is not a token the verifier can read, or it lacks a claim it must have.
    #[error("the token is malformed: {0}")]
    Malformed(String),
    /// The verifier cannot decide now (its key set cannot be fetched).
    #[error("tokens cannot be checked now: {0}")]
    Unavailable(String),
}

/// How the streamable HTTP server authenticates its clients
/// ([`HttpServing::with_authentication`](super::HttpServing::with_authentication)): the
/// verifier, the server's own URI (the resource, and a JWT's audience), the authorization
/// servers that issue its tokens, and the scopes each tool requires.
#[derive(Clone)]
pub struct Authentication {
    verifier: Arc<dyn TokenVerifier>,
    resource: Option<String>,
    authorization_servers: Vec<String>,
    required: HashMap<String, BTreeSet<String>>,
}

impl fmt::Debug for Authentication {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Authentication")
            .field("verifier", &self.verifier)
            .field("resource", &self.resource)
            .field("authorization_servers", &self.authorization_servers)
            .field("required", &self.required)
            .finish()
    }
}

impl Authentication {
    /// Authenticate every request with `verifier`.
    pub fn new(verifier: impl TokenVerifier) -> Self {
        Self::with_verifier(Arc::new(verifier))
    }

    /// [`new`](Self::new), for a verifier already shared.
    pub fn with_verifier(verifier: Arc<dyn TokenVerifier>) -> Self {
        Authentication {
            verifier,
            resource: None,
            authorization_servers: Vec::new(),
            required: HashMap::new(),
        }
    }

    /// The server's canonical URI, as clients reach it (`https://tools.example.com/mcp`):
    /// the `resource` of its metadata. By default, `http://<bound address>/mcp` for
    /// [`serve_http`](super::McpServer::serve_http), and the request's `Host` with the
    /// router's path for [`router`](super::McpServer::router).
    #[must_use]
    pub fn with_resource(mut self, uri: impl Into<String>) -> Self {
        self.resource = Some(uri.into());
        self
    }

    /// An authorization server that issues tokens for this server, listed in the metadata
    /// so clients know where to get one.
    #[must_use]
    pub fn with_authorization_server(mut self, issuer: impl Into<String>) -> Self {
        self.authorization_servers.push(issuer.into());
        self
    }

    /// Calling (and seeing) the tool named `tool` requires every one of `scopes`.
    #[must_use]
    pub fn with_required_scopes<I, S>(mut self, tool: impl Into<String>, scopes: I) -> Self
    where
        I: IntoIterator<Item = S>,
        S: Into<String>,
    {
        self.required
            .entry(tool.into())
            .or_default()
            .extend(scopes.into_iter().map(Into::into));
        self
    }

    /// The resource URI set with [`with_resource`](Self::with_resource).
    pub fn resource(&self) -> Option<&str> {
        self.resource.as_deref()
    }

    /// Whether `principal` may see and call the tool named `tool`.
    pub fn allows(&self, principal: &Principal, tool: &str) -> bool {
        self.required
            .get(tool)
            .is_none_or(|scopes| principal.has_all(scopes))
    }

    /// The scopes `tool` requires (none for a tool without requirements).
    fn required_for(&self, tool: &str) -> Option<&BTreeSet<String>> {
        self.required.get(tool)
    }

    /// Every scope some tool requires, for the metadata's `scopes_supported`.
    fn scopes(&self) -> BTreeSet<&str> {
        self.required
            .values()
            .flatten()
            .map(String::as_str)
            .collect()
    }
}
