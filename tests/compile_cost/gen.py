"""Generate two crates with the same 40 tools: pi40 (#[tool] fns) and rmcp40 (rmcp's
#[tool_router] / #[tool]), in target/compile-cost (or the directory given). See README.md."""
import os, textwrap

# (name, doc, [(param, type, doc)])  types use the nested types below
TOOLS = [
 ("search_issues", "Search the issue tracker for issues matching a query.", [("query","String","Words to look for."),("limit","Option<u32>","At most this many results (default 20)."),("state","Option<IssueState>","Only issues in this state.")]),
 ("get_issue", "Fetch one issue with its comments.", [("number","u64","The issue number."),("with_comments","Option<bool>","Include the comments.")]),
 ("create_issue", "Open a new issue.", [("title","String","A one-line summary."),("body","String","The description, in Markdown."),("labels","Vec<String>","Labels to add.")]),
 ("close_issue", "Close an issue, with an optional comment.", [("number","u64","The issue number."),("comment","Option<String>","A closing comment.")]),
 ("add_label", "Add a label to an issue.", [("number","u64","The issue number."),("label","String","The label's name.")]),
 ("list_pull_requests", "List pull requests of the repository.", [("state","Option<IssueState>","Only pull requests in this state."),("author","Option<String>","Only this author's."),("sort","Option<SortOrder>","The order of the list.")]),
 ("merge_pull_request", "Merge a pull request.", [("number","u64","The pull request number."),("method","MergeMethod","How to merge."),("delete_branch","Option<bool>","Delete the head branch afterwards.")]),
 ("review_pull_request", "Leave a review on a pull request.", [("number","u64","The pull request number."),("verdict","ReviewVerdict","Approve, comment or request changes."),("body","Option<String>","The review text.")]),
 ("read_file", "Read a file of the repository at a revision.", [("path","String","The path, relative to the root."),("revision","Option<String>","A branch, tag or commit (default: the default branch)."),("lines","Option<LineRange>","Only these lines.")]),
 ("write_file", "Write a file on a branch, as one commit.", [("path","String","The path, relative to the root."),("content","String","The new content."),("branch","String","The branch to commit to."),("message","String","The commit message.")]),
 ("list_directory", "List the entries of a directory.", [("path","String","The directory, relative to the root."),("recursive","Option<bool>","List subdirectories too.")]),
 ("search_code", "Search the code of the repository.", [("query","String","The text or regular expression."),("language","Option<String>","Only files of this language."),("limit","Option<u32>","At most this many matches.")]),
 ("get_commit", "Show one commit: message, author and changed files.", [("sha","String","The commit hash or a prefix of it.")]),
 ("list_commits", "List the commits of a branch.", [("branch","String","The branch."),("since","Option<String>","Only commits after this date (ISO 8601)."),("limit","Option<u32>","At most this many commits.")]),
 ("compare_revisions", "Compare two revisions and summarise the difference.", [("base","String","The older revision."),("head","String","The newer revision."),("context_lines","Option<u32>","Lines of context around each change.")]),
 ("create_branch", "Create a branch from a revision.", [("name","String","The new branch's name."),("from","String","The revision it starts at.")]),
 ("delete_branch", "Delete a branch.", [("name","String","The branch's name."),("force","Option<bool>","Delete even if it is not merged.")]),
 ("run_workflow", "Start a CI workflow on a branch.", [("workflow","String","The workflow file name."),("branch","String","The branch to run on."),("inputs","Vec<WorkflowInput>","The workflow's inputs.")]),
 ("get_workflow_run", "Show the state and jobs of a workflow run.", [("run_id","u64","The run's id."),("with_logs","Option<bool>","Include the failed jobs' logs.")]),
 ("cancel_workflow_run", "Cancel a running workflow run.", [("run_id","u64","The run's id.")]),
 ("query_database", "Run a read-only SQL query and return the rows as a table.", [("sql","String","One SELECT statement."),("max_rows","Option<u32>","At most this many rows (default 100)."),("timeout_ms","Option<u64>","Give up after this many milliseconds.")]),
 ("describe_table", "Show a table's columns, types and indexes.", [("table","String","The table's name."),("schema","Option<String>","The schema it lives in (default: public).")]),
 ("list_tables", "List the tables of a schema.", [("schema","Option<String>","The schema (default: public)."),("pattern","Option<String>","Only names matching this LIKE pattern.")]),
 ("explain_query", "Show the query plan of a SQL statement.", [("sql","String","The statement."),("analyze","Option<bool>","Run it to get real timings.")]),
 ("fetch_url", "Fetch a web page and return its text.", [("url","String","The address, http or https."),("max_bytes","Option<u64>","Stop after this many bytes."),("headers","Vec<Header>","Extra request headers.")]),
 ("search_web", "Search the web.", [("query","String","What to search for."),("region","Option<String>","A region code such as `us` or `de`."),("limit","Option<u32>","At most this many results.")]),
 ("send_email", "Send an email.", [("to","Vec<String>","The recipients' addresses."),("subject","String","The subject line."),("body","String","The plain-text body."),("cc","Option<Vec<String>>","Addresses to copy.")]),
 ("list_emails", "List emails of a mailbox folder.", [("folder","String","The folder, such as `INBOX`."),("unread_only","Option<bool>","Only unread emails."),("limit","Option<u32>","At most this many.")]),
 ("create_event", "Create a calendar event.", [("title","String","The event's title."),("slot","TimeSlot","When it starts and ends."),("attendees","Vec<String>","Email addresses to invite."),("location","Option<String>","Where it takes place.")]),
 ("list_events", "List calendar events in a time window.", [("from","String","The window's start (ISO 8601)."),("to","String","The window's end (ISO 8601).")]),
 ("convert_currency", "Convert an amount between currencies at today's rate.", [("amount","f64","The amount to convert."),("from","String","The ISO 4217 code converted from."),("to","String","The ISO 4217 code converted to.")]),
 ("get_weather", "The current weather and a forecast for a place.", [("location","String","A city name or `lat,lon`."),("units","Option<Units>","Metric or imperial (default metric)."),("days","Option<u8>","Days of forecast, 0 to 7.")]),
 ("translate_text", "Translate text into another language.", [("text","String","The text."),("target","String","The target language code."),("source","Option<String>","The source language code (default: detected).")]),
 ("summarize_text", "Summarise a text in a few sentences.", [("text","String","The text."),("max_sentences","Option<u32>","At most this many sentences.")]),
 ("create_ticket", "Open a support ticket.", [("customer_id","u64","The customer's id."),("subject","String","What it is about."),("priority","Priority","How urgent it is."),("tags","Option<Vec<String>>","Tags for routing.")]),
 ("update_ticket", "Change a support ticket's state or assignee.", [("ticket_id","u64","The ticket's id."),("state","Option<TicketState>","The new state."),("assignee","Option<String>","The new assignee's login.")]),
 ("lookup_customer", "Find a customer by email or id.", [("email","Option<String>","The customer's email address."),("customer_id","Option<u64>","The customer's id.")]),
 ("refund_order", "Refund an order, fully or in part.", [("order_id","u64","The order's id."),("amount_cents","Option<u64>","The amount to refund (default: all of it)."),("reason","String","Why, for the records.")]),
 ("schedule_reminder", "Remind the user of something later.", [("text","String","What to remind of."),("at","String","When (ISO 8601)."),("repeat","Option<Repeat>","How it repeats.")]),
 ("store_memory", "Remember a fact for later conversations.", [("key","String","A short name for the fact."),("value","String","The fact."),("ttl_days","Option<u32>","Forget it after this many days.")]),
]
assert len(TOOLS) == 40, len(TOOLS)

