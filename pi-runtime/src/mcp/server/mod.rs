//! The tool server: our tools as an rmcp `ServerHandler`, serving `tools/list` and
//! `tools/call` with the agent loop's own pipeline. Its settings, and serving it over stdio;
//! streamable HTTP is [`HttpServing`](super::HttpServing)'s side.

mod client;
mod completion;
mod context;
mod handler;
mod listing;
mod prompts;
mod resources;
mod round_trip;
mod session;

use std::fmt;
use std::sync::Arc;

use rmcp::ServiceExt;
use rmcp::model::Tool as McpTool;
use serde_json::Value;
use tokio::io::{AsyncRead, AsyncWrite};

pub use self::client::{AskError, ClientFeature, ConnectedClient, NoConnectedClient};
use self::context::CallContext;
pub use self::prompts::{Prompt, PromptMessage, PromptResult, PromptRole};
pub use self::resources::{ReadResult, Resource, ResourceTemplate, TemplateError};
use self::round_trip::RequestStates;
use self::session::{Session, Sessions};
use super::auth::Principal;
use super::{McpError, errors};
use crate::agent::approval::{PauseLedger, process_ledger};
use crate::agent::dispatch::{Lane, Policies};
use crate::agent::turn_tools::TurnTools;
use crate::agent::{Hooks, ToolPolicies};
use crate::tool::{ToolHints, ToolRegistry, ToolSet};

/// Serves a [`ToolSet`] to MCP clients: `tools/list` and `tools/call` (with the agent loop's
/// prepare, coerce, validate and execute steps, and its error texts), over stdio
/// ([`serve_stdio`](Self::serve_stdio)) or streamable HTTP ([`serve_http`](Self::serve_http),
/// [`router`](Self::router), configured by [`HttpServing`](super::HttpServing)).
///
/// What is served (tools, hooks, policies, name, instructions, hints, page size, each call's
/// context) is set here, the same for every transport.
///
/// Cloning is cheap; clones share the tools and the lock that keeps sequential tools one at a
/// time across every connection.
///
/// ```
/// use pi_runtime::mcp::{HttpServing, McpServer};
/// use pi_runtime::tool::ToolHints;
/// use pi_runtime::tool;
///
/// /// Add two numbers.
/// #[tool]
/// async fn add(a: f64, b: f64) -> String {
///     (a + b).to_string()
/// }
///
/// # #[tokio::main(flavor = "current_thread")]
/// # async fn main() -> Result<(), pi_runtime::mcp::McpError> {
/// let server = McpServer::new((Add,))?
///     .with_name("calculator", "1.0.0")
///     .with_hints("add", ToolHints::new().read_only(true));
/// // Serve it on a loopback port; `serve_stdio` serves standard input and output instead.
/// let addr = "127.0.0.1:0".parse().expect("an address");
/// let http = server.serve_http(addr, HttpServing::default()).await?;
/// println!("MCP endpoint: {}", http.url());
/// http.shutdown().await;
/// # Ok(())
/// # }
/// ```
#[derive(Clone)]
pub struct McpServer {
    inner: Arc<ServerInner>,
    /// What the client of this connection asked for (its log level, its subscriptions).
    session: Arc<Session>,
}

struct ServerInner {
    tools: Arc<TurnTools>,
    hooks: Arc<Hooks>,
    /// The tools' execution policies, for every call of every connection.
    policies: Arc<Policies>,
    listed: Vec<McpTool>,
    name: String,
    version: String,
    instructions: Option<String>,
    /// Tools per `tools/list` page; all in one page when `None`.
    page_size: Option<usize>,
    /// How each call's context is made from its caller; `None`: calls run without one.
    context: Option<CallContext>,
    /// Sequential tools run alone across every connection.
    lane: Lane,
    resources: Vec<Resource>,
    templates: Vec<ResourceTemplate>,
    prompts: Vec<Prompt>,
    /// Seals the answers of a 2026-07-28 round trip into its `requestState`.
    request_states: Arc<RequestStates>,
    /// Every connection's session, for the notices of a resource's change.
    sessions: Arc<Sessions>,
    /// Where the approvals given over 2026-07-28 round trips are claimed, once each.
    pause_ledger: Arc<dyn PauseLedger>,
}

