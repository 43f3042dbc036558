//! The integration tests of `pi-runtime`, in one binary: linking each file separately cost a
//! link of the whole dependency graph per file, in time and in disk. Modules that need a
//! cargo feature say so; the rest run with `--no-default-features`.

mod blocking_support;
mod json_support;
#[cfg(feature = "mcp")]
mod mcp_support;
mod memory_support;
#[cfg(all(feature = "openai", feature = "anthropic", feature = "google"))]
mod provider_support;
mod validate_support;

mod agent_api;
mod agent_extract;
#[cfg(all(
    feature = "openai",
    feature = "openai-responses",
    feature = "anthropic",
    feature = "google"
))]
mod agent_extract_wire;
mod agent_failures;
mod agent_ordering;
mod agent_submit;
mod agent_tracing;
mod agent_validation;
mod approvals;
mod approvals_misuse;
#[cfg(all(
    feature = "openai",
    feature = "openai-responses",
    feature = "anthropic",
    feature = "google"
))]
mod approvals_wire;
#[cfg(all(feature = "openai", feature = "anthropic", feature = "google"))]
mod build_request_spec;
#[cfg(feature = "codemode")]
mod codemode;
#[cfg(all(feature = "openai", feature = "anthropic", feature = "google"))]
mod e2e_failures;
#[cfg(feature = "tools")]
mod e2e_parallel_edits;
#[cfg(all(feature = "openai", feature = "anthropic", feature = "google"))]
mod e2e_self_correction;
mod guardrails;
mod handoffs;
mod import_circles;
mod macro_extractors;
mod macro_lints;
mod macro_params;
mod macro_tool;
#[cfg(feature = "mcp")]
mod mcp;
#[cfg(feature = "mcp")]
mod mcp_asks;
#[cfg(feature = "jwt")]
mod mcp_auth;
#[cfg(feature = "mcp")]
mod mcp_cluster;
#[cfg(feature = "mcp")]
mod mcp_context;
#[cfg(feature = "mcp")]
mod mcp_hostile;
#[cfg(feature = "mcp")]
mod mcp_hostile_limits;
#[cfg(feature = "mcp")]
mod mcp_hostile_server;
#[cfg(feature = "jwt")]
mod mcp_jwks;
#[cfg(feature = "mcp")]
mod mcp_origins;
#[cfg(feature = "mcp")]
mod mcp_tool_policy;
mod partial_json_malformed;
mod partial_json_props;
mod partial_json_spec;
#[cfg(feature = "tools")]
mod prompt_tool_section;
#[cfg(all(feature = "openai", feature = "anthropic", feature = "google"))]
mod provider_failures;
#[cfg(all(feature = "openai", feature = "anthropic", feature = "google"))]
mod provider_fixtures;
#[cfg(all(
    feature = "openai",
    feature = "openai-responses",
    feature = "anthropic",
    feature = "google"
))]
mod provider_hostile;
#[cfg(all(feature = "openai", feature = "anthropic", feature = "google"))]
mod provider_llama_cpp;
#[cfg(all(feature = "openai", feature = "anthropic", feature = "google"))]
mod provider_parsing;
#[cfg(all(feature = "openai", feature = "anthropic", feature = "google"))]
mod provider_stale_connections;
#[cfg(all(
    feature = "openai",
    feature = "openai-responses",
    feature = "anthropic",
    feature = "google"
))]
mod provider_tool_changes;
#[cfg(all(feature = "openai", feature = "anthropic", feature = "google"))]
mod provider_turns;
#[cfg(all(
    feature = "openai",
    feature = "openai-responses",
    feature = "anthropic",
    feature = "google"
))]
mod request_tool_knobs;
#[cfg(all(
    feature = "openai",
    feature = "openai-responses",
    feature = "anthropic",
    feature = "google"
))]
mod responses_e2e;
#[cfg(all(
    feature = "openai",
    feature = "openai-responses",
    feature = "anthropic",
    feature = "google"
))]
mod responses_fixtures;
#[cfg(all(
    feature = "openai",
    feature = "openai-responses",
    feature = "anthropic",
    feature = "google"
))]
mod responses_http_errors;
#[cfg(all(
    feature = "openai",
    feature = "openai-responses",
    feature = "anthropic",
    feature = "google"
))]
mod responses_prompt_cache;
mod run_context;
mod run_machine;
mod schema_tool;
#[cfg(feature = "codemode")]
mod sequential_lane;
mod subagent_approvals;
mod subagents;
mod tool_changes;
mod tool_policy;
mod tool_search_limits;
#[cfg(feature = "tools")]
mod tools_bash;
#[cfg(feature = "tools")]
mod tools_edit;
#[cfg(feature = "tools")]
mod tools_hostile_files;
#[cfg(feature = "tools")]
mod tools_hostile_processes;
#[cfg(feature = "tools")]
mod tools_mutation_queue;
#[cfg(feature = "tools")]
mod tools_read;
#[cfg(feature = "tools")]
mod tools_write;
mod validate_coercion;
mod validate_messages;
mod validate_props;
