//! The examples, run as the programs users start.
//!
//! Each example is built once per test binary through escargot, which runs `cargo build
//! --example <name> -p pi-examples` and reads the executable's path from cargo's JSON
//! messages, so the tests work with any target directory and build the examples when
//! `cargo test` did not. The programs run with every provider key removed from their
//! environment, so they stay on the scripted model and off the network.

use std::process::{Command, Output};

use serde_json::json;

mod support;
use support::example_binary;

const KEY_VARIABLES: [&str; 4] = [
    "DEEPSEEK_API_KEY",
    "OPENAI_API_KEY",
    "ANTHROPIC_API_KEY",
    "GEMINI_API_KEY",
];

/// Run an example with these arguments and no provider key.
fn run(example: &str, args: &[&str]) -> Output {
    let mut command = Command::new(example_binary(example));
    command.args(args);
    for variable in KEY_VARIABLES {
        command.env_remove(variable);
    }
    command
        .output()
        .unwrap_or_else(|error| panic!("cannot start example {example}: {error}"))
}

fn stdout(output: &Output) -> String {
    String::from_utf8_lossy(&output.stdout).into_owned()
}

fn stderr(output: &Output) -> String {
    String::from_utf8_lossy(&output.stderr).into_owned()
}

/// Each needle occurs in `haystack`, after the previous one.
fn assert_in_order(haystack: &str, needles: &[&str]) {
    let mut from = 0;
    for needle in needles {
        match haystack[from..].find(needle) {
            Some(at) => from += at + needle.len(),
            None => panic!("{needle:?} is missing after byte {from} of:\n{haystack}"),
        }
    }
}

const ADD_SCHEMA: &str = r#"add: Add two numbers.
{
  "type": "object",
  "properties": {
    "a": {
      "type": "number",
      "description": "The first number."
    },
    "b": {
      "type": "number",
      "description": "The second number."
    }
  },
  "required": [
    "a",
    "b"
  ],
  "additionalProperties": false
}
"#;

const ADD_VALIDATION_ERROR: &str = r#" ✗ add failed, the model sees:
Validation failed for tool "add":
  - b: expected number, got string

Received arguments:
{
  "a": 1,
  "b": "x"
}
"#;

#[test]
fn quickstart_shows_the_schema_the_correction_and_the_parallel_calls() {
    let output = run("quickstart", &[]);
    let out = stdout(&output);
    assert!(output.status.success(), "{out}{}", stderr(&output));

    assert_in_order(
        &out,
        &[
            ADD_SCHEMA,
            "weather: Get the current weather in a city.\n",
            "== The run ==",
            " assistant: Adding 1 and x.\n",
            " → add {\"a\":1,\"b\":\"x\"}\n",
            ADD_VALIDATION_ERROR,
            " assistant: b must be a number.\n",
            " → add {\"a\":1,\"b\":2}\n",
            " ✓ add: 3\n",
            " assistant: Now two cities at once.\n",
            " → weather {\"city\":\"Paris\"}\n",
            " → weather {\"city\":\"Lyon\"}\n",
            " ✓ weather: ",
            " ✓ weather: ",
            " 2 calls in parallel: ",
            " assistant: 1 + 2 = 3, and it rains in Paris and Lyon.\n",
            "The run added 9 messages to the transcript.\n",
        ],
    );
}

#[test]
fn quickstart_runs_the_two_slow_calls_at_the_same_time() {
    let output = run("quickstart", &[]);
    let out = stdout(&output);
    let line = out
        .lines()
        .find_map(|line| line.trim().strip_prefix("2 calls in parallel: "))
        .unwrap_or_else(|| panic!("no timing line in:\n{out}"));
    // "601 ms of work in 302 ms"
    let numbers: Vec<u64> = line
        .split(' ')
        .filter_map(|word| word.parse().ok())
        .collect();
    let [work, wall] = numbers[..] else {
        panic!("unexpected timing line {line:?}");
    };
    assert!(work >= 600, "each call sleeps 300 ms: {line}");
    assert!(wall >= 300, "{line}");
    // In sequence they would take at least `work`; together, about half of it.
    assert!(wall < work, "{line}");
}

fn expected_analysis() -> serde_json::Value {
    json!({
        "name": "first",
        "parameters": ["items"],
        "returnType": "T | undefined",
        "summary": "Returns the first element of the array.",
        "emptyInputBehavior": "Returns undefined.",
        "evidence": "return items[0]"
    })
}