impl ServerInner {
    /// The same settings, with a lane of its own.
    fn copy(&self) -> Self {
        ServerInner {
            tools: Arc::clone(&self.tools),
            hooks: Arc::clone(&self.hooks),
            policies: Arc::clone(&self.policies),
            listed: self.listed.clone(),
            name: self.name.clone(),
            version: self.version.clone(),
            instructions: self.instructions.clone(),
            page_size: self.page_size,
            context: self.context.clone(),
            lane: Lane::default(),
            resources: self.resources.clone(),
            templates: self.templates.clone(),
            prompts: self.prompts.clone(),
            request_states: Arc::clone(&self.request_states),
            sessions: Arc::default(),
            pause_ledger: Arc::clone(&self.pause_ledger),
        }
    }
}

impl fmt::Debug for McpServer {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("McpServer")
            .field("name", &self.inner.name)
            .field("tools", &self.inner.tools)
            .finish_non_exhaustive()
    }
}

impl McpServer {
    /// A server for these tools (anything `Agent::builder().tools(..)` takes). Every schema is
    /// compiled here.
    ///
    /// # Errors
    /// [`McpError::Registry`]: two tools share a name, or a schema does not compile.
    pub fn new(tools: impl ToolSet) -> Result<Self, McpError> {
        let tools = TurnTools::active(Arc::new(ToolRegistry::new(tools)?));
        let listed = tools.offered().map(listing::listed_tool).collect();
        Ok(McpServer {
            inner: Arc::new(ServerInner {
                tools: Arc::new(tools),
                hooks: Arc::new(Hooks::default()),
                policies: Arc::default(),
                listed,
                name: "pi-runtime".to_owned(),
                version: env!("CARGO_PKG_VERSION").to_owned(),
                instructions: None,
                page_size: None,
                context: None,
                lane: Lane::default(),
                resources: Vec::new(),
                templates: Vec::new(),
                prompts: Vec::new(),
                request_states: Arc::new(RequestStates::random()),
                sessions: Arc::default(),
                pause_ledger: process_ledger(),
            }),
            session: Arc::default(),
        })
    }

    /// Run these hooks around every call, as an agent does: `before_tool_call` may block
    /// or rewrite a call, `after_tool_call` may patch its result. Give it an agent's hooks
    /// ([`Agent::hooks`](crate::agent::Agent::hooks)) to serve its tools under the same
    /// rules. The turn hooks are not used: a server has no turns. The hooks see each call's
    /// context ([`with_context`](Self::with_context)) as
    /// [`BeforeToolCall::context`](crate::agent::BeforeToolCall::context).
    #[must_use]
    pub fn with_hooks(mut self, hooks: Hooks) -> Self {
        self.inner_mut().hooks = Arc::new(hooks);
        self
    }

    /// Run every call under these execution policies (see
    /// [`ToolPolicy`](crate::tool::ToolPolicy)). Give it an agent's
    /// ([`Agent::tool_policies`](crate::agent::Agent::tool_policies)) to serve its tools as the
    /// agent runs them: its default timeout, retry budget and output cap for the tools that set
    /// none, its output saver, and its named concurrency limits, whose permits the served calls
    /// and the agent's own calls then share. Without it, each tool's own policy applies, with
    /// limits of the server's own. A limit keeps the permits it was made with. Retry budgets
    /// count the failed calls of one run, and a served call is part of none.
    #[must_use]
    pub fn with_tool_policies(mut self, policies: ToolPolicies) -> Self {
        self.inner_mut().policies = policies.inner;
        self
    }

