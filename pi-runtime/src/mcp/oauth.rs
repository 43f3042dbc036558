//! Connecting to an MCP server that wants OAuth: the client side of the specification's
//! authorization, through rmcp's `auth` client (feature `mcp-oauth`).
//!
//! When a request gets `401` (no token, or one the server no longer takes) or `403` with
//! `insufficient_scope`, the client authorizes and sends the request again: it discovers the
//! server's protected-resource metadata and its authorization server's metadata (each
//! well-known variant), identifies itself (a client ID metadata document, a pre-registered
//! client, or dynamic registration), picks the scopes (from the challenge, else the
//! metadata's `scopes_supported`), and runs the authorization-code flow with PKCE and an
//! RFC 8707 resource indicator. The application supplies the one step only a person can take:
//! its `authorize` function gets the authorization URL and returns the URL the authorization
//! server redirected back to. rmcp checks that callback's `iss` (RFC 9207), exchanges the
//! code, keeps the tokens in the credential store and refreshes them as they expire. Each
//! request authorizes at most [`OAuth::max_attempts`] times.

use std::collections::HashMap;
use std::fmt;
use std::future::Future;
use std::sync::Arc;
use std::time::Duration;

use futures::FutureExt;
use futures::future::BoxFuture;
use futures::stream::BoxStream;
use reqwest::header::{HeaderName, HeaderValue};
use rmcp::model::ClientJsonRpcMessage;
use rmcp::transport::auth::{
    AuthClient, AuthError, AuthorizationManager, AuthorizationRequest, OAuthHttpClient,
    OAuthHttpClientError, OAuthHttpClientFuture, OAuthHttpRedirectPolicy, OAuthHttpRequest,
    OAuthState, WWWAuthenticateParams,
};
pub use rmcp::transport::auth::{CredentialStore, InMemoryCredentialStore, StoredCredentials};
use rmcp::transport::streamable_http_client::{
    SseError, StreamableHttpClient, StreamableHttpError, StreamableHttpPostResponse,
    StreamableHttpResponseLimits,
};
use sse_stream::Sse;
use tokio::sync::Mutex;

use super::http::HttpBackend;

/// How long one OAuth HTTP request (metadata, registration, token) may take.
const OAUTH_HTTP_TIMEOUT: Duration = Duration::from_secs(30);
/// The most redirects an OAuth HTTP request follows.
const MAX_REDIRECTS: usize = 10;
/// The most bytes of an OAuth HTTP response read.
const MAX_RESPONSE_BYTES: usize = 1 << 20;

type Authorize = Arc<dyn Fn(String) -> BoxFuture<'static, Result<String, String>> + Send + Sync>;
type InstallStore = Arc<dyn Fn(&mut AuthorizationManager) + Send + Sync>;

/// How an [`McpClient`](super::McpClient) authorizes with a server that wants OAuth
/// ([`McpClientBuilder::oauth`](super::McpClientBuilder::oauth)).
///
/// ```no_run
/// use pi_runtime::mcp::McpClient;
/// use pi_runtime::mcp::oauth::OAuth;
///
/// # async fn connect() -> Result<(), Box<dyn std::error::Error>> {
/// // The user opens the URL, signs in, and the browser lands on the redirect URI; the
/// // application's callback listener hands back the URL it landed on.
/// let oauth = OAuth::new("http://127.0.0.1:8765/callback", |authorization_url| async move {
///     println!("Open {authorization_url}");
///     let landed_on: String = wait_for_callback().await;
///     Ok(landed_on)
/// })
/// .client_metadata_url("https://app.example.com/oauth/client.json");
/// let client = McpClient::builder("tools")
///     .oauth(oauth)
///     .http("https://tools.example.com/mcp")
///     .await?;
/// # let _ = client;
/// # Ok(()) }
/// # async fn wait_for_callback() -> String { String::new() }
/// ```
#[derive(Clone)]
pub struct OAuth {
    redirect_uri: String,
    authorize: Authorize,
    identity: Identity,
    client_name: String,
    scopes: Vec<String>,
    install_store: InstallStore,
    max_attempts: u32,
}

/// How the client identifies itself to the authorization server.
#[derive(Clone, Debug)]
enum Identity {
    /// Dynamic client registration, where the server offers it.
    Dynamic,
    /// A client ID metadata document at this HTTPS URL (the server may also fall back to
    /// registration).
    MetadataDocument(String),
    /// A client registered beforehand; with a secret it authenticates at the token endpoint
    /// as the server's metadata says (`client_secret_basic` or `client_secret_post`).
    Registered {
        client_id: String,
        secret: Option<String>,
    },
}