fn printed_analysis(output: &Output) -> serde_json::Value {
    let out = stdout(output);
    assert!(
        output.status.success(),
        "exit {:?}\n{out}{}",
        output.status.code(),
        stderr(output)
    );
    serde_json::from_str(&out)
        .unwrap_or_else(|error| panic!("stdout is not JSON ({error}):\n{out}"))
}

const SUBMIT_VALIDATION_ERROR: &str = r#"✗ Validation failed for tool "submit_analysis":
  - evidence: expected string, got number

Received arguments:
{
  "name": "first",
  "parameters": [
    "items"
  ],
  "returnType": "T | undefined",
  "summary": "Returns the first element of the array.",
  "emptyInputBehavior": "Returns undefined.",
  "evidence": 42
}
"#;

#[test]
fn submit_analysis_prints_the_accepted_object_after_a_validation_error() {
    let output = run("submit_analysis", &[]);
    assert_eq!(printed_analysis(&output), expected_analysis());
    // Pretty-printed, for people.
    assert!(stdout(&output).starts_with("{\n  \"name\": \"first\",\n  \"parameters\": [\n"));
    let err = stderr(&output);
    assert_in_order(
        &err,
        &[
            "model: faux/faux-1\n",
            "\"evidence\":42}\n",
            SUBMIT_VALIDATION_ERROR,
            "\"evidence\":\"return items[0]\"}\n",
            "✓ The analysis passed validation and was accepted.\n",
        ],
    );
    // The accepting call ends the run: no further request, no further text.
    assert!(
        err.ends_with("✓ The analysis passed validation and was accepted.\n"),
        "{err}"
    );
}

#[test]
fn submit_analysis_rejects_evidence_that_is_not_in_the_source() {
    let output = run("submit_analysis", &["--faux-script", "misquotes"]);
    assert_eq!(printed_analysis(&output), expected_analysis());
    assert_in_order(
        &stderr(&output),
        &[
            "✗ evidence \"return items.at(0)\" does not occur in the source code: \
             quote the source verbatim\n",
            "✓ The analysis passed validation and was accepted.\n",
        ],
    );
}

#[test]
fn submit_analysis_accepts_only_once() {
    let output = run("submit_analysis", &["--faux-script", "submits-twice"]);
    assert_eq!(printed_analysis(&output), expected_analysis());
    // The refused second call keeps the batch from terminating, so the model is asked again.
    assert_in_order(
        &stderr(&output),
        &[
            "✓ The analysis passed validation and was accepted.\n",
            "✗ already accepted\n",
            "assistant: Submitted.\n",
        ],
    );
}

const NO_SUBMISSION: &str = "error: no result was accepted: the model stopped after 1 turn \
                             without a `submit_analysis` call that passed validation\n";

#[test]
fn submit_analysis_fails_when_the_model_answers_in_prose() {
    let output = run("submit_analysis", &["--faux-script", "never-submits"]);
    assert_eq!(output.status.code(), Some(1));
    assert_eq!(stdout(&output), "");
    let err = stderr(&output);
    assert!(
        err.contains("assistant: Here is my analysis: {\"name\":\"first\""),
        "{err}"
    );
    // JSON in prose is never a submission.
    assert!(err.ends_with(NO_SUBMISSION), "{err}");
}

#[test]
fn submit_analysis_script_never_exits_non_zero_with_a_clear_message() {
    let output = run("submit_analysis", &["--script", "never"]);
    assert_eq!(output.status.code(), Some(1));
    assert_eq!(stdout(&output), "");
    let err = stderr(&output);
    assert_in_order(
        &err,
        &["model: faux/faux-1\n", "assistant: Here is my analysis: "],
    );
    assert!(err.ends_with(NO_SUBMISSION), "{err}");
}

#[test]
fn submit_analysis_gives_up_at_the_turn_limit() {
    let output = run("submit_analysis", &["--faux-script", "always-invalid"]);
    assert_eq!(output.status.code(), Some(1));
    assert_eq!(stdout(&output), "");
    let err = stderr(&output);
    assert_eq!(err.matches(SUBMIT_VALIDATION_ERROR).count(), 4);
    assert!(
        err.ends_with(
            "error: no result was accepted within the turn limit of 4 turns: the model made no \
             `submit_analysis` call that passed validation\n"
        ),
        "{err}"
    );
}

