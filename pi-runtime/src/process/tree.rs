//! Find and kill every process one `bash` call or one stdio MCP server started, including
//! the ones that left its process group or session.
//!
//! A process group alone is not enough: `setsid cmd &` (or `setpgid`) takes a process out of
//! the shell's group, and a double fork (`(cmd &)`) reparents it to init, so neither the group
//! nor the parent chain leads to it any more. Each call therefore marks its shell with an
//! environment variable of its own ([`MARKER_VAR`]`=<random token>`), which every descendant
//! inherits whatever group, session or parent it ends up with. At kill time, [`Tree::kill`]
//! takes the union of
//!
//! - the shell's process group,
//! - every process whose `/proc/<pid>/environ` carries the call's marker, and
//! - every descendant of those, by their parent links (this catches a child that cleared
//!   its environment, such as `env -i setsid cmd &`, while its parent is still there),
//!
//! and freezes each member with `SIGSTOP` as soon as it is found, then scans again, until a
//! scan finds nothing new. (Once the shell was reaped, its pid and group id may be reused by
//! an unrelated process, so from then on only the marker and descent from marked processes
//! count.) A stopped process can neither fork nor exit, so the tree holds
//! still while it is walked: a child forked between two scans is found by the next one, with
//! its parent still alive. Then every member gets `SIGKILL`, and the scans go on until none
//! finds a member alive.
//!
//! Rejected alternatives:
//! - `prctl(PR_SET_CHILD_SUBREAPER)` on our own process would keep every orphan in our tree,
//!   but it is process-wide: every orphan of the host application (not just ours) would be
//!   reparented to it and stay a zombie unless reaped, and reaping with `waitpid(-1)` would
//!   steal the exit statuses of children that tokio or the application are waiting for.
//! - A per-call helper that becomes the subreaper needs code of ours between `fork` and
//!   `exec` (the crate forbids `unsafe`) or a helper binary on every host.
//! - A cgroup needs a delegated, writable cgroup v2 hierarchy, which an unprivileged library
//!   cannot count on.
//!
//! What still escapes: a process that clears its environment *and* is orphaned before the
//! kill (`(env -i setsid cmd &)`), a process of another user (which we could not signal
//! anyway), and one handed to a service outside the tree (`systemd-run`, `at`). For those the
//! output drain after a kill has a hard time limit, so they cannot keep the tool from
//! returning.
//!
//! For a stdio MCP server, the server process plays the shell's part below.

use std::collections::{HashMap, HashSet};
use std::fs;
use std::io;
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::time::{Duration, SystemTime, UNIX_EPOCH};

use nix::sys::signal::{Signal, kill};
use nix::unistd::Pid;

/// The environment variable that marks the processes of one call (or one stdio MCP server).
pub(crate) const MARKER_VAR: &str = "PI_PROCESS_TREE";

/// Scans stop after this many rounds even if each one still finds new processes (a fork
/// bomb outrunning the freezer); what was found is killed anyway.
const MAX_ROUNDS: usize = 64;

/// After the kill, scans for survivors stop after this many rounds, [`CONFIRM_PAUSE`] apart
/// (a process of another user in the group cannot be killed and never goes).
const CONFIRM_ROUNDS: usize = 10;
const CONFIRM_PAUSE: Duration = Duration::from_millis(5);

/// The processes of one call: its shell and its marker.
#[derive(Debug)]
pub(crate) struct Tree {
    shell: Pid,
    /// `PI_PROCESS_TREE=<token>`, as it appears in `/proc/<pid>/environ`.
    entry: Vec<u8>,
    /// Cleared once the shell was reaped: from then on its pid may be given to an unrelated
    /// process, so only the marker identifies the call's processes.
    shell_alive: AtomicBool,
}

impl Tree {
    /// A fresh marker token, unique to this process and call.
    pub(crate) fn new_token() -> String {
        static CALLS: AtomicU64 = AtomicU64::new(0);
        let call = CALLS.fetch_add(1, Ordering::Relaxed);
        // The clock makes tokens of a process that reused our pid differ from ours.
        let nanos = SystemTime::now()
            .duration_since(UNIX_EPOCH)
            .map_or(0, |elapsed| elapsed.as_nanos());
        format!("{}-{call}-{nanos:x}", std::process::id())
    }