impl fmt::Debug for OAuth {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("OAuth")
            .field("redirect_uri", &self.redirect_uri)
            .field("identity", &self.identity)
            .field("scopes", &self.scopes)
            .field("max_attempts", &self.max_attempts)
            .finish_non_exhaustive()
    }
}

impl OAuth {
    /// Authorize with redirects to `redirect_uri`; `authorize` takes the user through the
    /// authorization URL and returns the URL the authorization server redirected back to
    /// (with its `code`, `state` and, where the server sends one, `iss`), or why it could
    /// not. The client registers itself dynamically unless told otherwise, and keeps its
    /// tokens in memory unless given a [`credential_store`](Self::credential_store).
    pub fn new<F, Fut>(redirect_uri: impl Into<String>, authorize: F) -> Self
    where
        F: Fn(String) -> Fut + Send + Sync + 'static,
        Fut: Future<Output = Result<String, String>> + Send + 'static,
    {
        let store = InMemoryCredentialStore::new();
        OAuth {
            redirect_uri: redirect_uri.into(),
            authorize: Arc::new(move |url| authorize(url).boxed()),
            identity: Identity::Dynamic,
            client_name: "pi-runtime".to_owned(),
            scopes: Vec::new(),
            install_store: Arc::new(move |manager| manager.set_credential_store(store.clone())),
            max_attempts: 3,
        }
    }

    /// Identify the client by the client ID metadata document at `url` (HTTPS), which the
    /// authorization server fetches.
    #[must_use]
    pub fn client_metadata_url(mut self, url: impl Into<String>) -> Self {
        self.identity = Identity::MetadataDocument(url.into());
        self
    }

    /// Use a client registered with the authorization server beforehand: a public one, or
    /// with `secret` a confidential one.
    #[must_use]
    pub fn registered_client(
        mut self,
        client_id: impl Into<String>,
        secret: Option<String>,
    ) -> Self {
        self.identity = Identity::Registered {
            client_id: client_id.into(),
            secret,
        };
        self
    }

    /// The name the client registers under (default `pi-runtime`).
    #[must_use]
    pub fn client_name(mut self, name: impl Into<String>) -> Self {
        self.client_name = name.into();
        self
    }

    /// Ask for these scopes where neither the server's challenge nor its metadata names
    /// any.
    #[must_use]
    pub fn scopes<I, S>(mut self, scopes: I) -> Self
    where
        I: IntoIterator<Item = S>,
        S: Into<String>,
    {
        self.scopes = scopes.into_iter().map(Into::into).collect();
        self
    }

    /// Keep the tokens (and the registered client) in `store`, where the next run finds
    /// them: a token still good (or refreshable) needs no new authorization.
    #[must_use]
    pub fn credential_store<S: CredentialStore + Clone + 'static>(mut self, store: S) -> Self {
        self.install_store = Arc::new(move |manager| manager.set_credential_store(store.clone()));
        self
    }

    /// How often one request may send the user to authorize before it fails (default 3):
    /// a server that keeps refusing the token it asked for is not asked forever.
    #[must_use]
    pub fn max_attempts(mut self, attempts: u32) -> Self {
        self.max_attempts = attempts.max(1);
        self
    }
}

/// [`HttpBackend`] with OAuth: each request goes with the current token, and a `401` or an
/// `insufficient_scope` `403` authorizes and sends it again.
#[derive(Clone)]
pub(crate) struct OAuthBackend {
    plain: HttpBackend,
    session: Arc<Session>,
}

/// The authorization of one connection.
struct Session {
    server_url: String,
    oauth: OAuth,
    oauth_http: Arc<dyn OAuthHttpClient>,
    state: Mutex<Authorized>,
}

/// The client requests go out with: rmcp's, which adds the token once there is one (and
/// sends without one before); `generation` counts the authorizations, so that requests
/// refused together authorize once.
struct Authorized {
    client: AuthClient<HttpBackend>,
    generation: u64,
}

type HttpResult<T> = Result<T, StreamableHttpError<reqwest::Error>>;

impl OAuthBackend {
    /// The backend of a connection to `server_url`; tokens kept in the store from before
    /// are used at once.
    pub(crate) async fn new(
        plain: HttpBackend,
        server_url: String,
        oauth: OAuth,
    ) -> Result<Self, AuthError> {
        let oauth_http: Arc<dyn OAuthHttpClient> = Arc::new(ReqwestOAuth::new()?);
        let mut manager = AuthorizationManager::new_with_oauth_http_client(
            server_url.as_str(),
            Arc::clone(&oauth_http),
        )
        .await?;
        (oauth.install_store)(&mut manager);
        // Tokens kept from before are used at once; without any, requests go without one
        // until the server's challenge starts an authorization.
        manager.initialize_from_store().await?;
        let authorized = Authorized {
            client: AuthClient::new(plain.clone(), manager),
            generation: 0,
        };
        Ok(OAuthBackend {
            plain,
            session: Arc::new(Session {
                server_url,
                oauth,
                oauth_http,
                state: Mutex::new(authorized),
            }),
        })
    }

