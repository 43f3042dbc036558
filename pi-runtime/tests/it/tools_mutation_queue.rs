//! The per-file mutation queue (SPEC §9.1).
//!
//! The tests that order operations by how long they sleep run on tokio's paused clock, which
//! only moves when every task waits: a loaded machine cannot reorder the wake-ups.

use std::sync::{Arc, Mutex};
use std::time::Duration;

use pi_runtime::tools::{FileMutationQueue, Replacement, WorkingDir, edit, write};
use pi_runtime::{State, ToolContext, ToolError, ToolResult};
use tokio::time::sleep;

type Log = Arc<Mutex<Vec<String>>>;

fn note(log: &Log, entry: String) {
    log.lock().unwrap().push(entry);
}

async fn op(queue: &FileMutationQueue, path: &std::path::Path, name: &str, ms: u64, log: &Log) {
    queue
        .run(path, async {
            note(log, format!("{name}:start"));
            sleep(Duration::from_millis(ms)).await;
            note(log, format!("{name}:end"));
        })
        .await
        .unwrap();
}

#[tokio::test(start_paused = true)]
async fn same_path_runs_in_call_order() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("f.txt");
    let (queue, log) = (FileMutationQueue::new(), Log::default());
    tokio::join!(
        op(&queue, &path, "first", 50, &log),
        op(&queue, &path, "second", 0, &log)
    );
    assert_eq!(
        *log.lock().unwrap(),
        ["first:start", "first:end", "second:start", "second:end"]
    );
    assert_eq!(queue.active_files(), 0, "entries are removed when unused");
}

#[tokio::test(start_paused = true)]
async fn different_paths_overlap() {
    let dir = tempfile::tempdir().unwrap();
    let (queue, log) = (FileMutationQueue::new(), Log::default());
    let (a, b) = (dir.path().join("a"), dir.path().join("b"));
    tokio::join!(op(&queue, &a, "a", 80, &log), op(&queue, &b, "b", 10, &log));
    assert_eq!(
        *log.lock().unwrap(),
        ["a:start", "b:start", "b:end", "a:end"]
    );
}

#[tokio::test]
async fn symlink_and_target_share_a_queue() {
    let dir = tempfile::tempdir().unwrap();
    let target = dir.path().join("target.txt");
    std::fs::write(&target, "x").unwrap();
    let link = dir.path().join("link.txt");
    std::os::unix::fs::symlink(&target, &link).unwrap();
    let (queue, log) = (FileMutationQueue::new(), Log::default());
    tokio::join!(
        op(&queue, &link, "link", 50, &log),
        op(&queue, &target, "target", 0, &log)
    );
    assert_eq!(
        *log.lock().unwrap(),
        ["link:start", "link:end", "target:start", "target:end"]
    );
}

#[tokio::test(start_paused = true)]
async fn a_failure_does_not_poison_the_queue() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("f.txt");
    let queue = FileMutationQueue::new();
    let (failed, next) = tokio::join!(
        queue.run(&path, async {
            sleep(Duration::from_millis(20)).await;
            Err::<(), _>("boom")
        }),
        queue.run(&path, async { "ran" })
    );
    assert_eq!(failed.unwrap(), Err("boom"));
    assert_eq!(next.unwrap(), "ran");
    assert_eq!(queue.active_files(), 0);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn many_calls_keep_global_call_order() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("f.txt");
    let queue = FileMutationQueue::new();
    let order = Arc::new(Mutex::new(Vec::new()));
    let calls = (0..32).map(|i| {
        let (queue, order) = (queue.clone(), Arc::clone(&order));
        // Two spellings of one file share its key.
        let path = if i % 2 == 0 {
            path.clone()
        } else {
            dir.path().join(".").join("f.txt")
        };
        async move {
            queue
                .run(&path, async {
                    tokio::task::yield_now().await;
                    order.lock().unwrap().push(i);
                })
                .await
                .unwrap();
        }
    });
    futures::future::join_all(calls).await;
    assert_eq!(*order.lock().unwrap(), (0..32).collect::<Vec<_>>());
    assert_eq!(queue.active_files(), 0);
}

#[tokio::test(start_paused = true)]
async fn a_cancelled_waiter_gives_up_its_place_cleanly() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("f.txt");
    let (queue, log) = (FileMutationQueue::new(), Log::default());
    let holder = op(&queue, &path, "holder", 60, &log);
    let dropped = tokio::time::timeout(
        Duration::from_millis(10),
        op(&queue, &path, "dropped", 0, &log),
    );
    let last = op(&queue, &path, "last", 0, &log);
    let (_, timed_out, _) = tokio::join!(holder, dropped, last);
    assert!(timed_out.is_err());
    assert_eq!(
        *log.lock().unwrap(),
        ["holder:start", "holder:end", "last:start", "last:end"]
    );
    assert_eq!(queue.active_files(), 0);
}