# nested types: name -> (doc, kind, body) ; body is list of (field/variant, type or None, doc)
TYPES = [
 ("IssueState", "The state of an issue or pull request.", "enum", [("Open",None,"Still open."),("Closed",None,"Closed."),("All",None,"Either.")]),
 ("SortOrder", "The order of a list.", "enum", [("Newest",None,"Newest first."),("Oldest",None,"Oldest first."),("MostCommented",None,"Most comments first.")]),
 ("MergeMethod", "How a pull request is merged.", "enum", [("Merge",None,"A merge commit."),("Squash",None,"One squashed commit."),("Rebase",None,"Rebased commits.")]),
 ("ReviewVerdict", "The outcome of a review.", "enum", [("Approve",None,"Approve."),("Comment",None,"Comment only."),("RequestChanges",None,"Ask for changes.")]),
 ("Units", "Units of measurement.", "enum", [("Metric",None,"Celsius, km/h."),("Imperial",None,"Fahrenheit, mph.")]),
 ("Priority", "How urgent a ticket is.", "enum", [("Low",None,"Whenever."),("Normal",None,"Within a day."),("Urgent",None,"Now.")]),
 ("TicketState", "The state of a ticket.", "enum", [("Open",None,"Open."),("Pending",None,"Waiting on the customer."),("Solved",None,"Solved.")]),
 ("Repeat", "How a reminder repeats.", "enum", [("Daily",None,"Every day."),("Weekly",None,"Every week."),("Monthly",None,"Every month.")]),
 ("LineRange", "A range of lines, 1-based, inclusive.", "struct", [("start","u32","The first line."),("end","Option<u32>","The last line (default: the end of the file).")]),
 ("WorkflowInput", "One input of a workflow.", "struct", [("name","String","The input's name."),("value","String","Its value.")]),
 ("Header", "One HTTP header.", "struct", [("name","String","The header's name."),("value","String","Its value.")]),
 ("TimeSlot", "A start and an end.", "struct", [("start","String","The start (ISO 8601)."),("end","String","The end (ISO 8601)."),("time_zone","Option<String>","An IANA time zone (default: UTC).")]),
]

