//! A [`RunState`] as a file: a versioned JSON envelope whose state is signed with an
//! application key (HMAC-SHA-256), so a state changed in storage, signed with another key or
//! written by another format version is refused before anything runs.
//!
//! The envelope is `{"format": "pi-run-state", "version": N, "state": {...}, "signature":
//! "<hex>"}`. The version is read before the state, so a future format is refused by its
//! number rather than by whatever field it changed. The signature covers the version and the
//! state's JSON as serialized (compact, keys in their order): reading parses the state to a
//! JSON value and serializes it again, which gives the same bytes for any JSON this module
//! wrote.

use hmac::{Hmac, KeyInit, Mac};
use serde::Deserialize;
use serde_json::{Value, json};
use sha2::Sha256;

use crate::agent::run_state::{RUN_STATE_VERSION, RunState};

/// The envelope's `format`.
const FORMAT: &str = "pi-run-state";

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
}

#[derive(Deserialize)]
struct Envelope {
    format: String,
    version: u64,
    state: Value,
    signature: String,
}

impl RunState {
    /// This state as a signed JSON file: resume it with [`from_signed_json`](Self::from_signed_json)
    /// and the same `key`.
    pub fn to_signed_json(&self, key: &[u8]) -> String {
        // A `RunState` is plain data (strings, numbers, maps with string keys): it always
        // converts to a JSON value.
        let state = serde_json::to_value(self).unwrap_or(Value::Null);
        let signature = hex(&mac(key, RUN_STATE_VERSION.into(), &state));
        json!({
            "format": FORMAT,
            "version": RUN_STATE_VERSION,
            "state": state,
            "signature": signature,
        })
        .to_string()
    }

    /// Read a state that [`to_signed_json`](Self::to_signed_json) wrote with `key`.
    ///
    /// ```
    /// use pi_runtime::agent::RunState;
    /// use pi_runtime::agent::approval::StateFileError;
    ///
    /// let error = RunState::from_signed_json(r#"{"format":"pi-run-state","version":99,"state":{},"signature":""}"#, b"key");
    /// assert_eq!(error.unwrap_err(), StateFileError::UnsupportedVersion { found: 99 });
    /// ```
    ///
    /// # Errors
    /// The text is not a run state file, its version is not this build's, or its signature
    /// does not match under `key` (another key, or a change after signing).
    pub fn from_signed_json(text: &str, key: &[u8]) -> Result<RunState, StateFileError> {
        let value: Value = serde_json::from_str(text)
            .map_err(|error| StateFileError::Malformed(error.to_string()))?;
        // The version first: a future format may not parse as this one.
        if let Some(found) = value.get("version").and_then(Value::as_u64)
            && found != u64::from(RUN_STATE_VERSION)
        {
            return Err(StateFileError::UnsupportedVersion { found });
        }
        let envelope: Envelope = serde_json::from_value(value)
            .map_err(|error| StateFileError::Malformed(error.to_string()))?;
        if envelope.format != FORMAT {
            return Err(StateFileError::Malformed(format!(
                "its format is `{}`, not `{FORMAT}`",
                envelope.format
            )));
        }
        let signature = unhex(&envelope.signature).ok_or(StateFileError::BadSignature)?;
        let mut check = keyed(key);
        feed(&mut check, envelope.version, &envelope.state);
        check
            .verify_slice(&signature)
            .map_err(|_| StateFileError::BadSignature)?;
        let state: RunState = serde_json::from_value(envelope.state)
            .map_err(|error| StateFileError::Malformed(error.to_string()))?;
        state
            .check_version()
            .map_err(|_| StateFileError::UnsupportedVersion {
                found: envelope.version,
            })?;
        Ok(state)
    }
}

fn keyed(key: &[u8]) -> Hmac<Sha256> {
    // HMAC takes a key of any length (a long one is hashed first): this cannot fail.
    <Hmac<Sha256> as KeyInit>::new_from_slice(key)
        .unwrap_or_else(|_| unreachable!("HMAC accepts keys of every length"))
}

/// What the signature covers: the format, the version and the state's JSON.
fn feed(mac: &mut Hmac<Sha256>, version: u64, state: &Value) {
    mac.update(format!("{FORMAT}.{version}.").as_bytes());
    mac.update(state.to_string().as_bytes());
}

fn mac(key: &[u8], version: u64, state: &Value) -> Vec<u8> {
    let mut mac = keyed(key);
    feed(&mut mac, version, state);
    mac.finalize().into_bytes().to_vec()
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
