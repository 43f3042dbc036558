//! Extractors: `#[tool]` parameters built from the call by `FromToolContext` rather than sent
//! by the model. A type of the user's is one with `#[tool(extract)]` and no change to the
//! macro; so is an alias of `Ctx<T>`. Its rejection is the call's error result, its context
//! type is checked by the agent like a `Ctx<T>`'s, and a user type that merely shares a
//! built-in's name stays a plain argument.

use std::sync::Arc;

use pi_runtime::agent::{Agent, AgentError, BuildError};
use pi_runtime::provider::faux::{FauxModel, FauxResponse};
use pi_runtime::tool::{ContextType, FromToolContext, ToolErrorKind};
use pi_runtime::{AgentTool, Ctx, Message, ToolContext, ToolDefinition, ToolError, tool};
use serde_json::{Value, json};

/// The account a run acts for: the run's context.
#[derive(Debug)]
struct Account {
    user: String,
    admin: bool,
}

fn account(user: &str, admin: bool) -> Arc<Account> {
    Arc::new(Account {
        user: user.to_owned(),
        admin,
    })
}

/// An extractor of the test's own: the run's account, when it may call the tool, with the
/// call's id.
struct Admin {
    account: Arc<Account>,
    call_id: String,
}

impl FromToolContext for Admin {
    type Rejection = ToolError;

    fn from_tool_context(ctx: &ToolContext, tool: &str) -> Result<Self, ToolError> {
        match ctx.context::<Arc<Account>>() {
            Some(account) if account.admin => Ok(Admin {
                account: Arc::clone(account),
                call_id: ctx.call_id().to_owned(),
            }),
            Some(account) => Err(ToolError::retry(format!(
                "{} may not call {tool}",
                account.user
            ))),
            None => Err(ToolError::new("this call acts for no account")),
        }
    }

    fn context_type() -> Option<ContextType> {
        Some(ContextType::of::<Arc<Account>>())
    }
}

/// Drop a table.
#[tool]
async fn drop_table(
    /// The table.
    table: String,
    #[tool(extract)] admin: Admin,
) -> String {
    format!(
        "{} dropped {table} in call {}",
        admin.account.user, admin.call_id
    )
}

/// The run's account, through an alias of `Ctx<T>`.
type Caller = Ctx<Arc<Account>>;

/// Who is calling?
#[tool]
async fn whoami(#[tool(extract)] Ctx(caller): Caller) -> String {
    caller.user.clone()
}

fn with_account(call_id: &str, account: Arc<Account>) -> ToolContext {
    ToolContext::detached(call_id).with_run_context(pi_runtime::tool::RunContext::new(account))
}

async fn call(tool: &impl AgentTool, args: Value, ctx: ToolContext) -> Result<String, ToolError> {
    let call_id = ctx.call_id().to_owned();
    tool.execute(call_id, args, ctx)
        .await
        .map(|result| result.text_content())
}

#[tokio::test]
async fn a_custom_extractor_reads_the_run_context_and_the_call() {
    let result = call(
        &DropTable,
        json!({"table": "users"}),
        with_account("c7", account("ada", true)),
    )
    .await;
    assert_eq!(result, Ok("ada dropped users in call c7".to_owned()));
}

#[tokio::test]
async fn an_extractor_is_no_argument_of_the_schema() {
    assert_eq!(
        *DropTable.definition().parameters,
        json!({
            "type": "object",
            "properties": {"table": {"type": "string", "description": "The table."}},
            "required": ["table"],
            "additionalProperties": false
        })
    );
    assert_eq!(
        *Whoami.definition().parameters,
        json!({"type": "object", "properties": {}, "required": [], "additionalProperties": false})
    );
}

#[tokio::test]
async fn a_rejection_is_the_calls_error_and_keeps_its_kind() {
    let refused = call(
        &DropTable,
        json!({"table": "users"}),
        with_account("c1", account("bob", false)),
    )
    .await
    .unwrap_err();
    assert_eq!(refused.message(), "bob may not call drop_table");
    assert_eq!(refused.kind(), ToolErrorKind::Retry);

    let without = call(
        &DropTable,
        json!({"table": "users"}),
        ToolContext::detached("c2"),
    )
    .await
    .unwrap_err();
    assert_eq!(without.message(), "this call acts for no account");
    assert_eq!(without.kind(), ToolErrorKind::Failed);
}