#[test]
fn submit_analysis_reports_a_failed_request_as_an_error() {
    // Nothing listens on the discard port, so the request fails at once.
    let output = run("submit_analysis", &["--base-url", "http://127.0.0.1:9/v1"]);
    assert_eq!(output.status.code(), Some(1));
    assert_eq!(stdout(&output), "");
    let err = stderr(&output);
    assert_in_order(
        &err,
        &[
            "model: openai/gpt-4o-mini\n",
            "error: the model request failed: \
             Could not reach http://127.0.0.1:9/v1/chat/completions",
        ],
    );
}

#[test]
fn submit_analysis_reports_an_aborted_run_as_an_error() {
    let output = run(
        "submit_analysis",
        &["--faux-script", "stalls", "--time-limit", "1"],
    );
    assert_eq!(output.status.code(), Some(1));
    assert_eq!(stdout(&output), "");
    assert!(
        stderr(&output).ends_with("error: the run was aborted at the time limit of 1s\n"),
        "{}",
        stderr(&output)
    );
}

#[test]
fn submit_analysis_watches_the_submission_fill_in() {
    let output = run("submit_analysis", &["--watch"]);
    assert_eq!(printed_analysis(&output), expected_analysis());
    assert_in_order(
        &stderr(&output),
        &[
            "… {\"name\":\"first\"}\n",
            "… {\"name\":\"first\",\"parameters\":[\"items\"]}\n",
            "\"evidence\":42}\n",
            "→ submit_analysis ",
            SUBMIT_VALIDATION_ERROR,
            "… {\"name\":\"first\"}\n",
            "\"evidence\":\"return items[0]\"}\n",
            "→ submit_analysis ",
            "✓ The analysis passed validation and was accepted.\n",
        ],
    );
}

#[test]
fn many_tools_searches_loads_two_tools_and_shows_the_savings() {
    let output = run("many_tools", &[]);
    let out = stdout(&output);
    assert!(output.status.success(), "{out}{}", stderr(&output));
    assert_eq!(
        out,
        "registered 305 tools, 5 declared\n\
         [tool_search] Loaded 2 tools. They are available from your next call:\n\
         - weather__get_current: Get the current weather conditions in a city\n\
         - weather__get_forecast: Get the weather forecast for a city, day by day\n\
         [tools added] weather__get_current, weather__get_forecast\n\
         [weather__get_forecast] weather__get_forecast: done with {\"city\":\"Oslo\"}\n\
         [weather__get_current] weather__get_current: done with {\"city\":\"Oslo\"}\n\
         [assistant] Oslo: rain today, sun tomorrow.\n\
         tools in the first request: 1360 bytes deferred, 98340 bytes with all 305 declared (72.3x smaller)\n"
    );
}

/// `approval pause` in one process, then `approval resume` in another, in a fresh directory.
struct ApprovalRun {
    dir: tempfile::TempDir,
}

impl ApprovalRun {
    fn paused(key: &str) -> Self {
        let run = ApprovalRun {
            dir: tempfile::tempdir().unwrap(),
        };
        let output = run.approval(&["pause", "--key", key]);
        assert!(output.status.success(), "{}", stderr(&output));
        assert_eq!(
            stdout(&output),
            format!(
                "pending call_1 append_line {{\"line\":\"hello from the agent\"}} (`append_line` always needs approval)\nstate written to {}\n",
                run.path("run.json")
            )
        );
        assert_eq!(run.effects(), "", "nothing ran before the approval");
        run
    }

    fn path(&self, name: &str) -> String {
        self.dir.path().join(name).display().to_string()
    }

    fn approval(&self, args: &[&str]) -> Output {
        let (state, effects) = (self.path("run.json"), self.path("effects.txt"));
        let mut all = args.to_vec();
        all.extend(["--state", &state, "--effects", &effects]);
        run("approval", &all)
    }

    fn resume(&self, decision: &str, key: &str) -> Output {
        self.approval(&["resume", "--decision", decision, "--key", key])
    }

    /// The transcript a command wrote with `--transcript`, without its clocks.
    fn transcript(&self, name: &str) -> serde_json::Value {
        let text = std::fs::read_to_string(self.path(name)).unwrap();
        timeless(serde_json::from_str(&text).unwrap())
    }