    /// Give every call a context made from its caller, as an agent's run gives one
    /// ([`Ctx`](crate::Ctx)): a tool's `Ctx<T>` parameter receives a clone of what `make`
    /// returns, and the hooks see it ([`with_hooks`](Self::with_hooks)).
    ///
    /// `make` runs once per `tools/call`, with the [`Principal`] the request's bearer token
    /// stands for over authenticated streamable HTTP
    /// ([`HttpServing::with_authentication`](super::HttpServing::with_authentication)), and
    /// with `None` where nothing authenticates the caller: stdio (whoever started the process
    /// owns it) and HTTP served without authentication. What a call without a principal may
    /// do is `make`'s to decide: give it an anonymous value, or one the tools refuse.
    ///
    /// Without a context, a tool reading `Ctx<T>` fails each call with an error saying it
    /// has none.
    ///
    /// ```
    /// use pi_runtime::mcp::auth::{Authentication, Principal, StaticTokens};
    /// use pi_runtime::mcp::{HttpServing, McpClient, McpServer};
    /// use pi_runtime::{AgentTool, Ctx, ToolContext, tool};
    /// use serde_json::json;
    ///
    /// /// Who is calling: a token's subject, or nobody.
    /// #[derive(Clone)]
    /// struct Caller(Option<String>);
    ///
    /// /// Say whom the call comes from.
    /// #[tool]
    /// async fn whoami(Ctx(caller): Ctx<Caller>) -> String {
    ///     caller.0.unwrap_or_else(|| "anonymous".to_owned())
    /// }
    ///
    /// # #[tokio::main(flavor = "current_thread")]
    /// # async fn main() -> Result<(), Box<dyn std::error::Error>> {
    /// let server = McpServer::new((Whoami,))?.with_context(|principal: Option<&Principal>| {
    ///     Caller(principal.map(|p| p.subject.clone()))
    /// })?;
    /// let token = "a-long-random-service-token";
    /// let tokens = StaticTokens::new().with_token(token, Principal::new("billing"));
    /// let options = HttpServing::default().with_authentication(Authentication::new(tokens));
    /// let http = server.serve_http("127.0.0.1:0".parse()?, options).await?;
    ///
    /// let client = McpClient::builder("s").bearer_token(token).http(http.url()).await?;
    /// let whoami = &client.tools()[0];
    /// let call = whoami.execute("c1".into(), json!({}), ToolContext::detached("c1"));
    /// let result = call.await.map_err(|e| e.to_string())?;
    /// assert_eq!(result.text_content(), "billing");
    /// http.shutdown().await;
    /// # Ok(())
    /// # }
    /// ```
    ///
    /// # Errors
    /// [`McpError::ContextType`]: a tool reads a context of another type than `T`.
    pub fn with_context<T, F>(mut self, make: F) -> Result<Self, McpError>
    where
        T: Send + Sync + 'static,
        F: Fn(Option<&Principal>) -> T + Send + Sync + 'static,
    {
        let context = CallContext::new(make);
        context.check(self.inner.tools.registry())?;
        self.inner_mut().context = Some(context);
        Ok(self)
    }

    /// The name and version clients see in `initialize` (default: `pi-runtime` and this
    /// crate's version).
    #[must_use]
    pub fn with_name(mut self, name: impl Into<String>, version: impl Into<String>) -> Self {
        let inner = self.inner_mut();
        inner.name = name.into();
        inner.version = version.into();
        self
    }

    /// Instructions clients may give their model.
    #[must_use]
    pub fn with_instructions(mut self, instructions: impl Into<String>) -> Self {
        self.inner_mut().instructions = Some(instructions.into());
        self
    }

    /// List the tools `size` at a time: `tools/list` then answers with pages and a
    /// `nextCursor` (default: every tool in one page). Zero counts as one.
    #[must_use]
    pub fn with_page_size(mut self, size: usize) -> Self {
        self.inner_mut().page_size = Some(size.max(1));
        self
    }

    /// List `hints` as the behaviour hints of the tool named `tool`, in place of the tool's
    /// own ([`ToolSettings::hints`](crate::tool::ToolSettings::hints), listed by default): a
    /// hint `hints` leaves unset is not listed. Ignored when there is no such tool.
    #[must_use]
    pub fn with_hints(mut self, tool: &str, hints: ToolHints) -> Self {
        if let Some(listed) = self.inner_mut().listed.iter_mut().find(|t| t.name == tool) {
            listing::set_hints(listed, hints);
        }
        self
    }

    /// Serve `resource` (`resources/list`, `resources/read`; `resources/subscribe` up to
    /// 2025-11-25, with [`resource_updated`](Self::resource_updated) telling subscribers).
    #[must_use]
    pub fn with_resource(mut self, resource: Resource) -> Self {
        self.inner_mut().resources.push(resource);
        self
    }

