//! Resources a server serves: fixed ones, read ones, and templates whose variables come from
//! the URI a client reads, typed like a tool's arguments.

use std::collections::HashMap;
use std::fmt;
use std::future::Future;
use std::sync::Arc;

use futures::FutureExt;
use futures::future::BoxFuture;
use rmcp::model;
use serde::de::DeserializeOwned;
use serde_json::{Map, Value};

use super::client::ConnectedClient;
use super::completion::Completer;
use crate::message::EmbeddedResource;
use crate::tool::ToolError;

/// What reading a resource gives: its contents (usually one).
pub type ReadResult = Result<Vec<EmbeddedResource>, ToolError>;

type Read = Arc<dyn Fn(ResourceRead) -> BoxFuture<'static, ReadResult> + Send + Sync>;

/// One read of a resource: the URI the client read, the template's variables taken from it,
/// and the client, to ask it questions.
pub(crate) struct ResourceRead {
    pub(crate) uri: String,
    pub(crate) variables: Map<String, Value>,
    pub(crate) client: ConnectedClient,
}

/// A resource at one URI, listed in `resources/list`.
///
/// ```
/// use pi_runtime::mcp::Resource;
/// use pi_runtime::message::EmbeddedResource;
///
/// let notes = Resource::text("notes://today", "today", "text/plain", "Buy milk.")
///     .with_description("Today's notes");
/// let clock = Resource::new("clock://now", "now", |uri, _client| async move {
///     Ok(vec![EmbeddedResource::text(uri, "text/plain", "12:00")])
/// });
/// # let _ = (notes, clock);
/// ```
#[derive(Clone)]
pub struct Resource {
    pub(crate) listed: model::Resource,
    read: Read,
}

impl fmt::Debug for Resource {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Resource")
            .field("uri", &self.listed.uri)
            .finish_non_exhaustive()
    }
}

impl Resource {
    /// A resource whose contents `read` makes on each read, given the URI and the client.
    pub fn new<F, Fut>(uri: impl Into<String>, name: impl Into<String>, read: F) -> Self
    where
        F: Fn(String, ConnectedClient) -> Fut + Send + Sync + 'static,
        Fut: Future<Output = ReadResult> + Send + 'static,
    {
        let read: Read =
            Arc::new(move |request: ResourceRead| read(request.uri, request.client).boxed());
        Resource {
            listed: model::Resource::new(uri, name),
            read,
        }
    }

    /// A resource that always reads as `text`.
    pub fn text(
        uri: impl Into<String>,
        name: impl Into<String>,
        mime_type: impl Into<String>,
        text: impl Into<String>,
    ) -> Self {
        let (uri, mime_type) = (uri.into(), mime_type.into());
        let contents = EmbeddedResource::text(uri.clone(), mime_type.clone(), text);
        Resource::fixed(uri, name.into(), mime_type, contents)
    }

    /// A resource that always reads as these bytes, given base64-encoded.
    pub fn blob(
        uri: impl Into<String>,
        name: impl Into<String>,
        mime_type: impl Into<String>,
        base64: impl Into<String>,
    ) -> Self {
        let (uri, mime_type) = (uri.into(), mime_type.into());
        let contents = EmbeddedResource::blob(uri.clone(), mime_type.clone(), base64);
        Resource::fixed(uri, name.into(), mime_type, contents)
    }

    fn fixed(uri: String, name: String, mime_type: String, contents: EmbeddedResource) -> Self {
        Resource::new(uri, name, move |_, _| {
            std::future::ready(Ok(vec![contents.clone()]))
        })
        .with_mime_type(mime_type)
    }

    /// The description clients see.
    #[must_use]
    pub fn with_description(mut self, description: impl Into<String>) -> Self {
        self.listed.description = Some(description.into());
        self
    }

    /// The MIME type clients see.
    #[must_use]
    pub fn with_mime_type(mut self, mime_type: impl Into<String>) -> Self {
        self.listed.mime_type = Some(mime_type.into());
        self
    }

    pub(crate) fn uri(&self) -> &str {
        &self.listed.uri
    }

    pub(crate) fn read(&self, request: ResourceRead) -> BoxFuture<'static, ReadResult> {
        (self.read)(request)
    }
}

/// Resources named by a URI template (RFC 6570, simple `{variable}` expansion): reading
/// `test://items/42` through `test://items/{id}` gives the read function `{"id": "42"}` as its
/// typed variables `T`, deserialized like a tool's arguments.
///
/// ```
/// use pi_runtime::mcp::ResourceTemplate;
/// use pi_runtime::message::EmbeddedResource;
/// use serde::Deserialize;
///
/// #[derive(Deserialize)]
/// struct Item {
///     id: String,
/// }
///
/// let items = ResourceTemplate::new("test://items/{id}", "item", |uri, item: Item, _client| async move {
///     Ok(vec![EmbeddedResource::text(uri, "text/plain", format!("item {}", item.id))])
/// })
/// .expect("a simple template")
/// .with_completion("id", |partial: &str| vec![format!("{partial}0"), format!("{partial}1")]);
/// # let _ = items;
/// ```
#[derive(Clone)]
pub struct ResourceTemplate {
    pub(crate) listed: model::ResourceTemplate,
    pattern: UriPattern,
    read: Read,
    pub(crate) completions: HashMap<String, Completer>,
}

impl fmt::Debug for ResourceTemplate {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("ResourceTemplate")
            .field("uri_template", &self.listed.uri_template)
            .finish_non_exhaustive()
    }
}

/// Why a URI template was refused.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("unsupported URI template \"{template}\": {reason}")]
pub struct TemplateError {
    template: String,
    reason: &'static str,
}