    fn effects(&self) -> String {
        std::fs::read_to_string(self.path("effects.txt")).unwrap_or_default()
    }
}

#[test]
fn approval_resumes_in_another_process_and_runs_the_tool_once() {
    let run = ApprovalRun::paused("k1 of sixteen bytes");
    let output = run.resume("approve", "k1 of sixteen bytes");
    assert!(output.status.success(), "{}", stderr(&output));
    assert_eq!(
        stdout(&output),
        "The tool said: appended \"hello from the agent\"\n"
    );
    assert_eq!(run.effects(), "hello from the agent\n");
}

impl ApprovalRun {
    /// The text of the error a resume of the already resumed pause prints: the pause id and
    /// the time of the claim, read from the ledger beside the state (its only file).
    fn already_resumed(&self) -> String {
        let ledger = self.dir.path().join("pause-ledger");
        let claims: Vec<_> = std::fs::read_dir(&ledger)
            .unwrap()
            .map(Result::unwrap)
            .collect();
        assert_eq!(claims.len(), 1, "one claim in {}", ledger.display());
        let pause_id = claims[0].file_name().into_string().unwrap();
        let claim: serde_json::Value =
            serde_json::from_str(&std::fs::read_to_string(claims[0].path()).unwrap()).unwrap();
        let at = std::time::UNIX_EPOCH
            + std::time::Duration::from_millis(claim["resumedAtMs"].as_u64().unwrap());
        format!(
            "error: this pause ({pause_id}) was already resumed at {}\n",
            httpdate::fmt_http_date(at)
        )
    }
}

#[test]
fn approval_resumed_twice_in_a_row_runs_the_tool_once() {
    example_binary("approval");
    let started = std::time::Instant::now();
    let run = ApprovalRun::paused("k1 of sixteen bytes");
    let first = run.resume("approve", "k1 of sixteen bytes");
    assert!(first.status.success(), "{}", stderr(&first));
    let second = run.resume("approve", "k1 of sixteen bytes");
    assert!(!second.status.success());
    assert_eq!(stdout(&second), "");
    assert_eq!(stderr(&second), run.already_resumed());
    assert_eq!(run.effects(), "hello from the agent\n");
    assert!(started.elapsed() < std::time::Duration::from_secs(30));
}

#[test]
fn approval_resumed_twice_at_once_runs_the_tool_once() {
    example_binary("approval");
    let started = std::time::Instant::now();
    for _ in 0..5 {
        let run = ApprovalRun::paused("k1 of sixteen bytes");
        let (state, effects) = (run.path("run.json"), run.path("effects.txt"));
        let args = [
            "resume",
            "--decision",
            "approve",
            "--key",
            "k1 of sixteen bytes",
            "--state",
            &state,
            "--effects",
            &effects,
        ];
        let resumes: Vec<_> = (0..2)
            .map(|_| {
                Command::new(example_binary("approval"))
                    .args(args)
                    .stdout(std::process::Stdio::piped())
                    .stderr(std::process::Stdio::piped())
                    .spawn()
                    .unwrap()
            })
            .collect();
        let outputs: Vec<Output> = resumes
            .into_iter()
            .map(|child| child.wait_with_output().unwrap())
            .collect();
        let (done, refused): (Vec<_>, Vec<_>) =
            outputs.iter().partition(|output| output.status.success());
        assert_eq!((done.len(), refused.len()), (1, 1), "{outputs:?}");
        assert_eq!(
            stdout(done[0]),
            "The tool said: appended \"hello from the agent\"\n"
        );
        assert_eq!(stderr(refused[0]), run.already_resumed());
        assert_eq!(run.effects(), "hello from the agent\n");
    }
    assert!(started.elapsed() < std::time::Duration::from_secs(60));
}

#[test]
fn approval_refuses_a_signing_key_under_16_bytes() {
    let dir = tempfile::tempdir().unwrap();
    let state = dir.path().join("run.json").display().to_string();
    let output = run("approval", &["pause", "--key", "short", "--state", &state]);
    assert!(!output.status.success());
    assert_eq!(
        stderr(&output),
        "error: a run state signing key needs at least 16 bytes; this one has 5\n"
    );
}

/// `value` without its clocks (`timestamp` and `durationMs` keys).
fn timeless(mut value: serde_json::Value) -> serde_json::Value {
    fn strip(value: &mut serde_json::Value) {
        match value {
            serde_json::Value::Object(map) => {
                map.remove("timestamp");
                map.remove("durationMs");
                map.values_mut().for_each(strip);
            }
            serde_json::Value::Array(items) => items.iter_mut().for_each(strip),
            _ => {}
        }
    }
    strip(&mut value);
    value
}