    /// Run `send` with the current client; on a challenge, authorize and run it again.
    async fn authorized<T, F, Fut>(&self, send: F) -> HttpResult<T>
    where
        F: Fn(AuthClient<HttpBackend>) -> Fut,
        Fut: Future<Output = HttpResult<T>>,
    {
        let mut attempts = 0;
        loop {
            let (client, generation) = {
                let state = self.session.state.lock().await;
                (state.client.clone(), state.generation)
            };
            let challenge = match send(client).await {
                Err(StreamableHttpError::AuthRequired(required)) => {
                    required.www_authenticate_header
                }
                Err(StreamableHttpError::InsufficientScope(scope)) => scope.www_authenticate_header,
                answered => return answered,
            };
            attempts += 1;
            if attempts > self.session.oauth.max_attempts {
                return Err(StreamableHttpError::Auth(AuthError::AuthorizationFailed(
                    format!(
                        "the server still refused the token after {} authorizations: {challenge}",
                        self.session.oauth.max_attempts
                    ),
                )));
            }
            self.session
                .authorize(generation, &challenge, &self.plain)
                .await
                .map_err(StreamableHttpError::Auth)?;
        }
    }
}

impl Session {
    /// Authorize anew after `challenge`, unless another request did since `seen`.
    async fn authorize(
        &self,
        seen: u64,
        challenge: &str,
        plain: &HttpBackend,
    ) -> Result<(), AuthError> {
        let mut state = self.state.lock().await;
        if state.generation != seen {
            return Ok(());
        }
        // A new authorization asks for what was granted before as well as what the
        // challenge wants (SEP-2350): stepping up must not lose the scopes the other
        // operations need.
        let granted = state
            .client
            .auth_manager
            .lock()
            .await
            .get_current_scopes()
            .await;
        let mut manager = AuthorizationManager::new_with_oauth_http_client(
            self.server_url.as_str(),
            Arc::clone(&self.oauth_http),
        )
        .await?;
        (self.oauth.install_store)(&mut manager);
        let oauth = &self.oauth;
        let mut request = AuthorizationRequest::new(oauth.redirect_uri.clone())
            .with_client_name(oauth.client_name.clone())
            .with_challenge(challenge);
        request = match &oauth.identity {
            Identity::Dynamic => request,
            Identity::MetadataDocument(url) => request.with_client_metadata_url(url.clone()),
            Identity::Registered { client_id, secret } => {
                let request = request.with_preregistered_client(client_id.clone());
                match secret {
                    Some(secret) => request.with_client_secret(secret.clone()),
                    None => request,
                }
            }
        };
        if !granted.is_empty() {
            request = request.with_scopes(with_challenged(granted, challenge, &self.server_url));
        } else if !oauth.scopes.is_empty() {
            request = request.with_scopes(oauth.scopes.iter().cloned());
        }
        let mut flow = OAuthState::Unauthorized(manager);
        flow.start_authorization(request).await?;
        let url = flow.get_authorization_url().await?;
        let callback = (oauth.authorize)(url)
            .await
            .map_err(AuthError::AuthorizationFailed)?;
        flow.handle_callback_url(&callback).await?;
        let manager = flow.into_authorization_manager().ok_or_else(|| {
            AuthError::InternalError("the authorization ended without a token".to_owned())
        })?;
        state.client = AuthClient::new(plain.clone(), manager);
        state.generation += 1;
        Ok(())
    }
}

/// `granted`, and the scopes `challenge` names that it lacks.
fn with_challenged(mut granted: Vec<String>, challenge: &str, server_url: &str) -> Vec<String> {
    let challenged = reqwest::Url::parse(server_url)
        .ok()
        .and_then(|base| WWWAuthenticateParams::parse(challenge, &base).scope);
    for scope in challenged.iter().flat_map(|s| s.split_whitespace()) {
        if !granted.iter().any(|g| g == scope) {
            granted.push(scope.to_owned());
        }
    }
    granted
}

impl StreamableHttpClient for OAuthBackend {
    type Error = reqwest::Error;

    async fn post_message(
        &self,
        uri: Arc<str>,
        message: ClientJsonRpcMessage,
        session_id: Option<Arc<str>>,
        _auth_header: Option<String>,
        custom_headers: HashMap<HeaderName, HeaderValue>,
    ) -> HttpResult<StreamableHttpPostResponse> {
        let limits = StreamableHttpResponseLimits::default();
        self.post_message_with_response_limits(
            uri,
            message,
            session_id,
            None,
            custom_headers,
            limits,
        )
        .await
    }

