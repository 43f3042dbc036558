//! The integration tests of `pi-runtime`, in one binary: linking each file separately cost a
//! link of the whole dependency graph per file, in time and in disk.

mod provider_support;
mod validate_support;

mod agent_api;
mod agent_extract;
mod agent_extract_wire;
mod agent_failures;
mod agent_ordering;
mod agent_submit;
mod agent_tracing;
mod agent_validation;
mod build_request_spec;
mod e2e_failures;
mod e2e_parallel_edits;
mod e2e_self_correction;
mod macro_lints;
mod macro_tool;
mod partial_json_malformed;
mod partial_json_props;
mod partial_json_spec;
mod prompt_tool_section;
mod provider_failures;
mod provider_fixtures;
mod provider_hostile;
mod provider_parsing;
mod provider_turns;
mod responses_e2e;
mod responses_fixtures;
mod schema_tool;
mod tools_bash;
mod tools_edit;
mod tools_hostile_files;
mod tools_hostile_processes;
mod tools_mutation_queue;
mod tools_read;
mod tools_write;
mod validate_coercion;
mod validate_messages;
mod validate_props;
