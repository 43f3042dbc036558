//! Durable runs on a real Restate server: `examples/durable_agent.rs` served to
//! `restate-server` (npm `@restatedev/restate-server`, pinned in `tests/restate/`), each
//! test with its own server on loopback ports and its own data directory.
//!
//! - Crashes: ten runs while the service is killed with SIGKILL ten times and restarted;
//!   every run ends with the transcript of an uninterrupted run, and every tool call took
//!   effect once (twice only across a kill, with the same idempotency key).
//! - An approval given while the service and the server are both down.
//! - A parallel batch of ten calls under the journal.
//! - Two service processes behind one nginx (HTTP/2), fifty runs, one process killed.
//!
//! The tests are `#[ignore]`d in a plain `cargo test`: `.ci/run` installs the server, points
//! `PI_RESTATE_SERVER` (and `PI_NGINX`) at it and runs them with `--include-ignored`. Without
//! the server a test says why and skips; under CI (`CI` set) it fails.

use std::collections::BTreeMap;
use std::io::{BufRead, BufReader, Write as _};
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

use serde_json::{Value, json};

mod support;
use support::{Killed, Nginx, example_binary, free_port, installed};

/// The answer of the default script: three steps, then the approved `publish`.
const FINISHED: &str = "Finished: step 1 done; step 2 done; step 3 done; published: three steps.";

/// The calls of the default script, in order.
const CALLS: [&str; 4] = ["call-1", "call-2", "call-3", "call-4"];

/// How long any one wait may take before the test fails.
const PATIENCE: Duration = Duration::from_secs(90);

/// A `restate-server` with its own data directory and loopback ports; killed (SIGKILL) when
/// dropped, its directory removed.
struct Restate {
    binary: PathBuf,
    dir: tempfile::TempDir,
    admin: u16,
    ingress: u16,
    node: u16,
    process: Option<Killed>,
    http: reqwest::Client,
}

impl Restate {
    async fn start(binary: PathBuf) -> Restate {
        let mut restate = Restate {
            binary,
            dir: tempfile::tempdir().expect("a temp dir"),
            admin: free_port(),
            ingress: free_port(),
            node: free_port(),
            process: None,
            http: reqwest::Client::new(),
        };
        restate.restart().await;
        restate
    }

    /// Start the server (again, on the same data) and wait until it serves.
    async fn restart(&mut self) {
        let log = std::fs::File::create(self.dir.path().join("server.log")).expect("a log file");
        let child = Command::new(&self.binary)
            .args([
                "--bind-ip",
                "127.0.0.1",
                "--bind-port",
                &self.node.to_string(),
            ])
            .arg("--base-dir")
            .arg(self.dir.path())
            .args(["--no-logo", "--listen-mode", "tcp", "--node-name", "test"])
            .env("RESTATE_DISABLE_TELEMETRY", "true")
            .env(
                "RESTATE_ADMIN__BIND_ADDRESS",
                format!("127.0.0.1:{}", self.admin),
            )
            .env(
                "RESTATE_INGRESS__BIND_ADDRESS",
                format!("127.0.0.1:{}", self.ingress),
            )
            .stdin(Stdio::null())
            .stdout(Stdio::null())
            .stderr(log)
            .spawn()
            .expect("restate-server starts");
        self.process = Some(Killed(child));
        let started = Instant::now();
        loop {
            let admin = self.http.get(self.admin_url("/health")).send().await;
            let ingress = self.http.get(self.url("/restate/health")).send().await;
            if admin.is_ok_and(|r| r.status().is_success())
                && ingress.is_ok_and(|r| r.status().is_success())
            {
                return;
            }
            assert!(
                started.elapsed() < PATIENCE,
                "restate-server is not healthy: {}",
                self.log()
            );
            tokio::time::sleep(Duration::from_millis(100)).await;
        }
    }

    fn kill(&mut self) {
        self.process = None;
    }

    fn log(&self) -> String {
        std::fs::read_to_string(self.dir.path().join("server.log")).unwrap_or_default()
    }

    fn admin_url(&self, path: &str) -> String {
        format!("http://127.0.0.1:{}{path}", self.admin)
    }

