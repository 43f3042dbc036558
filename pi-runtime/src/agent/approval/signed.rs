//! A [`RunState`] as a file: a versioned JSON envelope whose state is signed with an
//! application key (HMAC-SHA-256), so a state changed in storage, signed with another key or
//! written by another format version is refused before anything runs. It is the only way
//! into a [`RunState`] from outside the process: the type has no serde implementation.
//!
//! The envelope is `{"format": "pi-run-state", "version": N, "state": {...}, "signature":
//! "<hex>"}`. The signature covers the format, the version and the state's bytes exactly as
//! they stand in the file. Reading checks the size against the key's limit first, then the
//! version, then the signature over those raw bytes (the envelope is read without building
//! the state, which stays a borrowed slice of the text), and only then parses the state: a
//! large or forged file costs no more than its own bytes.

use std::borrow::Cow;
use std::fmt;
use std::io::Read;

use hmac::{Hmac, KeyInit, Mac};
use serde::{Deserialize, Serialize};
use serde_json::value::RawValue;
use sha2::Sha256;

use crate::agent::machine::RunState;
use crate::agent::machine::state::RUN_STATE_VERSION;

/// The envelope's `format`.
const FORMAT: &str = "pi-run-state";

/// The shortest signing key [`StateKey::new`] takes, in bytes.
pub const MIN_KEY_BYTES: usize = 16;

/// The largest state file [`RunState::from_signed_json`] reads by default, in bytes (8 MiB);
/// [`StateKey::max_state_bytes`] changes it.
pub const DEFAULT_MAX_STATE_BYTES: usize = 8 << 20;

/// Why a saved run state is refused.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum StateFileError {
    /// Not a run state file.
    #[error("not a run state file: {0}")]
    Malformed(String),
    /// Written by a build with another format version.
    #[error(
        "run state version {found} is not supported (this build reads version {RUN_STATE_VERSION})"
    )]
    UnsupportedVersion {
        /// The file's version.
        found: u64,
    },
    /// The signature does not match the state under this key.
    #[error(
        "the run state's signature does not match: it was signed with another key, or changed after it was signed"
    )]
    BadSignature,
    /// The file is larger than the key's limit ([`StateKey::max_state_bytes`]); nothing of
    /// it was parsed.
    #[error("the run state is larger than the limit of {limit} bytes")]
    TooLarge {
        /// The limit.
        limit: usize,
    },
    /// The file cannot be read.
    #[error("cannot read the run state: {0}")]
    Io(String),
    /// The signing key is too short to sign with ([`MIN_KEY_BYTES`]).
    #[error("a run state signing key needs at least {MIN_KEY_BYTES} bytes; this one has {length}")]
    KeyTooShort {
        /// The key's length in bytes.
        length: usize,
    },
}

/// The application's key that signs and checks saved run states, with the largest state it
/// reads. Every process that resumes a state must hold the key that signed it; keep it
/// secret (whoever has it can write states that run).
///
/// ```
/// use pi_runtime::agent::approval::{StateFileError, StateKey};
///
/// let key = StateKey::new(b"a key of sixteen bytes or more")?.max_state_bytes(1 << 20);
/// assert_eq!(StateKey::new(b"short").unwrap_err(), StateFileError::KeyTooShort { length: 5 });
/// # Ok::<(), StateFileError>(())
/// ```
#[derive(Clone)]
pub struct StateKey {
    mac: Hmac<Sha256>,
    max_state_bytes: usize,
}

impl fmt::Debug for StateKey {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("StateKey")
            .field("max_state_bytes", &self.max_state_bytes)
            .finish_non_exhaustive()
    }
}

impl StateKey {
    /// A key of `secret`'s bytes, reading states of up to [`DEFAULT_MAX_STATE_BYTES`].
    ///
    /// # Errors
    /// [`StateFileError::KeyTooShort`]: `secret` has fewer than [`MIN_KEY_BYTES`] bytes.
    pub fn new(secret: impl AsRef<[u8]>) -> Result<Self, StateFileError> {
        let secret = secret.as_ref();
        if secret.len() < MIN_KEY_BYTES {
            return Err(StateFileError::KeyTooShort {
                length: secret.len(),
            });
        }
        // HMAC takes a key of any length (a long one is hashed first): this cannot fail.
        let mac = <Hmac<Sha256> as KeyInit>::new_from_slice(secret)
            .unwrap_or_else(|_| unreachable!("HMAC accepts keys of every length"));
        Ok(StateKey {
            mac,
            max_state_bytes: DEFAULT_MAX_STATE_BYTES,
        })
    }

    /// Read states of up to `bytes` bytes (the whole file); larger ones are refused before
    /// parsing.
    #[must_use]
    pub fn max_state_bytes(mut self, bytes: usize) -> Self {
        self.max_state_bytes = bytes;
        self
    }

    /// The MAC of the format, `version` and the state's bytes.
    fn mac(&self, version: u64, state: &[u8]) -> Hmac<Sha256> {
        let mut mac = self.mac.clone();
        mac.update(format!("{FORMAT}.{version}.").as_bytes());
        mac.update(state);
        mac
    }
}

/// The envelope as read: each field optional, so that the version is checked before the
/// rest is required (a future format may change them). The state stays raw.
#[derive(Deserialize)]
struct Envelope<'a> {
    #[serde(borrow, default)]
    format: Option<Cow<'a, str>>,
    #[serde(default)]
    version: Option<u64>,
    #[serde(borrow, default)]
    state: Option<&'a RawValue>,
    #[serde(borrow, default)]
    signature: Option<Cow<'a, str>>,
}