#[tokio::test]
async fn the_arguments_are_checked_before_the_extractors_run() {
    let error = call(&DropTable, json!({}), ToolContext::detached("c1"))
        .await
        .unwrap_err();
    assert_eq!(error.kind(), ToolErrorKind::InvalidArguments);
}

#[tokio::test]
async fn an_alias_of_ctx_marked_as_an_extractor_reads_the_run_context() {
    let result = call(
        &Whoami,
        json!({}),
        with_account("c1", account("ada", false)),
    )
    .await;
    assert_eq!(result, Ok("ada".to_owned()));

    let error = call(&Whoami, json!({}), ToolContext::detached("c2"))
        .await
        .unwrap_err();
    assert_eq!(
        error.message(),
        "Tool \"whoami\" needs a context of type `alloc::sync::Arc<it::macro_extractors::Account>`, and this call has none"
    );
}

#[test]
fn extractors_declare_their_context_type() {
    let account = Some(ContextType::of::<Arc<Account>>());
    assert_eq!(DropTable.settings().context_type, account);
    assert_eq!(Whoami.settings().context_type, account);
}

#[tokio::test]
async fn an_agent_runs_a_custom_extractor_with_the_runs_context() {
    let model = FauxModel::new()
        .respond(FauxResponse::tool_call(
            "c1",
            "drop_table",
            json!({"table": "users"}),
        ))
        .respond(FauxResponse::tool_call("c2", "whoami", json!({})))
        .respond(FauxResponse::text("done"));
    let agent = Agent::builder()
        .model(model)
        .tools((DropTable, Whoami))
        .build()
        .unwrap();
    let run = agent
        .prompt_with("drop users", account("ada", true))
        .await
        .unwrap();
    let results: Vec<(String, bool)> = run
        .iter()
        .filter_map(Message::as_tool_result)
        .map(|result| (result.text(), result.is_error))
        .collect();
    assert_eq!(
        results,
        [
            ("ada dropped users in call c1".to_owned(), false),
            ("ada".to_owned(), false)
        ]
    );
}

#[tokio::test]
async fn the_agent_checks_a_custom_extractors_context_type() {
    let error = Agent::builder()
        .model(FauxModel::new())
        .tools(DropTable)
        .context_type::<String>()
        .build()
        .unwrap_err();
    assert!(matches!(error, BuildError::ContextType { .. }), "{error}");

    let agent = Agent::builder()
        .model(FauxModel::new())
        .tools(DropTable)
        .build()
        .unwrap();
    let missing = agent.prompt("drop users").await.unwrap_err();
    assert!(
        matches!(&missing, AgentError::MissingContext { tool, .. } if tool == "drop_table"),
        "{missing}"
    );
}

/// Types of the user's that share a built-in's name without its shape: plain arguments.
mod named_like_builtins {
    use pi_runtime::{tool, tool_args};

    /// A state of the user's, not `pi_runtime::State`.
    #[tool_args]
    pub(super) struct State {
        /// Open or closed.
        pub(super) open: bool,
    }

    /// A context of the user's, not `pi_runtime::Ctx`.
    #[tool_args]
    pub(super) struct Ctx {
        /// The locale.
        pub(super) locale: String,
    }

    /// Set the door's state.
    #[tool]
    pub(super) async fn set_door(state: State, ctx: Ctx) -> String {
        format!("{} in {}", state.open, ctx.locale)
    }
}

#[tokio::test]
async fn user_types_named_state_or_ctx_are_plain_arguments() {
    use named_like_builtins::SetDoor;

    let parameters = &SetDoor.definition().parameters;
    assert_eq!(parameters["required"], json!(["state", "ctx"]));
    assert_eq!(parameters["properties"]["state"]["type"], "object");
    assert_eq!(parameters["properties"]["ctx"]["type"], "object");
    assert_eq!(SetDoor.settings().context_type, None);
    let result = call(
        &SetDoor,
        json!({"state": {"open": true}, "ctx": {"locale": "fr"}}),
        ToolContext::detached("c1"),
    )
    .await;
    assert_eq!(result, Ok("true in fr".to_owned()));
}