    /// The tree of the shell `shell`, started with `MARKER_VAR=token` in its environment.
    pub(crate) fn new(shell: Pid, token: &str) -> Self {
        Tree {
            shell,
            entry: format!("{MARKER_VAR}={token}").into_bytes(),
            shell_alive: AtomicBool::new(true),
        }
    }

    /// The shell was reaped (bash's: an MCP server's tree has no shell to watch).
    #[cfg(feature = "tools")]
    pub(crate) fn shell_reaped(&self) {
        self.shell_alive.store(false, Ordering::Relaxed);
    }

    /// [`kill`](Self::kill) on tokio's blocking threads (the walk reads `/proc`), or here when
    /// the blocking pool is shutting down.
    pub(crate) async fn kill_off_runtime(self: Arc<Self>) {
        let walk = Arc::clone(&self);
        if tokio::task::spawn_blocking(move || walk.kill())
            .await
            .is_err()
        {
            self.kill();
        }
    }

    /// Freeze, then kill, every process of the call.
    ///
    /// Blocking: it reads `/proc` a few times (a few milliseconds on a usual machine).
    pub(crate) fn kill(&self) {
        let shell_alive = self.shell_alive.load(Ordering::Relaxed);
        if shell_alive {
            // Freeze the group at once; the scans below add what left it.
            crate::process::signal_group(self.shell, Signal::SIGSTOP);
        }
        let mut frozen: HashSet<i32> = HashSet::new();
        for _ in 0..MAX_ROUNDS {
            let Ok(table) = ProcessTable::read() else {
                break;
            };
            let fresh: Vec<i32> = self
                .members(&table, shell_alive)
                .into_iter()
                .filter(|pid| !frozen.contains(pid))
                .collect();
            if fresh.is_empty() {
                break;
            }
            for pid in fresh {
                // ESRCH: it exited in between, which is the outcome wanted.
                let _ = kill(Pid::from_raw(pid), Signal::SIGSTOP);
                frozen.insert(pid);
            }
        }
        for &pid in &frozen {
            let _ = kill(Pid::from_raw(pid), Signal::SIGKILL);
        }
        if shell_alive {
            // SIGKILL reaches stopped processes too; the group kill covers a member that a
            // failed scan missed.
            crate::process::kill_group(self.shell);
        }
        self.finish_off(shell_alive);
    }

    /// Kill again whatever of the call still lives after the kill, until a scan finds none
    /// (at most [`CONFIRM_ROUNDS`] scans): a member no scan saw, such as one whose `/proc`
    /// entry could not be read at that moment. A killed process takes a moment to end, so
    /// the scans are [`CONFIRM_PAUSE`] apart.
    fn finish_off(&self, shell_alive: bool) {
        for _ in 0..CONFIRM_ROUNDS {
            let Ok(table) = ProcessTable::read() else {
                return;
            };
            let left = self.members(&table, shell_alive);
            if left.is_empty() {
                return;
            }
            for pid in left {
                let _ = kill(Pid::from_raw(pid), Signal::SIGKILL);
            }
            std::thread::sleep(CONFIRM_PAUSE);
        }
    }

    /// The processes of this call in `table`: the shell and its group while the shell is
    /// alive, the marked ones, and all their descendants.
    fn members(&self, table: &ProcessTable, shell_alive: bool) -> HashSet<i32> {
        let own = i32::try_from(std::process::id()).unwrap_or(0);
        let shell = self.shell.as_raw();
        let in_group = |p: &Process| shell_alive && (p.pid == shell || p.pgid == shell);
        let mut members: HashSet<i32> = table
            .processes
            .iter()
            .filter(|p| p.pid != own && p.pid > 1)
            .filter(|p| in_group(p) || carries(p.pid, &self.entry))
            .map(|p| p.pid)
            .collect();
        let children = table.children();
        let mut stack: Vec<i32> = members.iter().copied().collect();
        while let Some(pid) = stack.pop() {
            for &child in children.get(&pid).into_iter().flatten() {
                if child != own && members.insert(child) {
                    stack.push(child);
                }
            }
        }
        members
    }
}

/// One line of `/proc/<pid>/stat`, the fields the walk needs.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
struct Process {
    pid: i32,
    ppid: i32,
    pgid: i32,
}