    fn url(&self, path: &str) -> String {
        format!("http://127.0.0.1:{}{path}", self.ingress)
    }

    /// Register the deployment at `uri` (`POST :9070/deployments`).
    async fn register(&self, uri: &str) {
        let response = (self.http.post(self.admin_url("/deployments")))
            .json(&json!({ "uri": uri }))
            .send()
            .await
            .expect("the admin API answers");
        let status = response.status();
        let body = response.text().await.unwrap_or_default();
        assert!(status.is_success(), "registering {uri}: {status} {body}");
    }

    /// `POST :8080/DurableAgent/<key>/<handler>` with a JSON body: status and body.
    async fn call(&self, key: &str, handler: &str, body: Option<Value>) -> (u16, String) {
        let mut request = self
            .http
            .post(self.url(&format!("/DurableAgent/{key}/{handler}")));
        if let Some(body) = body {
            request = request.json(&body);
        }
        let response = request
            .timeout(PATIENCE)
            .send()
            .await
            .expect("the ingress answers");
        let status = response.status().as_u16();
        (status, response.text().await.unwrap_or_default())
    }

    /// Start the run `key` without waiting for it (`/run/send`).
    async fn start_run(&self, key: &str, prompt: &str) {
        let (status, body) = self.call(key, "run/send", Some(json!(prompt))).await;
        assert_eq!(status, 202, "starting {key}: {body}");
    }

    /// The run's answer, once it has one (`GET /restate/workflow/.../attach`).
    async fn answer(&self, key: &str) -> Value {
        let url = self.url(&format!("/restate/workflow/DurableAgent/{key}/attach"));
        let response = (self.http.get(url))
            .timeout(PATIENCE)
            .send()
            .await
            .unwrap_or_else(|error| panic!("attaching to {key}: {error}"));
        let status = response.status();
        let body = response.text().await.unwrap_or_default();
        assert!(status.is_success(), "run {key}: {status} {body}");
        serde_json::from_str(&body).unwrap_or_else(|_| panic!("run {key} answered {body}"))
    }

    /// Wait until the run `key` waits for an approval, then approve it.
    async fn approve_when_asked(&self, key: &str) {
        let started = Instant::now();
        loop {
            let (status, body) = self.call(key, "pending", None).await;
            if status == 200 && body.contains("call-4") {
                break;
            }
            assert!(
                started.elapsed() < PATIENCE,
                "run {key} never asked: {status} {body}"
            );
            tokio::time::sleep(Duration::from_millis(100)).await;
        }
        let (status, body) = self.call(key, "decide", Some(json!("approve"))).await;
        assert_eq!(status, 200, "approving {key}: {body}");
    }

    /// The finished run's transcript, without what differs between two runs of one script
    /// (times and durations).
    async fn transcript(&self, key: &str) -> Value {
        let (status, body) = self.call(key, "transcript", None).await;
        assert_eq!(status, 200, "{body}");
        let mut transcript: Value = serde_json::from_str(&body).expect("a JSON transcript");
        without_times(&mut transcript);
        transcript
    }
}

fn without_times(value: &mut Value) {
    match value {
        Value::Object(object) => {
            object.remove("timestamp");
            object.remove("durationMs");
            object.values_mut().for_each(without_times);
        }
        Value::Array(items) => items.iter_mut().for_each(without_times),
        _ => {}
    }
}

/// One `durable_agent` process serving on `port`; SIGKILLed when dropped.
struct Service {
    port: u16,
    effects: PathBuf,
    args: Vec<&'static str>,
    process: Option<Killed>,
}

impl Service {
    fn start(port: u16, effects: &Path) -> Service {
        Service::with_args(port, effects, Vec::new())
    }

    fn with_args(port: u16, effects: &Path, args: Vec<&'static str>) -> Service {
        let mut service = Service {
            port,
            effects: effects.to_owned(),
            args,
            process: None,
        };
        service.restart();
        service
    }