def camel(s): return "".join(w.capitalize() for w in s.split("_"))

def type_def(name, doc, kind, body, attr, pub_fields):
    out = [f"/// {doc}", attr]
    if kind == "enum":
        out.append(f"#[serde(rename_all = \"snake_case\")]")
        out.append(f"pub enum {name} {{")
        for v, _, d in body:
            out += [f"    /// {d}", f"    {v},"]
    else:
        out.append(f"pub struct {name} {{")
        for f, t, d in body:
            out += [f"    /// {d}", f"    pub {f}: {t},"]
    out.append("}")
    return "\n".join(out)

def body_expr(params):
    fmt = " ".join(f"{p}={{{p}:?}}" for p, _, _ in params)
    return f'Ok(format!("{fmt}"))'

def pi40():
    out = ["//! 40 tools written with pi's `#[tool]`.", "#![allow(clippy::unused_async)]", "",
           "use pi_runtime::{tool, tool_args};", ""]
    for name, doc, kind, body in TYPES:
        extra = "#[derive(Debug)]"
        out.append(type_def(name, doc, kind, body, "#[tool_args]\n" + extra, True))
        out.append("")
    for name, doc, params in TOOLS:
        out.append(f"/// {doc}")
        out.append("#[tool]")
        out.append(f"pub async fn {name}(")
        for p, t, d in params:
            out += [f"    /// {d}", f"    {p}: {t},"]
        out.append(") -> Result<String, String> {")
        out.append(f"    {body_expr(params)}")
        out.append("}")
        out.append("")
    types = ", ".join(camel(n) for n, _, _ in TOOLS)
    out.append("/// Every tool, for an agent's builder.")
    out.append("pub fn tools() -> Vec<std::sync::Arc<dyn pi_runtime::ToolDefinition>> {")
    out.append("    vec![")
    for n, _, _ in TOOLS:
        out.append(f"        std::sync::Arc::new({camel(n)}),")
    out.append("    ]")
    out.append("}")
    return "\n".join(out) + "\n"

