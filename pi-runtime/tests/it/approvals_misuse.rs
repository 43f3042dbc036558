//! Approvals under misuse (issue 35): a pause resumes once, wherever and however often its
//! state is replayed; an edit passes the application's `before_tool_call` as the model's
//! arguments do; a state file costs no more than its own bytes until its signature matches;
//! a state is read only through its signature; a signing key has 16 bytes or more.

use std::future::Future;
use std::time::{Duration, Instant, SystemTime};

use pi_runtime::agent::approval::{
    ApprovalDecision, ApprovalError, ClaimError, DEFAULT_MAX_STATE_BYTES, FileLedger, MemoryLedger,
    PauseLedger, StateFileError, StateKey,
};
use pi_runtime::agent::{Agent, AgentError, RUN_STATE_VERSION, RunEnd, RunState, ToolCallDecision};
use pi_runtime::provider::faux::{FauxModel, FauxResponse};
use pi_runtime::tool::ApprovalPolicy;
use serde_json::json;

use crate::approvals::{Ran, key, recording};
use crate::memory_support::{measured, peak_rss};

const MB: u64 = 1 << 20;

/// Run `test`, failing it if it takes longer than `secs` seconds.
async fn within<T>(secs: u64, test: impl Future<Output = T>) -> T {
    tokio::time::timeout(Duration::from_secs(secs), test)
        .await
        .unwrap_or_else(|_| panic!("the test takes longer than {secs} s"))
}

/// An agent whose `write` always needs approval, with this script.
fn writer(model: FauxModel, ran: &Ran) -> pi_runtime::agent::AgentBuilder {
    let write = recording("write", ran).with_approval(ApprovalPolicy::Always);
    Agent::builder().model(model).tools(write)
}

/// A run that paused on `write {"text": "b"}` (call c1), and its signed state.
async fn paused_write(ran: &Ran) -> String {
    let asks =
        FauxModel::new().respond(FauxResponse::tool_call("c1", "write", json!({"text": "b"})));
    let run = writer(asks, ran)
        .build()
        .unwrap()
        .prompt("go")
        .await
        .unwrap();
    assert!(
        matches!(run.end, RunEnd::AwaitingApproval { .. }),
        "{:?}",
        run.end
    );
    run.paused_state().unwrap().to_signed_json(&key())
}

/// A fresh agent, as another process would build it, that finishes the run.
fn finisher(ran: &Ran) -> Agent {
    writer(FauxModel::new().respond(FauxResponse::text("done")), ran)
        .build()
        .unwrap()
}

fn read(saved: &str) -> RunState {
    RunState::from_signed_json(saved, &key()).unwrap()
}

/// The pause id of an `AlreadyResumed` error, and its time; panics on any other error.
fn already_resumed(error: AgentError) -> (String, SystemTime) {
    match error {
        AgentError::Approval(ApprovalError::Claim(ClaimError::AlreadyResumed { pause_id, at })) => {
            (pause_id, at)
        }
        other => panic!("not AlreadyResumed: {other:?}"),
    }
}

#[tokio::test]
async fn a_pause_resumed_twice_one_after_the_other_runs_its_calls_once() {
    within(10, async {
        let ran = Ran::default();
        let saved = paused_write(&ran).await;
        let pause_id = read(&saved).pause_id().unwrap().to_owned();
        assert_eq!(pause_id.len(), 32, "{pause_id}");
        let before = SystemTime::now();
        let first = finisher(&ran)
            .resume_with(read(&saved), [ApprovalDecision::approve("c1")])
            .await
            .unwrap();
        assert_eq!(first.end, RunEnd::Completed);

        // A fresh agent of the same process (no ledger given: the process's own).
        let second = finisher(&ran)
            .resume_with(read(&saved), [ApprovalDecision::approve("c1")])
            .await
            .unwrap_err();
        let text = second.to_string();
        let (id, at) = already_resumed(second);
        assert_eq!(id, pause_id);
        assert!(at >= before - Duration::from_secs(1) && at <= SystemTime::now());
        assert_eq!(
            text,
            format!(
                "this pause ({pause_id}) was already resumed at {}",
                httpdate::fmt_http_date(at)
            )
        );
        assert_eq!(*ran.lock().unwrap(), ["write b"], "the call ran once");
    })
    .await;
}