#[test]
fn approval_resumed_in_another_process_has_the_transcript_of_a_run_in_one() {
    for decision in ["approve", "deny", "edit"] {
        let paused = ApprovalRun::paused("k1 of sixteen bytes");
        let resumed = paused.path("resumed.json");
        let output = paused.approval(&[
            "resume",
            "--decision",
            decision,
            "--key",
            "k1 of sixteen bytes",
            "--transcript",
            &resumed,
        ]);
        assert!(output.status.success(), "{}", stderr(&output));

        let whole = ApprovalRun {
            dir: tempfile::tempdir().unwrap(),
        };
        let (path, effects) = (whole.path("whole.json"), whole.path("effects.txt"));
        let output = run(
            "approval",
            &[
                "run",
                "--decision",
                decision,
                "--transcript",
                &path,
                "--effects",
                &effects,
            ],
        );
        assert!(output.status.success(), "{}", stderr(&output));

        assert_eq!(
            paused.transcript("resumed.json"),
            whole.transcript("whole.json"),
            "{decision}"
        );
        assert_eq!(paused.effects(), whole.effects(), "{decision}");
        let roles: Vec<_> = (whole.transcript("whole.json").as_array().unwrap().iter())
            .map(|message| message["role"].as_str().unwrap_or_default().to_owned())
            .collect();
        assert_eq!(
            roles,
            ["system", "user", "assistant", "toolResult", "assistant"],
            "{decision}"
        );
    }
}

#[test]
fn approval_denied_runs_nothing_and_the_model_reads_the_reason() {
    let run = ApprovalRun::paused("k1 of sixteen bytes");
    let output = run.resume("deny", "k1 of sixteen bytes");
    assert!(output.status.success(), "{}", stderr(&output));
    assert_eq!(
        stdout(&output),
        "The tool said: Tool call denied: the operator said no\n"
    );
    assert_eq!(run.effects(), "");
}

#[test]
fn approval_edited_runs_the_edited_arguments() {
    let run = ApprovalRun::paused("k1 of sixteen bytes");
    let output = run.resume("edit", "k1 of sixteen bytes");
    assert!(output.status.success(), "{}", stderr(&output));
    assert_eq!(run.effects(), "edited by the operator\n");
}

#[test]
fn approval_refuses_a_wrong_key_or_a_tampered_state_without_running_anything() {
    let refused = "error: the run state's signature does not match: it was signed with another key, or changed after it was signed\n";
    let run = ApprovalRun::paused("k1 of sixteen bytes");
    let output = run.resume("approve", "k2 of sixteen bytes");
    assert!(!output.status.success());
    assert_eq!(stderr(&output), refused);
    assert_eq!(run.effects(), "");

    let state = run.path("run.json");
    let saved = std::fs::read_to_string(&state).unwrap();
    std::fs::write(&state, saved.replace("hello from the agent", "rm -rf /")).unwrap();
    let output = run.resume("approve", "k1 of sixteen bytes");
    assert!(!output.status.success());
    assert_eq!(stderr(&output), refused);
    assert_eq!(run.effects(), "");
}

#[test]
fn codemode_runs_one_program_instead_of_three_calls_and_shows_the_savings() {
    let output = run("codemode", &[]);
    let out = stdout(&output);
    assert!(output.status.success(), "{out}{}", stderr(&output));
    assert_eq!(
        out,
        "call by call:\n  \
         [customer] 299 bytes: {\"id\":7,\"name\":\"Ada Lovelace\",\"email\":\"ada@example.com\",\"add\n  \
         [orders] 1696 bytes: [{\"order\":1001,\"items\":2,\"total\":19.5,\"placed\":\"2025-05-01\",\n  \
         [shipments] 1691 bytes: [{\"order\":1001,\"carrier\":\"Royal Mail\",\"tracking\":\"RM00000001\n  \
         [assistant] Ada Lovelace has 2 late orders of 20: 1007, 1014.\n\
         one program:\n  \
         [codemode] 97 bytes: Ada Lovelace has 2 late orders of 20: 1007, 1014.\n  \
         [assistant] Ada Lovelace has 2 late orders of 20: 1007, 1014.\n\
         messages in the last request: 5989 bytes call by call, 1365 bytes with one program (4.4x smaller)\n"
    );
}