/// The live processes of the system (zombies left out: they can do nothing more).
#[derive(Debug, Default)]
struct ProcessTable {
    processes: Vec<Process>,
}

impl ProcessTable {
    fn read() -> io::Result<Self> {
        let mut processes = Vec::new();
        for entry in fs::read_dir("/proc")? {
            let Ok(entry) = entry else { continue };
            let Some(pid) = entry
                .file_name()
                .to_str()
                .and_then(|s| s.parse::<i32>().ok())
            else {
                continue;
            };
            // A process that exited since the directory was listed is simply skipped.
            let Ok(stat) = fs::read_to_string(entry.path().join("stat")) else {
                continue;
            };
            if let Some(process) = parse_stat(pid, &stat) {
                processes.push(process);
            }
        }
        Ok(ProcessTable { processes })
    }

    fn children(&self) -> HashMap<i32, Vec<i32>> {
        let mut children: HashMap<i32, Vec<i32>> = HashMap::new();
        for p in &self.processes {
            children.entry(p.ppid).or_default().push(p.pid);
        }
        children
    }
}

/// Parse `pid (comm) state ppid pgrp ...`. The command name may hold spaces and parentheses,
/// so the fields are taken after the last `)`. `None` for a zombie or a malformed line.
fn parse_stat(pid: i32, stat: &str) -> Option<Process> {
    let (_, rest) = stat.rsplit_once(')')?;
    let mut fields = rest.split_whitespace();
    let state = fields.next()?;
    if state == "Z" || state == "X" {
        return None;
    }
    let ppid = fields.next()?.parse().ok()?;
    let pgid = fields.next()?.parse().ok()?;
    Some(Process { pid, ppid, pgid })
}

/// Whether the environment `pid` started with holds `entry` (`NAME=value`) exactly. A
/// process of another user is unreadable and counts as not marked.
fn carries(pid: i32, entry: &[u8]) -> bool {
    fs::read(format!("/proc/{pid}/environ"))
        .is_ok_and(|environ| environ.split(|&b| b == 0).any(|item| item == entry))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn stat_lines_with_odd_command_names() {
        let line = "4242 (a) b (c)) S 17 4242 17 0 -1 4194560 0 0";
        assert_eq!(
            parse_stat(4242, line),
            Some(Process {
                pid: 4242,
                ppid: 17,
                pgid: 4242
            })
        );
        assert_eq!(parse_stat(7, "7 (zombie) Z 1 7 7"), None);
        assert_eq!(parse_stat(7, "7 (cut"), None);
    }

    #[test]
    fn descendants_are_found_through_parent_links() {
        let table = ProcessTable {
            processes: vec![
                Process {
                    pid: 100,
                    ppid: 1,
                    pgid: 100,
                },
                // Left the group with setsid; found as the shell's child.
                Process {
                    pid: 101,
                    ppid: 100,
                    pgid: 101,
                },
                // Its child, in a group of its own.
                Process {
                    pid: 102,
                    ppid: 101,
                    pgid: 102,
                },
                // Unrelated.
                Process {
                    pid: 200,
                    ppid: 1,
                    pgid: 200,
                },
            ],
        };
        let tree = Tree::new(Pid::from_raw(100), "no-such-token");
        assert_eq!(tree.members(&table, true), HashSet::from([100, 101, 102]));
        // Once the shell is reaped its pid means nothing: only the marker counts.
        assert_eq!(tree.members(&table, false), HashSet::new());
    }

    #[test]
    fn finishing_off_kills_a_member_the_kill_left() {
        use std::os::unix::process::CommandExt;
        let token = Tree::new_token();
        let mut sleeper = std::process::Command::new("sleep")
            .arg("30")
            .env(MARKER_VAR, &token)
            .process_group(0)
            .spawn()
            .unwrap();
        let pid = Pid::from_raw(i32::try_from(sleeper.id()).unwrap());
        // As if the scans had not seen it: only the rounds after the kill are run.
        Tree::new(pid, &token).finish_off(true);
        let status = sleeper.wait().unwrap();
        assert_eq!(
            std::os::unix::process::ExitStatusExt::signal(&status),
            Some(9)
        );
    }

    #[test]
    fn tokens_differ() {
        assert_ne!(Tree::new_token(), Tree::new_token());
    }
}
