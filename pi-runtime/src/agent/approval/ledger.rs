//! Single-use pauses: every pause for approval gets a random id inside its (signed) state,
//! and a resume first claims that id in a [`PauseLedger`]. The claim is atomic, so of any
//! number of resumes of one saved state, one after another or at once, in one process or
//! in several sharing the ledger, exactly one runs the approved calls; the others fail with
//! [`ClaimError::AlreadyResumed`] and run nothing.
//!
//! - [`FileLedger`]: a directory every resuming process can reach; a claim is a file created
//!   exclusively (`O_EXCL`), holding the time of the claim.
//! - [`MemoryLedger`]: the claims of one process. Every agent that is not given a ledger
//!   shares one per process ([`AgentBuilder::pause_ledger`](crate::agent::AgentBuilder::pause_ledger)).
//! - A durable run (`pi_runtime::durable`) needs none: its journal takes each decision once.

use std::collections::HashMap;
use std::fmt;
use std::io::{ErrorKind, Write};
use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex, OnceLock, PoisonError};
use std::time::{Duration, SystemTime, UNIX_EPOCH};

use futures::future::BoxFuture;
use serde::{Deserialize, Serialize};

/// Where the resumes of paused runs are recorded, so that each pause resumes once.
///
/// [`claim`](Self::claim) must be atomic across everything that shares the ledger: of two
/// claims of one pause id, however close, exactly one succeeds. A database can do this with
/// a unique key (`INSERT` that fails on a duplicate), a file system with exclusive creation
/// ([`FileLedger`]).
///
/// ```
/// use pi_runtime::agent::approval::{ClaimError, MemoryLedger, PauseLedger};
///
/// # #[tokio::main(flavor = "current_thread")] async fn main() {
/// let ledger = MemoryLedger::new();
/// assert_eq!(ledger.claim("3f0c").await, Ok(()));
/// let again = ledger.claim("3f0c").await.unwrap_err();
/// assert!(matches!(again, ClaimError::AlreadyResumed { .. }));
/// # }
/// ```
pub trait PauseLedger: Send + Sync + fmt::Debug {
    /// Record that the pause `pause_id` is being resumed now.
    ///
    /// # Errors
    /// [`ClaimError::AlreadyResumed`] when it was claimed before (by anyone sharing the
    /// ledger); [`ClaimError::Unavailable`] when the ledger cannot record the claim (the
    /// resume must not run then either).
    fn claim<'a>(&'a self, pause_id: &'a str) -> BoxFuture<'a, Result<(), ClaimError>>;
}

/// Why a pause cannot be claimed. Nothing ran.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum ClaimError {
    /// The pause was resumed before: a pause is single-use.
    #[error("this pause ({pause_id}) was already resumed at {}", httpdate::fmt_http_date(*at))]
    AlreadyResumed {
        /// The pause.
        pause_id: String,
        /// When it was claimed.
        at: SystemTime,
    },
    /// The ledger cannot record the claim (a file system error, for instance).
    #[error("the pause ledger cannot record the resume: {0}")]
    Unavailable(String),
}

/// The claims of one process, in memory.
///
/// It remembers every pause it saw resumed (an id and a time, under a hundred bytes each),
/// for as long as it lives: a saved state can be replayed at any time.
#[derive(Debug, Default)]
pub struct MemoryLedger {
    claimed: Mutex<HashMap<String, SystemTime>>,
}

impl MemoryLedger {
    /// An empty ledger.
    pub fn new() -> Self {
        Self::default()
    }
}

impl PauseLedger for MemoryLedger {
    fn claim<'a>(&'a self, pause_id: &'a str) -> BoxFuture<'a, Result<(), ClaimError>> {
        let mut claimed = self.claimed.lock().unwrap_or_else(PoisonError::into_inner);
        let result = match claimed.get(pause_id) {
            Some(at) => Err(ClaimError::AlreadyResumed {
                pause_id: pause_id.to_owned(),
                at: *at,
            }),
            None => {
                claimed.insert(pause_id.to_owned(), SystemTime::now());
                Ok(())
            }
        };
        Box::pin(std::future::ready(result))
    }
}

/// The ledger of every agent not given one: one [`MemoryLedger`] per process.
pub(crate) fn process_ledger() -> Arc<dyn PauseLedger> {
    static LEDGER: OnceLock<Arc<MemoryLedger>> = OnceLock::new();
    let ledger = LEDGER.get_or_init(|| Arc::new(MemoryLedger::new()));
    Arc::clone(ledger) as Arc<dyn PauseLedger>
}