#[test]
fn server_serves_each_tenant_its_own_notes_from_one_definition() {
    let output = run("server", &["--demo"]);
    let out = stdout(&output);
    assert!(output.status.success(), "{out}{}", stderr(&output));
    assert_eq!(
        out,
        "acme \"note buy milk\" -> 200 saved note 1 for acme: buy milk\n\
         acme \"list\" -> 200 acme's notes: buy milk\n\
         globex \"list\" -> 200 globex has no notes\n"
    );
}

#[test]
fn agents_use_agents_hand_over_pause_in_a_sub_agent_and_trip_guardrails() {
    let output = run("agents", &["--demo"]);
    let out = stdout(&output);
    assert!(output.status.success(), "{out}{}", stderr(&output));
    assert_eq!(
        out,
        "sub-agent: the researcher answered \"In short: Rust is fast and memory-safe.\"; its listener saw \
         c1:agent_start c1:turn_start c1:message_start c1:message_end c1:message_start c1:message_end \
         c1:turn_end c1:agent_end\n\
         handoff: \"Invoice 7 was paid on 2 May.\" answered by billing\n\
         approval: the run paused for c1/d1 (delete_file); delete_file ran 0 times\n\
         approval: resumed with approve c1/d1, delete_file ran 1 time, \"The old log is gone.\"\n\
         approval: a second resume of the same state was refused; delete_file ran 1 time\n\
         guardrail: GuardrailTripped { guardrail: \"no_card_numbers\", stage: Input, reason: \
         \"the message holds a card number\" }; model requests: 0\n"
    );
}

/// A grandchild's approval: `append_line` two sub-agents down. The run pauses in one
/// process with the call's path, resumes in another, runs the call once with the
/// transcript of the run made in one process, and a second resume is refused.
#[test]
fn a_grandchilds_approval_resumes_in_another_process_and_runs_once() {
    let dir = tempfile::tempdir().unwrap();
    let path = |name: &str| dir.path().join(name).display().to_string();
    let (state, effects, key) = (path("run.json"), path("effects.txt"), "k2 of sixteen bytes");
    let deep = |args: &[&str]| {
        let mut all = args.to_vec();
        all.extend([
            "--depth",
            "2",
            "--key",
            key,
            "--state",
            &state,
            "--effects",
            &effects,
        ]);
        run("approval", &all)
    };
    let paused = deep(&["pause"]);
    assert!(paused.status.success(), "{}", stderr(&paused));
    assert_eq!(
        stdout(&paused),
        format!(
            "pending d2/d1/call_1 append_line {{\"line\":\"hello from the agent\"}} (`append_line` always needs approval)\nstate written to {state}\n"
        )
    );
    assert_eq!(std::fs::read_to_string(&effects).unwrap_or_default(), "");

    let transcript = path("resumed.json");
    let resumed = deep(&[
        "resume",
        "--decision",
        "approve",
        "--transcript",
        &transcript,
    ]);
    assert!(resumed.status.success(), "{}", stderr(&resumed));
    assert_eq!(
        stdout(&resumed),
        "The tool said: appended \"hello from the agent\"\n"
    );
    assert_eq!(
        std::fs::read_to_string(&effects).unwrap(),
        "hello from the agent\n"
    );

    let again = deep(&["resume", "--decision", "approve"]);
    assert!(!again.status.success());
    assert!(
        stderr(&again).starts_with("error: this pause ("),
        "{}",
        stderr(&again)
    );
    assert_eq!(
        std::fs::read_to_string(&effects).unwrap(),
        "hello from the agent\n",
        "the call ran once"
    );

    // The same run in one process writes the same transcript.
    let whole_effects = path("whole-effects.txt");
    let whole = path("whole.json");
    let one = run(
        "approval",
        &[
            "run",
            "--decision",
            "approve",
            "--depth",
            "2",
            "--key",
            key,
            "--effects",
            &whole_effects,
            "--transcript",
            &whole,
        ],
    );
    assert!(one.status.success(), "{}", stderr(&one));
    let read = |name: &str| {
        timeless(serde_json::from_str(&std::fs::read_to_string(name).unwrap()).unwrap())
    };
    assert_eq!(read(&transcript), read(&whole));
}