/// The envelope as written.
#[derive(Serialize)]
struct Written<'a> {
    format: &'a str,
    version: u32,
    state: &'a RawValue,
    signature: String,
}

impl RunState {
    /// This state as a signed JSON file: resume it with [`from_signed_json`](Self::from_signed_json)
    /// and the same key.
    pub fn to_signed_json(&self, key: &StateKey) -> String {
        let state = self.to_raw_json();
        let signature = key
            .mac(RUN_STATE_VERSION.into(), state.get().as_bytes())
            .finalize()
            .into_bytes();
        let written = Written {
            format: FORMAT,
            version: RUN_STATE_VERSION,
            state: &state,
            signature: hex(&signature),
        };
        // Strings, a number and raw JSON: this always serializes.
        serde_json::to_string(&written)
            .unwrap_or_else(|_| unreachable!("the envelope is plain data"))
    }

    /// Read a state that [`to_signed_json`](Self::to_signed_json) wrote with `key`.
    ///
    /// ```
    /// use pi_runtime::agent::RunState;
    /// use pi_runtime::agent::approval::{StateFileError, StateKey};
    ///
    /// let key = StateKey::new(b"application key 1")?;
    /// let error = RunState::from_signed_json(r#"{"format":"pi-run-state","version":99,"state":{},"signature":""}"#, &key);
    /// assert_eq!(error.unwrap_err(), StateFileError::UnsupportedVersion { found: 99 });
    /// # Ok::<(), StateFileError>(())
    /// ```
    ///
    /// # Errors
    /// The text is larger than the key's limit, is not a run state file, its version is
    /// not this build's, or its signature does not match under `key` (another key, or a
    /// change after signing).
    pub fn from_signed_json(text: &str, key: &StateKey) -> Result<RunState, StateFileError> {
        if text.len() > key.max_state_bytes {
            return Err(StateFileError::TooLarge {
                limit: key.max_state_bytes,
            });
        }
        let malformed = |error: serde_json::Error| StateFileError::Malformed(error.to_string());
        let envelope: Envelope<'_> = serde_json::from_str(text).map_err(malformed)?;
        let missing = |field: &str| StateFileError::Malformed(format!("missing field `{field}`"));
        let format = envelope.format.ok_or_else(|| missing("format"))?;
        if format != FORMAT {
            return Err(StateFileError::Malformed(format!(
                "its format is `{format}`, not `{FORMAT}`"
            )));
        }
        // The version first: a future format may not read as this one.
        let version = envelope.version.ok_or_else(|| missing("version"))?;
        if version != u64::from(RUN_STATE_VERSION) {
            return Err(StateFileError::UnsupportedVersion { found: version });
        }
        let state = envelope.state.ok_or_else(|| missing("state"))?;
        let signature = envelope.signature.ok_or_else(|| missing("signature"))?;
        let signature = unhex(&signature).ok_or(StateFileError::BadSignature)?;
        key.mac(version, state.get().as_bytes())
            .verify_slice(&signature)
            .map_err(|_| StateFileError::BadSignature)?;
        let state = RunState::from_raw_json(state.get()).map_err(malformed)?;
        state
            .check_version()
            .map_err(|_| StateFileError::UnsupportedVersion { found: version })?;
        Ok(state)
    }

    /// [`from_signed_json`](Self::from_signed_json) of what `reader` gives (a file, say),
    /// reading no more than the key's limit and one byte.
    ///
    /// ```
    /// use pi_runtime::agent::RunState;
    /// use pi_runtime::agent::approval::{StateFileError, StateKey};
    ///
    /// let key = StateKey::new(b"application key 1")?.max_state_bytes(1024);
    /// let endless = std::io::repeat(b' ');
    /// let error = RunState::from_signed_reader(endless, &key).unwrap_err();
    /// assert_eq!(error, StateFileError::TooLarge { limit: 1024 });
    /// # Ok::<(), StateFileError>(())
    /// ```
    ///
    /// # Errors
    /// As [`from_signed_json`](Self::from_signed_json), and [`StateFileError::Io`] when
    /// `reader` fails.
    pub fn from_signed_reader(
        reader: impl Read,
        key: &StateKey,
    ) -> Result<RunState, StateFileError> {
        let most = u64::try_from(key.max_state_bytes)
            .unwrap_or(u64::MAX)
            .saturating_add(1);
        let mut bytes = Vec::new();
        reader
            .take(most)
            .read_to_end(&mut bytes)
            .map_err(|error| StateFileError::Io(error.to_string()))?;
        if bytes.len() > key.max_state_bytes {
            return Err(StateFileError::TooLarge {
                limit: key.max_state_bytes,
            });
        }
        let text = std::str::from_utf8(&bytes)
            .map_err(|error| StateFileError::Malformed(error.to_string()))?;
        Self::from_signed_json(text, key)
    }
}

fn hex(bytes: &[u8]) -> String {
    bytes.iter().map(|byte| format!("{byte:02x}")).collect()
}

fn unhex(text: &str) -> Option<Vec<u8>> {
    if !text.len().is_multiple_of(2) || !text.is_ascii() {
        return None;
    }
    (0..text.len())
        .step_by(2)
        .map(|at| u8::from_str_radix(&text[at..at + 2], 16).ok())
        .collect()
}