#[tokio::test]
async fn resolution_errors_other_than_missing_fail_the_operation() {
    let dir = tempfile::tempdir().unwrap();
    let (a, b) = (dir.path().join("a"), dir.path().join("b"));
    std::os::unix::fs::symlink(&b, &a).unwrap();
    std::os::unix::fs::symlink(&a, &b).unwrap();
    let queue = FileMutationQueue::new();
    let error = queue.run(&a, async {}).await.unwrap_err();
    assert_eq!(error.raw_os_error(), Some(nix::errno::Errno::ELOOP as i32));
    // A missing file (and a missing parent) is keyed by its path and runs.
    assert!(
        queue
            .run(dir.path().join("missing/f"), async {})
            .await
            .is_ok()
    );
    assert_eq!(queue.active_files(), 0);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn parallel_edits_of_one_file_all_apply() {
    let dir = tempfile::tempdir().unwrap();
    std::fs::write(dir.path().join("f.txt"), "alpha\nbeta\ngamma\n").unwrap();
    let cwd = WorkingDir::from(dir.path());
    let one = |old: &str, new: &str| replace_in_f(&cwd, old, new);
    let (ra, rb) = tokio::join!(one("alpha", "ALPHA"), one("beta", "BETA"));
    ra.unwrap();
    rb.unwrap();
    assert_eq!(
        std::fs::read_to_string(dir.path().join("f.txt")).unwrap(),
        "ALPHA\nBETA\ngamma\n"
    );

    let original: String = (0..20).map(|i| format!("line{i}\n")).collect();
    std::fs::write(dir.path().join("f.txt"), &original).unwrap();
    let many = (0..20).map(|i| one(&format!("line{i}\n"), &format!("LINE{i}\n")));
    let results = futures::future::join_all(many).await;
    assert!(results.iter().all(Result::is_ok));
    assert_eq!(
        std::fs::read_to_string(dir.path().join("f.txt")).unwrap(),
        original.to_uppercase()
    );
}

#[tokio::test]
async fn an_edit_then_a_write_on_one_file_the_write_wins() {
    let dir = tempfile::tempdir().unwrap();
    std::fs::write(dir.path().join("f.txt"), "original\n").unwrap();
    let cwd = WorkingDir::from(dir.path());
    let ctx = || ToolContext::detached("c1");
    let (re, rw) = tokio::join!(
        replace_in_f(&cwd, "original", "edited"),
        write(
            State(cwd.clone()),
            "f.txt".into(),
            "replacement\n".into(),
            ctx()
        )
    );
    re.unwrap();
    rw.unwrap();
    assert_eq!(
        std::fs::read_to_string(dir.path().join("f.txt")).unwrap(),
        "replacement\n"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn two_edits_of_one_path_never_overlap_and_two_paths_do() {
    let dir = tempfile::tempdir().unwrap();
    let (a, b) = (dir.path().join("a.txt"), dir.path().join("b.txt"));
    std::fs::write(&a, "a0\n").unwrap();
    std::fs::write(&b, "b0\n").unwrap();
    let cwd = WorkingDir::from(dir.path());
    let read = |path: &std::path::Path| std::fs::read_to_string(path).unwrap();
    // An operation on a.txt is under way (the queue every built-in edit and write uses).
    let running = FileMutationQueue::global().lock(&a).await.unwrap();
    let edit_a = tokio::spawn(replace_in(&cwd, "a.txt", "a0", "a1"));
    let edit_b = tokio::spawn(replace_in(&cwd, "b.txt", "b0", "b1"));
    // The edit of b.txt runs and ends meanwhile; the edit of a.txt waits its turn.
    tokio::time::timeout(Duration::from_secs(10), edit_b)
        .await
        .expect("the edit of another file does not wait")
        .unwrap()
        .unwrap();
    assert_eq!(read(&b), "b1\n");
    tokio::time::sleep(Duration::from_millis(100)).await;
    assert!(!edit_a.is_finished(), "the edit of a.txt waited");
    assert_eq!(read(&a), "a0\n");
    drop(running);
    tokio::time::timeout(Duration::from_secs(10), edit_a)
        .await
        .expect("the edit of a.txt runs once the file is free")
        .unwrap()
        .unwrap();
    assert_eq!(read(&a), "a1\n");
}

/// `edit` of `f.txt` with one replacement; the future borrows nothing.
fn replace_in_f(
    cwd: &WorkingDir,
    old: &str,
    new: &str,
) -> impl Future<Output = Result<ToolResult, ToolError>> + use<> {
    replace_in(cwd, "f.txt", old, new)
}

/// `edit` of `file` with one replacement; the future borrows nothing.
fn replace_in(
    cwd: &WorkingDir,
    file: &str,
    old: &str,
    new: &str,
) -> impl Future<Output = Result<ToolResult, ToolError>> + use<> {
    let edits = vec![Replacement {
        old_text: old.into(),
        new_text: new.into(),
    }];
    let ctx = ToolContext::detached("c1");
    edit(State(cwd.clone()), file.into(), edits, ctx)
}
