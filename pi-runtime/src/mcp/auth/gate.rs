//! The HTTP side of authentication: the bearer token checked before anything else is read,
//! the scope check once the body says which tool is called, and the RFC 9728 metadata.

use std::collections::BTreeSet;
use std::sync::Arc;

use axum::extract::{Request, State};
use axum::http::{HeaderMap, HeaderValue, StatusCode, header};
use axum::middleware::Next;
use axum::response::{IntoResponse, Response};
use axum::routing::get;
use reqwest::Url;
use serde_json::json;

use super::{Authentication, Principal, TokenError};
use crate::mcp::http_server::{Posted, refusal};

/// The JSON-RPC error code of a call the token's scopes do not allow.
const INSUFFICIENT_SCOPE: i32 = -32001;

/// Where RFC 9728 puts a resource's metadata: this, then the resource's own path.
const WELL_KNOWN: &str = "/.well-known/oauth-protected-resource";

/// Authentication as one router serves it: the settings, and the resource URI to use when
/// they name none.
#[derive(Debug)]
pub(in crate::mcp) struct Gate {
    auth: Authentication,
    /// The endpoint's path (`/mcp`).
    path: String,
    /// The resource URI: the settings', else the bound address's; else the request's
    /// `Host` is used.
    resource: Option<String>,
}

impl Gate {
    pub(in crate::mcp) fn new(
        auth: Authentication,
        path: &str,
        bound: Option<String>,
    ) -> Arc<Self> {
        let resource = auth.resource.clone().or(bound);
        Arc::new(Gate {
            auth,
            path: path.to_owned(),
            resource,
        })
    }

    /// The resource URI a request is for.
    fn resource(&self, headers: &HeaderMap) -> String {
        if let Some(resource) = &self.resource {
            return resource.clone();
        }
        let host = headers
            .get(header::HOST)
            .and_then(|host| host.to_str().ok())
            .unwrap_or("localhost");
        format!("http://{host}{}", self.path)
    }

    /// The metadata URL of `resource`: `/.well-known/oauth-protected-resource` inserted
    /// before its path (RFC 9728 §3.1).
    fn metadata_url(resource: &str) -> String {
        let Ok(mut url) = Url::parse(resource) else {
            return WELL_KNOWN.to_owned();
        };
        let path = url.path().trim_end_matches('/').to_owned();
        url.set_path(&format!("{WELL_KNOWN}{path}"));
        url.set_query(None);
        url.set_fragment(None);
        url.to_string()
    }

    /// `401` with the challenge that points a client at the metadata.
    fn challenge(&self, headers: &HeaderMap, refused: Option<&TokenError>) -> Response {
        let metadata = Self::metadata_url(&self.resource(headers));
        let (value, body) = match refused {
            None => (
                format!("Bearer resource_metadata=\"{metadata}\""),
                json!({"error": "invalid_request", "error_description": "a bearer token is required"}),
            ),
            Some(error) => {
                let description = quoted(&error.to_string());
                (
                    format!(
                        "Bearer error=\"invalid_token\", error_description=\"{description}\", \
                         resource_metadata=\"{metadata}\""
                    ),
                    json!({"error": "invalid_token", "error_description": error.to_string()}),
                )
            }
        };
        with_challenge(
            &value,
            (StatusCode::UNAUTHORIZED, axum::Json(body)).into_response(),
        )
    }
}

/// Who sent an authenticated request and what the token may use: what [`authenticate`]
/// leaves in the request's extensions, for the layers after it and the tool server.
#[derive(Debug, Clone)]
pub(in crate::mcp) struct Caller {
    principal: Arc<Principal>,
    gate: Arc<Gate>,
}

impl Caller {
    /// Whom the token stands for.
    pub(in crate::mcp) fn principal(&self) -> &Principal {
        &self.principal
    }

    /// Whether the token may see and call the tool named `tool`.
    pub(in crate::mcp) fn allows(&self, tool: &str) -> bool {
        self.gate.auth.allows(&self.principal, tool)
    }

    /// The scopes calling `tool` needs that the token lacks; `None` when it may call it.
    fn lacks(&self, tool: &str) -> Option<&BTreeSet<String>> {
        self.gate
            .auth
            .required_for(tool)
            .filter(|required| !self.principal.has_all(*required))
    }
}

/// The first layer: a request without a bearer token the verifier accepts goes no further.
/// The [`Caller`] rides on in the request's extensions.
pub(in crate::mcp) async fn authenticate(
    State(gate): State<Arc<Gate>>,
    mut request: Request,
    next: Next,
) -> Response {
    let Some(token) = bearer(request.headers()).map(str::to_owned) else {
        return gate.challenge(request.headers(), None);
    };
    match gate.auth.verifier.verify(&token).await {
        Ok(principal) => {
            let caller = Caller {
                principal: Arc::new(principal),
                gate: Arc::clone(&gate),
            };
            request.extensions_mut().insert(caller);
            next.run(request).await
        }
        Err(TokenError::Unavailable(reason)) => {
            tracing::warn!(%reason, "a request was refused: tokens cannot be checked");
            (
                StatusCode::SERVICE_UNAVAILABLE,
                [(header::RETRY_AFTER, "5")],
                axum::Json(
                    json!({"error": "temporarily_unavailable", "error_description": reason}),
                ),
            )
                .into_response()
        }
        Err(error) => gate.challenge(request.headers(), Some(&error)),
    }
}