def rmcp40():
    out = ["//! The same 40 tools written with rmcp's `#[tool_router]` / `#[tool]`.", "",
           "use rmcp::handler::server::router::tool::ToolRouter;",
           "use rmcp::handler::server::wrapper::Parameters;",
           "use rmcp::{ServerHandler, tool, tool_handler, tool_router};",
           "use schemars::JsonSchema;", "use serde::Deserialize;", ""]
    for name, doc, kind, body in TYPES:
        out.append(type_def(name, doc, kind, body, "#[derive(Debug, Deserialize, JsonSchema)]", True))
        out.append("")
    for name, doc, params in TOOLS:
        out.append(f"/// The arguments of `{name}`.")
        out.append("#[derive(Debug, Deserialize, JsonSchema)]")
        out.append(f"pub struct {camel(name)}Params {{")
        for p, t, d in params:
            out += [f"    /// {d}", f"    pub {p}: {t},"]
        out.append("}")
        out.append("")
    out.append("/// The server holding the 40 tools.")
    out.append("#[derive(Debug, Clone)]")
    out.append("pub struct Tools {")
    out.append("    tool_router: ToolRouter<Self>,")
    out.append("}")
    out.append("")
    out.append("#[tool_router]")
    out.append("impl Tools {")
    out.append("    /// The server.")
    out.append("    pub fn new() -> Self {")
    out.append("        Self { tool_router: Self::tool_router() }")
    out.append("    }")
    for name, doc, params in TOOLS:
        pats = ", ".join(p for p, _, _ in params)
        out.append("")
        out.append(f"    /// {doc}")
        out.append("    #[tool]")
        out.append(f"    async fn {name}(&self, Parameters({camel(name)}Params {{ {pats} }}): Parameters<{camel(name)}Params>) -> Result<String, String> {{")
        out.append(f"        {body_expr(params)}")
        out.append("    }")
    out.append("}")
    out.append("")
    out.append("impl Default for Tools {")
    out.append("    fn default() -> Self {")
    out.append("        Self::new()")
    out.append("    }")
    out.append("}")
    out.append("")
    out.append("#[tool_handler]")
    out.append("impl ServerHandler for Tools {}")
    return "\n".join(out) + "\n"

WORKSPACE = """# Compile cost of 40 tools: pi's #[tool] against rmcp's #[tool_router]. Not part of the
# pi workspace; dependencies are built once, then only the crates are timed.
[workspace]
members = ["pi40", "rmcp40"]
resolver = "3"

[profile.dev]
debug = "line-tables-only"

[profile.dev.package."*"]
debug = false
"""

PI40 = """[package]
name = "pi40"
version = "0.0.0"
edition = "2024"
publish = false

[dependencies]
pi-runtime = { path = "%s" }
"""

RMCP40 = """[package]
name = "rmcp40"
version = "0.0.0"
edition = "2024"
publish = false

[dependencies]
rmcp = { version = "3.11", default-features = false, features = ["server", "macros"] }
serde = { version = "1", features = ["derive"] }
schemars = "1"
"""

if __name__ == "__main__":
    import sys
    root = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
    out = sys.argv[1] if len(sys.argv) > 1 else os.path.join(root, "target", "compile-cost")
    for crate, lib, manifest in [("pi40", pi40(), PI40 % os.path.join(root, "pi-runtime")),
                                 ("rmcp40", rmcp40(), RMCP40)]:
        os.makedirs(os.path.join(out, crate, "src"), exist_ok=True)
        open(os.path.join(out, crate, "src", "lib.rs"), "w").write(lib)
        if not os.path.exists(os.path.join(out, crate, "Cargo.toml")):
            open(os.path.join(out, crate, "Cargo.toml"), "w").write(manifest)
    if not os.path.exists(os.path.join(out, "Cargo.toml")):
        open(os.path.join(out, "Cargo.toml"), "w").write(WORKSPACE)