    async fn post_message_with_response_limits(
        &self,
        uri: Arc<str>,
        message: ClientJsonRpcMessage,
        session_id: Option<Arc<str>>,
        _auth_header: Option<String>,
        custom_headers: HashMap<HeaderName, HeaderValue>,
        limits: StreamableHttpResponseLimits,
    ) -> HttpResult<StreamableHttpPostResponse> {
        self.authorized(|client| {
            let (uri, message, session, headers) = (
                uri.clone(),
                message.clone(),
                session_id.clone(),
                custom_headers.clone(),
            );
            async move {
                client
                    .post_message_with_response_limits(uri, message, session, None, headers, limits)
                    .await
            }
        })
        .await
    }

    async fn delete_session(
        &self,
        uri: Arc<str>,
        session_id: Arc<str>,
        _auth_header: Option<String>,
        custom_headers: HashMap<HeaderName, HeaderValue>,
    ) -> HttpResult<()> {
        self.authorized(|client| {
            let (uri, session, headers) = (uri.clone(), session_id.clone(), custom_headers.clone());
            async move { client.delete_session(uri, session, None, headers).await }
        })
        .await
    }

    async fn get_stream(
        &self,
        uri: Arc<str>,
        session_id: Option<Arc<str>>,
        last_event_id: Option<String>,
        _auth_header: Option<String>,
        custom_headers: HashMap<HeaderName, HeaderValue>,
    ) -> HttpResult<BoxStream<'static, Result<Sse, SseError>>> {
        let max = StreamableHttpResponseLimits::default().max_sse_event_size;
        self.get_stream_with_max_sse_event_size(
            uri,
            session_id,
            last_event_id,
            None,
            custom_headers,
            max,
        )
        .await
    }

    async fn get_stream_with_max_sse_event_size(
        &self,
        uri: Arc<str>,
        session_id: Option<Arc<str>>,
        last_event_id: Option<String>,
        _auth_header: Option<String>,
        custom_headers: HashMap<HeaderName, HeaderValue>,
        max_sse_event_size: usize,
    ) -> HttpResult<BoxStream<'static, Result<Sse, SseError>>> {
        self.authorized(|client| {
            let (uri, session, last, headers) = (
                uri.clone(),
                session_id.clone(),
                last_event_id.clone(),
                custom_headers.clone(),
            );
            async move {
                client
                    .get_stream_with_max_sse_event_size(
                        uri,
                        session,
                        last,
                        None,
                        headers,
                        max_sse_event_size,
                    )
                    .await
            }
        })
        .await
    }
}

/// rmcp's OAuth HTTP requests (metadata, registration, tokens) over the workspace's reqwest
/// 0.12 client, honouring each request's redirect policy.
struct ReqwestOAuth {
    follow: reqwest::Client,
    stop: reqwest::Client,
}

impl ReqwestOAuth {
    fn new() -> Result<Self, AuthError> {
        let build = |policy| {
            reqwest::Client::builder()
                .timeout(OAUTH_HTTP_TIMEOUT)
                .redirect(policy)
                .build()
                .map_err(|e| AuthError::InternalError(e.to_string()))
        };
        Ok(ReqwestOAuth {
            follow: build(reqwest::redirect::Policy::limited(MAX_REDIRECTS))?,
            stop: build(reqwest::redirect::Policy::none())?,
        })
    }
}

impl OAuthHttpClient for ReqwestOAuth {
    fn execute(&self, request: OAuthHttpRequest) -> OAuthHttpClientFuture<'_> {
        let client = match request.redirect_policy {
            OAuthHttpRedirectPolicy::Stop => &self.stop,
            _ => &self.follow,
        };
        let request = reqwest::Request::try_from(request.request);
        Box::pin(async move {
            let boxed = |e: reqwest::Error| Box::new(e) as OAuthHttpClientError;
            let mut response = client
                .execute(request.map_err(boxed)?)
                .await
                .map_err(boxed)?;
            let mut builder = http::Response::builder()
                .status(response.status())
                .version(response.version());
            for (name, value) in response.headers() {
                builder = builder.header(name, value);
            }
            let mut body = Vec::new();
            while let Some(chunk) = response.chunk().await.map_err(boxed)? {
                if body.len() + chunk.len() > MAX_RESPONSE_BYTES {
                    let error = format!("an OAuth response over {MAX_RESPONSE_BYTES} bytes");
                    return Err(error.into());
                }
                body.extend_from_slice(&chunk);
            }
            builder
                .body(body)
                .map_err(|e| Box::new(e) as OAuthHttpClientError)
        })
    }
}