/// After the body check: a `tools/call` of a tool whose scopes the token lacks gets `403`
/// with `insufficient_scope` and the scopes it needs.
pub(in crate::mcp) async fn authorize(
    State(gate): State<Arc<Gate>>,
    request: Request,
    next: Next,
) -> Response {
    let caller = request.extensions().get::<Caller>();
    let posted = request.extensions().get::<Posted>();
    let missing = match (caller, posted) {
        (
            Some(caller),
            Some(Posted {
                tool: Some(tool), ..
            }),
        ) => caller.lacks(tool).map(|required| (tool.clone(), required)),
        _ => None,
    };
    let Some((tool, required)) = missing else {
        return next.run(request).await;
    };
    let scopes = required
        .iter()
        .map(String::as_str)
        .collect::<Vec<_>>()
        .join(" ");
    let metadata = Gate::metadata_url(&gate.resource(request.headers()));
    let value = format!(
        "Bearer error=\"insufficient_scope\", scope=\"{}\", resource_metadata=\"{metadata}\"",
        quoted(&scopes)
    );
    let id = posted.and_then(|posted| posted.id.as_ref());
    let message =
        format!("The token may not call the tool \"{tool}\": it needs the scopes {scopes}");
    let refused = refusal(StatusCode::FORBIDDEN, INSUFFICIENT_SCOPE, id, &message);
    with_challenge(&value, refused)
}

/// The RFC 9728 metadata, at the well-known path and at the well-known path followed by the
/// endpoint's (what a client derives from the resource URI).
pub(in crate::mcp) fn metadata_router(gate: Arc<Gate>) -> axum::Router {
    let path = gate.path.trim_end_matches('/').to_owned();
    let router = axum::Router::new().route(WELL_KNOWN, get(metadata));
    let router = if path.is_empty() {
        router
    } else {
        router.route(&format!("{WELL_KNOWN}{path}"), get(metadata))
    };
    router.with_state(gate)
}

async fn metadata(State(gate): State<Arc<Gate>>, headers: HeaderMap) -> Response {
    let auth = &gate.auth;
    let mut document = json!({
        "resource": gate.resource(&headers),
        "bearer_methods_supported": ["header"],
    });
    if !auth.authorization_servers.is_empty() {
        document["authorization_servers"] = json!(auth.authorization_servers);
    }
    let scopes = auth.scopes();
    if !scopes.is_empty() {
        document["scopes_supported"] = json!(scopes);
    }
    axum::Json(document).into_response()
}

/// The token of an `Authorization: Bearer <token>` header (the scheme in any case).
fn bearer(headers: &HeaderMap) -> Option<&str> {
    let value = headers.get(header::AUTHORIZATION)?.to_str().ok()?;
    let (scheme, token) = value.split_once(' ')?;
    let token = token.trim();
    (scheme.eq_ignore_ascii_case("bearer") && !token.is_empty()).then_some(token)
}

/// `text` fit for a quoted header parameter.
fn quoted(text: &str) -> String {
    text.chars()
        .map(|c| match c {
            '"' | '\\' => '\'',
            c if c.is_ascii_graphic() || c == ' ' => c,
            _ => '?',
        })
        .collect()
}

/// `response` with `challenge` as its `WWW-Authenticate` header.
fn with_challenge(challenge: &str, mut response: Response) -> Response {
    if let Ok(value) = HeaderValue::from_str(challenge) {
        response
            .headers_mut()
            .insert(header::WWW_AUTHENTICATE, value);
    }
    response
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_metadata_url_puts_the_well_known_path_before_the_resource_path() {
        assert_eq!(
            Gate::metadata_url("https://tools.example.com/mcp"),
            "https://tools.example.com/.well-known/oauth-protected-resource/mcp"
        );
        assert_eq!(
            Gate::metadata_url("http://127.0.0.1:8000/"),
            "http://127.0.0.1:8000/.well-known/oauth-protected-resource"
        );
        assert_eq!(
            Gate::metadata_url("https://h.example/a/b?x=1"),
            "https://h.example/.well-known/oauth-protected-resource/a/b"
        );
    }

    #[test]
    fn only_a_bearer_header_with_a_token_counts() {
        let headers = |value: &str| {
            let mut headers = HeaderMap::new();
            headers.insert(
                header::AUTHORIZATION,
                HeaderValue::from_str(value).expect("a value"),
            );
            headers
        };
        assert_eq!(bearer(&headers("Bearer abc")), Some("abc"));
        assert_eq!(bearer(&headers("bearer  abc ")), Some("abc"));
        assert_eq!(bearer(&headers("Basic abc")), None);
        assert_eq!(bearer(&headers("Bearer ")), None);
        assert_eq!(bearer(&HeaderMap::new()), None);
    }
}