impl ResourceTemplate {
    /// A template whose reads `read` answers, given the URI, its variables as `T`, and the
    /// client.
    ///
    /// # Errors
    /// [`TemplateError`]: the template uses more than simple `{variable}` expansion, or puts
    /// two variables side by side.
    pub fn new<T, F, Fut>(
        uri_template: impl Into<String>,
        name: impl Into<String>,
        read: F,
    ) -> Result<Self, TemplateError>
    where
        T: DeserializeOwned + Send + 'static,
        F: Fn(String, T, ConnectedClient) -> Fut + Send + Sync + 'static,
        Fut: Future<Output = ReadResult> + Send + 'static,
    {
        let uri_template = uri_template.into();
        let pattern = UriPattern::parse(&uri_template)?;
        let read = Arc::new(read);
        let read: Read = Arc::new(move |request: ResourceRead| {
            match serde_json::from_value::<T>(Value::Object(request.variables)) {
                Ok(variables) => read(request.uri, variables, request.client).boxed(),
                Err(error) => {
                    let error = ToolError::invalid_arguments(format!(
                        "The URI {} does not fit the template: {error}",
                        request.uri
                    ));
                    std::future::ready(Err(error)).boxed()
                }
            }
        });
        Ok(ResourceTemplate {
            listed: model::ResourceTemplate::new(uri_template, name),
            pattern,
            read,
            completions: HashMap::new(),
        })
    }

    /// The description clients see.
    #[must_use]
    pub fn with_description(mut self, description: impl Into<String>) -> Self {
        self.listed.description = Some(description.into());
        self
    }

    /// The MIME type of every resource the template names.
    #[must_use]
    pub fn with_mime_type(mut self, mime_type: impl Into<String>) -> Self {
        self.listed.mime_type = Some(mime_type.into());
        self
    }

    /// Suggest values for `variable` as a client types it (`completion/complete`): `complete`
    /// gets what was typed so far and returns candidates, best first.
    #[must_use]
    pub fn with_completion(
        mut self,
        variable: impl Into<String>,
        complete: impl Fn(&str) -> Vec<String> + Send + Sync + 'static,
    ) -> Self {
        self.completions
            .insert(variable.into(), Completer::new(complete));
        self
    }

    /// The variables of `uri` when the template names it.
    pub(crate) fn matches(&self, uri: &str) -> Option<Map<String, Value>> {
        self.pattern.matches(uri)
    }

    pub(crate) fn read(&self, request: ResourceRead) -> BoxFuture<'static, ReadResult> {
        (self.read)(request)
    }
}

/// A level-1 URI template as literal text and variables, alternating.
#[derive(Clone, Debug)]
struct UriPattern {
    /// The text before each variable, then the text after the last.
    literals: Vec<String>,
    variables: Vec<String>,
}

impl UriPattern {
    fn parse(template: &str) -> Result<Self, TemplateError> {
        let refuse = |reason| TemplateError {
            template: template.to_owned(),
            reason,
        };
        let mut literals = Vec::new();
        let mut variables = Vec::new();
        let mut rest = template;
        while let Some(open) = rest.find('{') {
            let close = rest[open..]
                .find('}')
                .map(|at| open + at)
                .ok_or_else(|| refuse("a `{` is never closed"))?;
            let name = &rest[open + 1..close];
            let simple = !name.is_empty()
                && name
                    .chars()
                    .all(|c| c.is_ascii_alphanumeric() || c == '_' || c == '.');
            if !simple {
                return Err(refuse("only simple `{name}` variables are supported"));
            }
            if open == 0 && !variables.is_empty() {
                return Err(refuse("two variables side by side cannot be told apart"));
            }
            literals.push(rest[..open].to_owned());
            variables.push(name.to_owned());
            rest = &rest[close + 1..];
        }
        if rest.contains('}') {
            return Err(refuse("a `}` is never opened"));
        }
        literals.push(rest.to_owned());
        Ok(UriPattern {
            literals,
            variables,
        })
    }

    /// Each variable matches the shortest text, without `/`, up to the literal after it.
    fn matches(&self, uri: &str) -> Option<Map<String, Value>> {
        let mut rest = uri.strip_prefix(self.literals[0].as_str())?;
        let mut values = Map::new();
        for (name, after) in self.variables.iter().zip(&self.literals[1..]) {
            let end = if after.is_empty() {
                rest.len()
            } else {
                rest.find(after.as_str())?
            };
            let value = &rest[..end];
            if value.is_empty() || value.contains('/') {
                return None;
            }
            values.insert(name.clone(), Value::String(value.to_owned()));
            rest = &rest[end + after.len()..];
        }
        rest.is_empty().then_some(values)
    }
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;

    #[test]
    fn templates_match_their_uris_only() {
        let pattern = UriPattern::parse("test://template/{id}/data").expect("simple");
        assert_eq!(
            pattern.matches("test://template/123/data"),
            json!({"id": "123"}).as_object().cloned()
        );
        for other in [
            "test://template/123/data/x",
            "test://template//data",
            "test://template/1/2/data",
            "test://other/1/data",
        ] {
            assert_eq!(pattern.matches(other), None, "{other}");
        }
        let two = UriPattern::parse("db://{table}/{row}").expect("simple");
        assert_eq!(
            two.matches("db://users/7"),
            json!({"table": "users", "row": "7"}).as_object().cloned()
        );
        for refused in ["x://{+path}", "x://{a}{b}", "x://{a", "x://a}", "x://{}"] {
            assert!(UriPattern::parse(refused).is_err(), "{refused}");
        }
    }
}