    fn restart(&mut self) {
        let mut child = Command::new(example_binary("durable_agent"))
            .args(["--bind", &format!("127.0.0.1:{}", self.port), "--effects"])
            .arg(&self.effects)
            .args(&self.args)
            .stdin(Stdio::null())
            .stdout(Stdio::piped())
            .stderr(Stdio::null())
            .spawn()
            .expect("durable_agent starts");
        let mut line = String::new();
        BufReader::new(child.stdout.take().expect("stdout"))
            .read_line(&mut line)
            .expect("durable_agent says where it serves");
        assert!(line.starts_with("serving the Restate endpoint"), "{line}");
        self.process = Some(Killed(child));
    }

    /// SIGKILL, and mark the moment in the effects file.
    fn kill(&mut self, marker: &str) {
        self.process = None;
        let mut file = std::fs::OpenOptions::new()
            .append(true)
            .create(true)
            .open(&self.effects)
            .expect("the effects file");
        writeln!(file, "# {marker}").expect("written");
    }

    fn uri(&self) -> String {
        format!("http://127.0.0.1:{}", self.port)
    }
}

/// Every tool call of `runs` took effect once, or twice with a kill in between (the call in
/// flight at that kill ran again after the restart, under the same idempotency key, which is
/// the line itself). `calls` says which calls each run makes. Returns how many calls ran
/// twice.
fn check_effects(effects: &Path, runs: &[String], calls: &[&str]) -> usize {
    let text = std::fs::read_to_string(effects).expect("the effects file");
    // For each (run, call): the number of kills seen before each of its lines.
    let mut seen: BTreeMap<(String, String), Vec<usize>> = BTreeMap::new();
    let mut kills = 0;
    for line in text.lines() {
        if line.starts_with("# ") {
            kills += 1;
            continue;
        }
        let (run, call) = line
            .split_once(' ')
            .unwrap_or_else(|| panic!("a bad line: {line}"));
        seen.entry((run.to_owned(), call.to_owned()))
            .or_default()
            .push(kills);
    }
    let mut twice = 0;
    for run in runs {
        for call in calls {
            let at = seen
                .remove(&(run.clone(), (*call).to_owned()))
                .unwrap_or_default();
            match at.as_slice() {
                [_] => {}
                [first, second] => {
                    assert!(
                        first < second,
                        "{run} {call} took effect twice with no kill between:\n{text}"
                    );
                    twice += 1;
                }
                _ => panic!("{run} {call} took effect {} times:\n{text}", at.len()),
            }
        }
    }
    assert!(seen.is_empty(), "calls nobody made: {seen:?}");
    twice
}

/// The effects file's lines, kill markers included.
fn effect_lines(effects: &Path) -> Vec<String> {
    let text = std::fs::read_to_string(effects).unwrap_or_default();
    text.lines().map(str::to_owned).collect()
}

/// A small deterministic generator: the kills land at varied moments, the same in every
/// run of the test.
struct Moments(u64);

impl Moments {
    fn next_ms(&mut self, range: std::ops::Range<u64>) -> u64 {
        self.0 = self
            .0
            .wrapping_mul(6_364_136_223_846_793_005)
            .wrapping_add(1);
        range.start + (self.0 >> 33) % (range.end - range.start)
    }
}

