//! The `requestState` of a 2026-07-28 round trip: the answers a call has had so far, sealed
//! so that a client cannot forge or alter them, bound to the request they belong to, and
//! good for a limited time. Each state also names the pause it ends, so that an approval
//! given in answer to it runs the call once (see `ConnectedClient::approval`).

use std::time::Duration;

use rmcp::model::{ErrorData, InputResponses, RequestStateCodec, SealOptions};
use serde::{Deserialize, Serialize};
use serde_json::json;

use crate::mcp::McpError;

/// How long a client may take to come back with its answers.
const STATE_TTL: Duration = Duration::from_secs(600);

/// What a state holds.
#[derive(Serialize, Deserialize)]
struct Sealed {
    answers: InputResponses,
    /// A fresh id for the pause this state ends.
    pause: String,
}

/// A state opened: the answers so far, and the pause the client comes back from (`None`
/// when it sent no state: its answers answer nothing this server asked).
pub(crate) struct Opened {
    pub(crate) answers: InputResponses,
    pub(crate) pause: Option<String>,
}

/// Seals and opens the states of one server (of every instance sharing its key).
pub(crate) struct RequestStates {
    codec: RequestStateCodec,
}

impl RequestStates {
    /// A key of the server's own: states open on this process only.
    pub(crate) fn random() -> Self {
        let mut key = [0u8; RequestStateCodec::MIN_KEY_LENGTH];
        // No OS randomness is no state to trust: states sealed with a zero key would open
        // anywhere, so each seal then fails to open and the client is asked again.
        let fresh = getrandom::fill(&mut key).is_ok();
        RequestStates {
            codec: RequestStateCodec::new_unchecked(if fresh { key.to_vec() } else { Vec::new() }),
        }
    }

    /// A key shared by every instance that serves the same clients.
    pub(crate) fn with_key(key: Vec<u8>) -> Result<Self, McpError> {
        let codec = RequestStateCodec::try_new(key)
            .map_err(|e| McpError::RequestStateKey(e.to_string()))?;
        Ok(RequestStates { codec })
    }

    /// The answers so far: those sealed in `state` (when the client sent one back), with the
    /// client's new `responses` over them.
    ///
    /// # Errors
    /// Invalid params: the state was altered, expired, or belongs to another request.
    pub(crate) fn open(
        &self,
        state: Option<&str>,
        responses: Option<InputResponses>,
        request: &[u8],
    ) -> Result<Opened, ErrorData> {
        let mut opened = match state {
            None => Opened {
                answers: InputResponses::new(),
                pause: None,
            },
            Some(state) => {
                let sealed: Sealed = self.codec.open_json_with(state, request).map_err(|e| {
                    ErrorData::invalid_params(
                        format!(
                            "The requestState is not one this server sealed for this request: {e}"
                        ),
                        Some(json!({"requestState": "rejected"})),
                    )
                })?;
                Opened {
                    answers: sealed.answers,
                    pause: Some(sealed.pause),
                }
            }
        };
        opened.answers.extend(responses.unwrap_or_default());
        Ok(opened)
    }

    /// `answers` sealed for `request`.
    pub(crate) fn seal(&self, answers: &InputResponses, request: &[u8]) -> String {
        let options = SealOptions::new().associated_data(request).ttl(STATE_TTL);
        let sealed = Sealed {
            answers: answers.clone(),
            pause: crate::agent::approval::new_pause_id(),
        };
        // A map of JSON values always serializes.
        self.codec
            .seal_json_with(&sealed, &options)
            .unwrap_or_default()
    }
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;

    #[test]
    fn states_open_only_unaltered_and_for_their_request() {
        let states = RequestStates::random();
        let answers = InputResponses::from([("step1".to_owned(), json!({"action": "accept"}))]);
        let sealed = states.seal(&answers, b"tools/call\0t");
        let new = InputResponses::from([("step2".to_owned(), json!({"action": "decline"}))]);
        let opened = states
            .open(Some(&sealed), Some(new), b"tools/call\0t")
            .expect("opens");
        assert_eq!(
            opened.answers.keys().collect::<Vec<_>>(),
            ["step1", "step2"]
        );
        let again = states.seal(&answers, b"tools/call\0t");
        let pause = |state: &str| states.open(Some(state), None, b"tools/call\0t").ok()?.pause;
        assert!(pause(&sealed).is_some());
        assert_ne!(
            pause(&sealed),
            pause(&again),
            "each state ends a pause of its own"
        );
        assert!(
            states
                .open(Some(&sealed), None, b"tools/call\0other")
                .is_err()
        );
        let mut tampered = sealed.clone();
        tampered.insert(tampered.len() / 2, 'x');
        assert!(
            states
                .open(Some(&tampered), None, b"tools/call\0t")
                .is_err()
        );
        assert!(
            RequestStates::random()
                .open(Some(&sealed), None, b"tools/call\0t")
                .is_err()
        );
    }
}