#[tokio::test]
async fn a_paused_state_resumed_twice_by_one_agent_runs_its_calls_once() {
    within(10, async {
        let ran = Ran::default();
        let model = FauxModel::new()
            .respond(FauxResponse::tool_call("c1", "write", json!({"text": "b"})))
            .respond(FauxResponse::text("done"))
            .respond(FauxResponse::text("done again"));
        let agent = writer(model, &ran).build().unwrap();
        let run = agent.prompt("go").await.unwrap();
        let state = run.paused_state().unwrap().clone();
        agent
            .resume_with(state.clone(), [ApprovalDecision::approve("c1")])
            .await
            .unwrap();
        let error = agent
            .resume_with(state, [ApprovalDecision::approve("c1")])
            .await
            .unwrap_err();
        already_resumed(error);
        assert_eq!(*ran.lock().unwrap(), ["write b"]);
    })
    .await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_pause_resumed_twice_at_once_runs_its_calls_once() {
    within(10, async {
        for _ in 0..20 {
            let ran = Ran::default();
            let saved = paused_write(&ran).await;
            let resume = |ran: Ran, saved: String| async move {
                finisher(&ran)
                    .resume_with(read(&saved), [ApprovalDecision::approve("c1")])
                    .await
            };
            let (one, two) = tokio::join!(
                tokio::spawn(resume(ran.clone(), saved.clone())),
                tokio::spawn(resume(ran.clone(), saved.clone())),
            );
            let results = [one.unwrap(), two.unwrap()];
            let refused: Vec<AgentError> = results.into_iter().filter_map(Result::err).collect();
            assert_eq!(refused.len(), 1, "{refused:?}");
            already_resumed(refused.into_iter().next().unwrap());
            assert_eq!(*ran.lock().unwrap(), ["write b"], "the call ran once");
        }
    })
    .await;
}

#[tokio::test]
async fn a_refused_resume_does_not_use_up_its_pause() {
    within(10, async {
        let ran = Ran::default();
        let saved = paused_write(&ran).await;
        let error = finisher(&ran)
            .resume_with(read(&saved), [])
            .await
            .unwrap_err();
        let missing = ApprovalError::MissingDecision { id: "c1".into() };
        assert_eq!(error, AgentError::Approval(missing));
        let run = finisher(&ran)
            .resume_with(read(&saved), [ApprovalDecision::approve("c1")])
            .await
            .unwrap();
        assert_eq!(run.end, RunEnd::Completed);
        assert_eq!(*ran.lock().unwrap(), ["write b"]);
    })
    .await;
}

#[tokio::test]
async fn agents_sharing_a_file_ledger_resume_a_pause_once() {
    within(10, async {
        let dir = tempfile::tempdir().unwrap();
        let ran = Ran::default();
        let saved = paused_write(&ran).await;
        let pause_id = read(&saved).pause_id().unwrap().to_owned();
        // Two agents with their own handles on one directory, as two processes have.
        let finisher = |ran: &Ran| {
            writer(FauxModel::new().respond(FauxResponse::text("done")), ran)
                .pause_ledger(FileLedger::new(dir.path()).unwrap())
                .build()
                .unwrap()
        };
        finisher(&ran)
            .resume_with(read(&saved), [ApprovalDecision::approve("c1")])
            .await
            .unwrap();
        let claim = std::fs::read_to_string(dir.path().join(&pause_id)).unwrap();
        assert!(claim.starts_with(r#"{"resumedAtMs":"#), "{claim}");
        let error = finisher(&ran)
            .resume_with(read(&saved), [ApprovalDecision::approve("c1")])
            .await
            .unwrap_err();
        assert_eq!(already_resumed(error).0, pause_id);
        assert_eq!(*ran.lock().unwrap(), ["write b"]);
    })
    .await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_file_ledger_lets_exactly_one_of_many_claims_at_once_through() {
    within(10, async {
        let dir = tempfile::tempdir().unwrap();
        for round in 0..20 {
            let id = format!("{round:032x}");
            let claims: Vec<_> = (0..8)
                .map(|_| {
                    let (ledger, id) = (FileLedger::new(dir.path()).unwrap(), id.clone());
                    tokio::spawn(async move { ledger.claim(&id).await })
                })
                .collect();
            let mut won = 0;
            for claim in claims {
                match claim.await.unwrap() {
                    Ok(()) => won += 1,
                    Err(ClaimError::AlreadyResumed { pause_id, .. }) => assert_eq!(pause_id, id),
                    Err(other) => panic!("{other}"),
                }
            }
            assert_eq!(won, 1, "round {round}");
        }
    })
    .await;
}

#[tokio::test]
async fn a_file_ledger_refuses_an_id_that_is_not_a_file_name() {
    within(10, async {
        let dir = tempfile::tempdir().unwrap();
        let ledger = FileLedger::new(dir.path().join("claims")).unwrap();
        for id in ["", "../escape", "a/b"] {
            let error = ledger.claim(id).await.unwrap_err();
            assert_eq!(
                error,
                ClaimError::Unavailable(format!("{id:?} is not a pause id"))
            );
        }
        assert_eq!(std::fs::read_dir(dir.path()).unwrap().count(), 1);
        let memory = MemoryLedger::new();
        assert_eq!(memory.claim("a").await, Ok(()));
    })
    .await;
}

/// An agent whose `before_tool_call` blocks any `write` of "rm -rf /" and turns "cat" into
/// "cat /etc/shadow"; `write` needs approval.
fn guarded(model: FauxModel, ran: &Ran) -> Agent {
    writer(model, ran)
        .before_tool_call(|call| async move {
            Ok(match call.args["text"].as_str() {
                Some("rm -rf /") => ToolCallDecision::block("not that"),
                Some("cat") => ToolCallDecision::Replace(json!({"text": "cat /etc/shadow"})),
                _ => ToolCallDecision::Allow,
            })
        })
        .build()
        .unwrap()
}

#[tokio::test]
async fn an_edit_the_before_tool_call_hook_blocks_runs_nothing() {
    within(10, async {
        // On the model's path the hook blocks these arguments.
        let ran = Ran::default();
        let model = FauxModel::new()
            .respond(FauxResponse::tool_call(
                "c0",
                "write",
                json!({"text": "rm -rf /"}),
            ))
            .respond(FauxResponse::text("ok"));
        let run = guarded(model, &ran).prompt("go").await.unwrap();
        let result = run.messages[2].as_tool_result().unwrap();
        assert_eq!(
            (result.text(), result.is_error),
            ("not that".to_owned(), true)
        );

        // An edit supplying them is blocked too, and nothing runs.
        let saved = paused_write(&ran).await;
        let model = FauxModel::new().respond(FauxResponse::text("done"));
        let requests = model.clone();
        let fresh = guarded(model, &ran);
        let edit = ApprovalDecision::edit("c1", json!({"text": "rm -rf /"}));
        let error = fresh.resume_with(read(&saved), [edit]).await.unwrap_err();
        let blocked = ApprovalError::EditBlocked {
            id: "c1".into(),
            reason: "not that".into(),
        };
        assert_eq!(error, AgentError::Approval(blocked));
        assert_eq!(
            error.to_string(),
            "the edited arguments of call c1 are blocked: not that"
        );
        assert_eq!(*ran.lock().unwrap(), Vec::<String>::new());
        assert_eq!(requests.request_count(), 0);

        // The pause is not used up: another decision goes on.
        let edit = ApprovalDecision::edit("c1", json!({"text": "ls"}));
        fresh.resume_with(read(&saved), [edit]).await.unwrap();
        assert_eq!(*ran.lock().unwrap(), ["write ls"]);
    })
    .await;
}

#[tokio::test]
async fn an_edit_the_hook_changes_needs_approval_of_the_changed_arguments() {
    within(10, async {
        let ran = Ran::default();
        let saved = paused_write(&ran).await;
        let fresh = guarded(FauxModel::new().respond(FauxResponse::text("done")), &ran);
        let edit = ApprovalDecision::edit("c1", json!({"text": "cat"}));
        let error = fresh.resume_with(read(&saved), [edit]).await.unwrap_err();
        let expected = ApprovalError::EditNeedsApproval {
            id: "c1".into(),
            reason: "`write` always needs approval".into(),
        };
        assert_eq!(error, AgentError::Approval(expected));
        assert_eq!(*ran.lock().unwrap(), Vec::<String>::new());
    })
    .await;
}

/// A well-formed envelope of `size` bytes whose state holds one long string, signed with
/// nothing that matches.
fn forged(size: usize) -> String {
    let head =
        format!(r#"{{"format":"pi-run-state","version":{RUN_STATE_VERSION},"state":{{"x":""#);
    let tail = r#""},"signature":"00"}"#;
    let mut text = String::with_capacity(size);
    text.push_str(&head);
    text.extend(std::iter::repeat_n('a', size - head.len() - tail.len()));
    text.push_str(tail);
    text
}

/// The peak memory `read` grows this process by, with the peak reset first (Linux 4.0 and
/// later), and how long it takes. A small forged state is read first, so that the code
/// pages of the reading (resident memory too) are in before the peak is reset; the bounds
/// still leave room for the code other tests of this binary run meanwhile.
fn cost<T>(read: impl FnOnce() -> T) -> (T, u64, Duration) {
    let warm_up = RunState::from_signed_json(&forged(1 << 10), &key());
    assert_eq!(warm_up.unwrap_err(), StateFileError::BadSignature);
    let _ = std::fs::write("/proc/self/clear_refs", "5");
    let before = peak_rss();
    let started = Instant::now();
    let value = read();
    let took = started.elapsed();
    (value, peak_rss().saturating_sub(before), took)
}

#[tokio::test]
async fn a_state_over_the_size_limit_is_refused_before_it_is_parsed() {
    // Seen before the fix: a 64 MB file was parsed whole, its state serialized again for
    // the signature (+200 MB); a 1 GB one aborted the process.
    let _alone = measured().await;
    let text = forged(64 << 20);
    let (error, grown, took) = cost(|| RunState::from_signed_json(&text, &key()));
    assert_eq!(
        error.unwrap_err(),
        StateFileError::TooLarge {
            limit: DEFAULT_MAX_STATE_BYTES
        }
    );
    assert!(grown < 16 * MB, "peak memory grew by {} MB", grown / MB);
    assert!(took < Duration::from_secs(5), "{took:?}");
    assert_eq!(
        StateFileError::TooLarge { limit: 1024 }.to_string(),
        "the run state is larger than the limit of 1024 bytes"
    );
}

#[tokio::test]
async fn a_forged_state_is_refused_before_its_state_is_built() {
    let _alone = measured().await;
    // Seen before the fix: +33 MB for this 16 MB file (its state parsed, then serialized
    // again for the signature).
    let text = forged(16 << 20);
    let roomy = key().max_state_bytes(32 << 20);
    let (error, grown, took) = cost(|| RunState::from_signed_json(&text, &roomy));
    assert_eq!(error.unwrap_err(), StateFileError::BadSignature);
    eprintln!("16 MB forged state: peak +{} KB in {took:?}", grown >> 10);
    // The signature is checked over the text's bytes in place: no copy of the state.
    assert!(grown < 16 * MB, "peak memory grew by {} MB", grown / MB);
    assert!(took < Duration::from_secs(15), "{took:?}");
}

#[tokio::test]
async fn a_state_read_from_a_file_stops_reading_at_the_limit() {
    let _alone = measured().await;
    let endless = std::io::Read::take(std::io::repeat(b' '), 1 << 30);
    let (error, grown, took) = cost(|| RunState::from_signed_reader(endless, &key()));
    assert_eq!(
        error.unwrap_err(),
        StateFileError::TooLarge {
            limit: DEFAULT_MAX_STATE_BYTES
        }
    );
    assert!(grown < 32 * MB, "peak memory grew by {} MB", grown / MB);
    assert!(took < Duration::from_secs(5), "{took:?}");

    // Under the limit, a file reads as the text does.
    let ran = Ran::default();
    let saved = within(10, paused_write(&ran)).await;
    let state = RunState::from_signed_reader(saved.as_bytes(), &key()).unwrap();
    assert_eq!(state.pending_approvals().count(), 1);
}

#[test]
fn a_signing_key_shorter_than_16_bytes_is_refused() {
    let started = Instant::now();
    for short in [&b""[..], b"k", b"fifteen bytes!!"] {
        let error = StateKey::new(short).unwrap_err();
        assert_eq!(
            error,
            StateFileError::KeyTooShort {
                length: short.len()
            }
        );
    }
    assert_eq!(
        StateKey::new(b"").unwrap_err().to_string(),
        "a run state signing key needs at least 16 bytes; this one has 0"
    );
    assert!(StateKey::new(b"sixteen bytes!!!").is_ok());
    assert!(started.elapsed() < Duration::from_secs(5));
}