/// Claims as files in a directory: one file per resumed pause, named by its id and created
/// exclusively (`O_EXCL`), so of two processes claiming one pause at once the file system
/// lets exactly one through. The file records when (`{"resumedAtMs": ...}`).
///
/// Every process that may resume a given saved state must use the same directory (on a
/// local file system, or one whose exclusive creation is atomic: not every network file
/// system's is). Delete a claim file only to let that pause resume again.
///
/// ```
/// use pi_runtime::agent::approval::{FileLedger, PauseLedger};
///
/// # #[tokio::main(flavor = "current_thread")] async fn main() -> Result<(), Box<dyn std::error::Error>> {
/// let dir = tempfile::tempdir()?;
/// let ledger = FileLedger::new(dir.path())?;
/// ledger.claim("3f0c").await?;
/// assert!(ledger.claim("3f0c").await.is_err(), "a pause resumes once");
/// assert!(FileLedger::new(dir.path())?.claim("3f0c").await.is_err(), "another handle sees it");
/// # Ok(()) }
/// ```
#[derive(Debug, Clone)]
pub struct FileLedger {
    dir: PathBuf,
}

/// What a claim file holds.
#[derive(Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
struct ClaimRecord {
    resumed_at_ms: u64,
}

impl FileLedger {
    /// A ledger in `dir`, created if it does not exist.
    ///
    /// # Errors
    /// The directory cannot be created.
    pub fn new(dir: impl Into<PathBuf>) -> std::io::Result<Self> {
        let dir = dir.into();
        std::fs::create_dir_all(&dir)?;
        Ok(FileLedger { dir })
    }

    /// The directory the claims are in.
    pub fn dir(&self) -> &Path {
        &self.dir
    }

    fn claim_now(&self, pause_id: &str) -> Result<(), ClaimError> {
        // An id is made of hex digits (see `new_pause_id`); anything else would not be a
        // file name of this directory alone.
        if pause_id.is_empty() || !pause_id.bytes().all(|byte| byte.is_ascii_alphanumeric()) {
            return Err(ClaimError::Unavailable(format!(
                "{pause_id:?} is not a pause id"
            )));
        }
        let path = self.dir.join(pause_id);
        let unavailable =
            |error: std::io::Error| ClaimError::Unavailable(format!("{}: {error}", path.display()));
        let created = std::fs::OpenOptions::new()
            .write(true)
            .create_new(true)
            .open(&path);
        match created {
            Ok(mut file) => {
                let record = ClaimRecord {
                    resumed_at_ms: millis(SystemTime::now()),
                };
                let text = serde_json::to_string(&record).map_err(|e| unavailable(e.into()))?;
                file.write_all(text.as_bytes()).map_err(unavailable)?;
                file.sync_all().map_err(unavailable)?;
                Ok(())
            }
            Err(error) if error.kind() == ErrorKind::AlreadyExists => {
                Err(ClaimError::AlreadyResumed {
                    pause_id: pause_id.to_owned(),
                    at: claimed_at(&path),
                })
            }
            Err(error) => Err(unavailable(error)),
        }
    }
}

impl PauseLedger for FileLedger {
    fn claim<'a>(&'a self, pause_id: &'a str) -> BoxFuture<'a, Result<(), ClaimError>> {
        let (ledger, pause_id) = (self.clone(), pause_id.to_owned());
        Box::pin(async move {
            // A file creation and an fsync: off the runtime's threads.
            tokio::task::spawn_blocking(move || ledger.claim_now(&pause_id))
                .await
                .unwrap_or_else(|error| Err(ClaimError::Unavailable(error.to_string())))
        })
    }
}

/// When the claim in `path` was made: the time it records, or (a claim being written at
/// this moment, or cut short by a crash) the file's modification time.
fn claimed_at(path: &Path) -> SystemTime {
    let recorded = std::fs::read(path)
        .ok()
        .and_then(|bytes| serde_json::from_slice::<ClaimRecord>(&bytes).ok())
        .map(|record| UNIX_EPOCH + Duration::from_millis(record.resumed_at_ms));
    recorded
        .or_else(|| std::fs::metadata(path).and_then(|m| m.modified()).ok())
        .unwrap_or_else(SystemTime::now)
}

fn millis(time: SystemTime) -> u64 {
    let since = time.duration_since(UNIX_EPOCH).unwrap_or_default();
    u64::try_from(since.as_millis()).unwrap_or(u64::MAX)
}

/// A new pause id: 128 random bits, in hex.
pub(crate) fn new_pause_id() -> String {
    let mut bytes = [0u8; 16];
    if getrandom::fill(&mut bytes).is_err() {
        // No system randomness (it does not happen on the platforms this runs on): the
        // time, the process and a counter, hashed, are unique enough for an id.
        use sha2::{Digest, Sha256};
        static COUNTER: std::sync::atomic::AtomicU64 = std::sync::atomic::AtomicU64::new(0);
        let count = COUNTER.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
        let nanos = SystemTime::now()
            .duration_since(UNIX_EPOCH)
            .unwrap_or_default()
            .as_nanos();
        let seed = format!("{nanos}.{}.{count}", std::process::id());
        bytes.copy_from_slice(&Sha256::digest(seed.as_bytes())[..16]);
    }
    bytes.iter().map(|byte| format!("{byte:02x}")).collect()
}