    /// Serve the resources `template` names (`resources/templates/list`, `resources/read`,
    /// and `completion/complete` for its variables).
    #[must_use]
    pub fn with_resource_template(mut self, template: ResourceTemplate) -> Self {
        self.inner_mut().templates.push(template);
        self
    }

    /// Serve `prompt` (`prompts/list`, `prompts/get`, and `completion/complete` for its
    /// arguments).
    #[must_use]
    pub fn with_prompt(mut self, prompt: Prompt) -> Self {
        self.inner_mut().prompts.push(prompt);
        self
    }

    /// Seal the `requestState` of 2026-07-28 round trips ([`ConnectedClient`]) with `key`
    /// (at least 32 bytes) instead of a key of this process's own: every instance that
    /// serves the same clients (a [`Cluster`](super::Cluster), a restart) must share it, so
    /// that a client's answers open on whichever instance gets them.
    ///
    /// # Errors
    /// [`McpError::RequestStateKey`]: the key is shorter than 32 bytes.
    pub fn with_request_state_key(mut self, key: impl Into<Vec<u8>>) -> Result<Self, McpError> {
        self.inner_mut().request_states = Arc::new(RequestStates::with_key(key.into())?);
        Ok(self)
    }

    /// Claim the approvals given over 2026-07-28 round trips in `ledger` (default: one in
    /// this process's memory). A tool that needs approval
    /// ([`ToolSettings::approval`](crate::tool::ToolSettings::approval)) asks the client for
    /// it before it runs; on 2026-07-28 the answer comes back with the question's
    /// `requestState`, and the ledger makes sure each such state runs the call once. Instances
    /// that serve the same clients share one ([`FileLedger`](crate::agent::approval::FileLedger)
    /// on storage they all reach).
    #[must_use]
    pub fn with_pause_ledger(mut self, ledger: Arc<dyn PauseLedger>) -> Self {
        self.inner_mut().pause_ledger = ledger;
        self
    }

    /// Tell every client subscribed to `uri` (`resources/subscribe`) that it changed. A
    /// client that went away is skipped.
    pub async fn resource_updated(&self, uri: &str) {
        self.inner.sessions.resource_updated(uri).await;
    }

    /// The same server, for a new connection: a session of its own.
    pub(crate) fn for_session(&self) -> Self {
        let session = Arc::new(Session::default());
        self.inner.sessions.add(&session);
        McpServer {
            inner: Arc::clone(&self.inner),
            session,
        }
    }

    /// The builder methods run before the server is shared; a clone made earlier keeps the
    /// old settings.
    fn inner_mut(&mut self) -> &mut ServerInner {
        if Arc::get_mut(&mut self.inner).is_none() {
            self.inner = Arc::new(self.inner.copy());
        }
        Arc::get_mut(&mut self.inner).unwrap_or_else(|| unreachable!("just made unique"))
    }

    /// The `tools/list` entries, in registration order.
    pub fn listed_tools(&self) -> Vec<Value> {
        self.inner
            .listed
            .iter()
            .map(|tool| serde_json::to_value(tool).unwrap_or(Value::Null))
            .collect()
    }

    /// Serve standard input and output until the client closes them. Calls have no
    /// principal: a [`with_context`](Self::with_context) function is given `None`.
    ///
    /// # Errors
    /// The connection failed before or during initialization.
    pub async fn serve_stdio(self) -> Result<(), McpError> {
        self.serve_io(tokio::io::stdin(), tokio::io::stdout()).await
    }

    /// Serve one connection over a byte stream pair (a pipe, a socket, a
    /// `tokio::io::duplex`) until it closes. Calls have no principal, as over stdio.
    ///
    /// # Errors
    /// The connection failed before or during initialization.
    pub async fn serve_io<R, W>(self, reader: R, writer: W) -> Result<(), McpError>
    where
        R: AsyncRead + Send + Unpin + 'static,
        W: AsyncWrite + Send + Unpin + 'static,
    {
        let running = self
            .for_session()
            .serve((reader, writer))
            .await
            .map_err(|e| McpError::Connect(errors::server_init(&e)))?;
        running
            .waiting()
            .await
            .map_err(|e| McpError::Connect(format!("the connection's task failed: {e}")))?;
        Ok(())
    }
}