fn server() -> Option<PathBuf> {
    installed("PI_RESTATE_SERVER", "restate-server")
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
#[ignore = "needs restate-server: set PI_RESTATE_SERVER (.ci/run)"]
async fn runs_survive_ten_kills_with_each_completed_call_made_once() {
    let Some(binary) = server() else { return };
    let restate = Restate::start(binary).await;
    let effects = restate.dir.path().join("effects.txt");
    let mut service = Service::start(free_port(), &effects);
    restate.register(&service.uri()).await;

    // The transcript of an uninterrupted run.
    restate.start_run("reference", "Go").await;
    restate.approve_when_asked("reference").await;
    assert_eq!(restate.answer("reference").await, json!(FINISHED));
    let reference = restate.transcript("reference").await;
    assert_eq!(reference.as_array().map(Vec::len), Some(10), "{reference}");

    // Ten runs, started a little apart so that the kills catch them in different places:
    // streaming a response, in a tool, between steps, waiting for approval.
    let runs: Vec<String> = (0..10).map(|i| format!("crash-{i}")).collect();
    let mut moments = Moments(7);
    for run in &runs {
        restate.start_run(run, "Go").await;
        tokio::time::sleep(Duration::from_millis(moments.next_ms(50..250))).await;
    }
    for kill in 1..=10 {
        tokio::time::sleep(Duration::from_millis(moments.next_ms(100..700))).await;
        service.kill(&format!("kill {kill}"));
        service.restart();
    }
    for run in &runs {
        restate.approve_when_asked(run).await;
    }
    for run in &runs {
        assert_eq!(restate.answer(run).await, json!(FINISHED), "{run}");
        assert_eq!(restate.transcript(run).await, reference, "{run}");
    }
    let mut all = runs.clone();
    all.push("reference".to_owned());
    let twice = check_effects(&effects, &all, &CALLS);
    let _ = writeln!(
        std::io::stderr(),
        "10 kills over 10 runs: {twice} of 44 tool calls took effect twice (in flight at a kill)"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
#[ignore = "needs restate-server: set PI_RESTATE_SERVER (.ci/run)"]
async fn a_sub_agent_survives_kills_in_its_tools_and_no_completed_call_runs_again() {
    let Some(binary) = server() else { return };
    let restate = Restate::start(binary).await;
    let effects = restate.dir.path().join("effects.txt");
    // Steps of 600 ms: a kill meant for a step lands in it even on a busy machine.
    let mut service = Service::with_args(free_port(), &effects, vec!["--step-ms", "600"]);
    restate.register(&service.uri()).await;

    restate.start_run("reference", "delegate 4").await;
    let delegated = json!("Delegated: Ran 4 steps.");
    assert_eq!(restate.answer("reference").await, delegated);
    let reference = restate.transcript("reference").await;
    // The prompt, the call of `worker`, its result, the answer.
    assert_eq!(reference.as_array().map(Vec::len), Some(4), "{reference}");

    // The kills land in the worker's tools, in its responses and between its steps.
    let runs: Vec<String> = (0..5).map(|i| format!("nested-{i}")).collect();
    let mut moments = Moments(11);
    for run in &runs {
        restate.start_run(run, "delegate 4").await;
        tokio::time::sleep(Duration::from_millis(moments.next_ms(50..250))).await;
    }
    for kill in 1..=6 {
        tokio::time::sleep(Duration::from_millis(moments.next_ms(300..1_000))).await;
        service.kill(&format!("kill {kill}"));
        service.restart();
    }
    for run in &runs {
        assert_eq!(restate.answer(run).await, delegated, "{run}");
        assert_eq!(restate.transcript(run).await, reference, "{run}");
    }

    // A kill while the worker's third call runs, its first two done and recorded: they do
    // not run again, the third runs once (it never finished), and the run ends as the
    // reference did.
    restate.start_run("inside", "delegate 4").await;
    let started = Instant::now();
    while !effect_lines(&effects).contains(&"inside/call-1 call-2".to_owned()) {
        assert!(
            started.elapsed() < PATIENCE,
            "the worker never made its second call"
        );
        tokio::time::sleep(Duration::from_millis(10)).await;
    }
    // The third call takes 600 ms from its start, after a response of a few chunks.
    tokio::time::sleep(Duration::from_millis(300)).await;
    service.kill("kill inside the worker's third call");
    service.restart();
    assert_eq!(restate.answer("inside").await, delegated);
    assert_eq!(restate.transcript("inside").await, reference);
    let lines = effect_lines(&effects);
    let at = |line: &str| lines.iter().position(|seen| seen == line);
    let kill = at("# kill inside the worker's third call");
    assert!(
        at("inside/call-1 call-2") < kill && kill < at("inside/call-1 call-3"),
        "the kill came between the second call's effect and the third's:\n{lines:#?}"
    );
    for call in CALLS {
        let line = format!("inside/call-1 {call}");
        let made = lines.iter().filter(|seen| **seen == line).count();
        assert_eq!(made, 1, "{line} took effect {made} times");
    }

    // The worker's calls are keyed `<run>/call-1/<call>`: each took effect once, or twice
    // only across a kill.
    let all = runs
        .iter()
        .cloned()
        .chain(["reference".to_owned(), "inside".to_owned()]);
    let workers: Vec<String> = all.map(|run| format!("{run}/call-1")).collect();
    let twice = check_effects(&effects, &workers, &CALLS);
    let _ = writeln!(
        std::io::stderr(),
        "7 kills over 6 runs: {twice} of 28 worker calls took effect twice (in flight at a kill)"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
#[ignore = "needs restate-server: set PI_RESTATE_SERVER (.ci/run)"]
async fn an_approval_sent_while_everything_is_down_finishes_the_run() {
    let Some(binary) = server() else { return };
    let mut restate = Restate::start(binary).await;
    let effects = restate.dir.path().join("effects.txt");
    let mut service = Service::start(free_port(), &effects);
    restate.register(&service.uri()).await;
    restate.start_run("approval", "Go").await;
    let started = Instant::now();
    loop {
        let (_, body) = restate.call("approval", "pending", None).await;
        if body.contains("call-4") {
            let pending: Value = serde_json::from_str(&body).expect("JSON");
            assert_eq!(pending[0]["tool"], "publish", "{body}");
            assert_eq!(pending[0]["args"], json!({"summary": "three steps"}));
            break;
        }
        assert!(started.elapsed() < PATIENCE, "the run never asked: {body}");
        tokio::time::sleep(Duration::from_millis(100)).await;
    }

    service.kill("the service is killed");
    restate.kill();
    restate.restart().await;
    // Nothing serves the workflow now: the decision is accepted and kept.
    let (status, body) = restate
        .call("approval", "decide/send", Some(json!("approve")))
        .await;
    assert_eq!(status, 202, "{body}");

    let _service = Service::start(service.port, &effects);
    assert_eq!(restate.answer("approval").await, json!(FINISHED));
    // It waited for the decision when killed: nothing was in flight.
    assert_eq!(check_effects(&effects, &["approval".to_owned()], &CALLS), 0);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
#[ignore = "needs restate-server: set PI_RESTATE_SERVER (.ci/run)"]
async fn a_parallel_batch_of_ten_finishes_within_two_seconds_under_the_journal() {
    let Some(binary) = server() else { return };
    let restate = Restate::start(binary).await;
    let effects = restate.dir.path().join("effects.txt");
    // The model answers at once: what is timed is the batch.
    let service = Service::with_args(free_port(), &effects, vec!["--chunk-delay-ms", "0"]);
    restate.register(&service.uri()).await;
    // A first run warms the connections between the server and the service up.
    restate.start_run("warm-up", "steps 0").await;
    assert_eq!(restate.answer("warm-up").await, json!("Ran 0 steps."));
    // Each call sleeps 300 ms: one after the other, the ten would take 3 s.
    let started = Instant::now();
    restate.start_run("parallel", "parallel").await;
    assert_eq!(
        restate.answer("parallel").await,
        json!("Ran 10 steps at once.")
    );
    let took = started.elapsed();
    assert!(took < Duration::from_secs(2), "took {took:?}");
    let _ = writeln!(
        std::io::stderr(),
        "a run with one batch of ten 300 ms calls under the journal: {took:?}"
    );
    let calls: Vec<String> = (1..=10).map(|i| format!("call-{i}")).collect();
    let calls: Vec<&str> = calls.iter().map(String::as_str).collect();
    assert_eq!(check_effects(&effects, &["parallel".to_owned()], &calls), 0);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
#[ignore = "needs restate-server and nginx: set PI_RESTATE_SERVER, PI_NGINX (.ci/run)"]
async fn fifty_runs_on_two_processes_behind_nginx_survive_losing_one() {
    let (Some(binary), Some(nginx)) = (server(), installed("PI_NGINX", "nginx")) else {
        return;
    };
    let restate = Restate::start(binary).await;
    let effects = restate.dir.path().join("effects.txt");
    let mut first = Service::start(free_port(), &effects);
    let _second = Service::start(free_port(), &effects);
    let balancer = balance(&nginx, restate.dir.path(), &[first.port, _second.port]);
    restate
        .register(&format!("http://127.0.0.1:{}", balancer.1))
        .await;

    let runs: Vec<String> = (0..50).map(|i| format!("scale-{i}")).collect();
    let started = Instant::now();
    for run in &runs {
        restate.start_run(run, "Go").await;
    }
    tokio::time::sleep(Duration::from_millis(700)).await;
    first.kill("one of the two processes is killed");
    let approvals = runs.iter().map(|run| restate.approve_when_asked(run));
    futures::future::join_all(approvals).await;
    let answers = futures::future::join_all(runs.iter().map(|run| restate.answer(run))).await;
    let took = started.elapsed();
    for (run, answer) in runs.iter().zip(answers) {
        assert_eq!(answer, json!(FINISHED), "{run}");
    }
    let twice = check_effects(&effects, &runs, &CALLS);
    let _ = writeln!(
        std::io::stderr(),
        "50 runs of 5 model steps and 4 tool calls on two processes, one killed: {took:?}; \
         {twice} of 200 tool calls took effect twice (in flight at the kill)"
    );
}

/// nginx on a free loopback port, balancing HTTP/2 (what Restate speaks to a service) round
/// robin over `ports`; and that port.
fn balance(nginx: &Path, dir: &Path, ports: &[u16]) -> (Nginx, u16) {
    let port = free_port();
    let upstreams: String = (ports.iter())
        .map(|port| format!("  server 127.0.0.1:{port} max_fails=1 fail_timeout=5s;\n"))
        .collect();
    let dir = dir.display();
    let conf = format!(
        "pid {dir}/nginx.pid;\nerror_log {dir}/nginx-error.log;\ndaemon off;\nevents {{}}\n\
         http {{\n access_log off;\n client_body_temp_path {dir};\n\
         upstream services {{\n{upstreams} }}\n\
         server {{\n  listen 127.0.0.1:{port} http2;\n\
         location / {{\n   grpc_pass grpc://services;\n   grpc_read_timeout 1h;\n\
         grpc_send_timeout 1h;\n   client_max_body_size 0;\n  }}\n }}\n}}\n"
    );
    let path = format!("{dir}/nginx.conf");
    std::fs::write(&path, conf).expect("written");
    let child = Command::new(nginx)
        .args(["-c", &path, "-e", &format!("{dir}/nginx-error.log")])
        .stdin(Stdio::null())
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .spawn()
        .expect("nginx starts");
    let started = Instant::now();
    while std::net::TcpStream::connect(("127.0.0.1", port)).is_err() {
        assert!(started.elapsed() < PATIENCE, "nginx does not listen");
        std::thread::sleep(Duration::from_millis(50));
    }
    (Nginx(child), port)
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
#[ignore = "needs restate-server: set PI_RESTATE_SERVER (.ci/run)"]
async fn a_denied_call_never_runs_and_a_decision_too_early_is_refused() {
    let Some(binary) = server() else { return };
    let restate = Restate::start(binary).await;
    let effects = restate.dir.path().join("effects.txt");
    let service = Service::start(free_port(), &effects);
    restate.register(&service.uri()).await;
    restate.start_run("deny", "Go").await;
    // The run is still in its first steps: nothing to decide yet. A clear refusal (409), not
    // a server error (it was 500).
    let (status, body) = restate.call("deny", "decide", Some(json!("approve"))).await;
    assert_eq!(
        (status, body.as_str()),
        (
            409,
            r#"{"code":409,"message":"the run deny waits for no approval","source":"invocation"}"#
        )
    );
    let started = Instant::now();
    loop {
        let (_, body) = restate.call("deny", "pending", None).await;
        if body.contains("call-4") {
            break;
        }
        assert!(started.elapsed() < PATIENCE, "the run never asked: {body}");
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
    let (status, body) = restate.call("deny", "decide", Some(json!("deny"))).await;
    assert_eq!(status, 200, "{body}");
    let answer = restate.answer("deny").await;
    assert_eq!(
        answer,
        json!(
            "Finished: step 1 done; step 2 done; step 3 done; Tool call denied: a person denied it."
        )
    );
    assert_eq!(
        check_effects(&effects, &["deny".to_owned()], &CALLS[..3]),
        0
    );
}
