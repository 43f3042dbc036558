//! Streaming tool-call arguments: the incremental partial-JSON parser and the
//! final parse of a finished call.
//!
//! While a call streams, a provider feeds each argument delta to a [`PartialJsonParser`],
//! which updates the call's partial arguments in place (the `ToolCall.arguments` of the
//! message being streamed: there is one copy). When the call ends,
//! [`parse_tool_call_arguments`] parses the whole text once, strictly; only that result is
//! validated and executed.
//!
//! | text so far | partial arguments |
//! |---|---|
//! | `{"path": ` | `{}` (a member shows once its value starts) |
//! | `{"path":"REA ` | `{"path":"REA "}` |
//! | `{"a":"x\u00` | `{"a":"x"}` (an unterminated escape is held back) |
//! | `{"a":[1,2` | `{"a":[1,2]}` |
//! | `{"a":1.5E+` | `{"a":1.5}` |
//! | `{"a":tr` | `{"a":true}` |
//! | `{"a" 1 "b":2}` | `{"a":1,"b":2}` (missing colons and commas are tolerated) |
//! | `[1,2` | `{}` (arguments are an object) |
//!
//! # How the parser works
//!
//! The partial arguments are a function of the text alone, however it is cut, and
//! a stream must cost time linear in its length. So the parser reads every byte exactly once,
//! keeps all it needs to resume in its state, and changes only the part of the value that the
//! byte affects. The files:
//!
//! - `parser.rs`: the state machine ([`PartialJsonParser`]), which decides what shows;
//! - `value.rs`: the writes into the value, through a path from the arguments object to the
//!   slot being filled;
//! - `string.rs`: decoding a string's inside, escapes cut by deltas included;
//! - `scalar.rs`: numbers and literals, and what an unterminated one shows;
//! - `finish.rs`: the final parse.
//!
//! ## The state
//!
//! - **frames**: the open containers of the shown value, innermost last; the first is the
//!   arguments object. An object's frame holds its *phase* (expecting a `Key`, a `Colon`, a
//!   `Value` or a `Comma`) and whether the key it read still waits for its value.
//! - **the path** (`value.rs`): one step (a key or an index) for each open container below
//!   the arguments object, plus one for the string or token being read, if it shows.
//! - **the lexeme**: nothing, a string (its escape state and its target: a key, the value of
//!   the open slot, or text nothing shows), or a number/literal token (its slot, what it
//!   shows now, and the old value of a duplicate key it hides).
//! - **skipped**: how deep the parser is inside a container that opened where no value may go
//!   (or a root that is not an object). Nothing inside shows, so only brackets and strings
//!   are followed there.
//! - **stopped**: the root ended (text after it is ignored) or nesting went past
//!   [`MAX_DEPTH`]. The raw text is still kept for the final parse.
//!
//! ## What a byte does
//!
//! Outside a lexeme (`structural`):
//!
//! | byte | effect |
//! |---|---|
//! | whitespace | nothing |
//! | `:` | an object in `Colon` goes to `Value` |
//! | `,` | an object goes to `Key` (a doubled or trailing comma is harmless) |
//! | `"` | in an object in `Key` or `Comma`: a key starts; anywhere else: a value string |
//! | `{` `[` | a value container: shown empty, and pushed as a frame |
//! | `}` `]` | the innermost frame closes, whichever bracket it opened with |
//! | other | a token (number or literal) starts at this byte |
//!
//! A value starts in `enter_value`: in an array it is the next item; in an object it is the
//! member named by the key read last, if that key has not been used (phase `Colon` or
//! `Value`, so a missing colon is fine); anywhere else (a second value after a key, a value
//! in place of a key) it is *skipped*: read, and dropped. Once a key's value has started the
//! key is used up, and when the value ends the object goes to `Comma`. A string read in
//! `Comma` is the next key, which is how a missing comma is tolerated.
//!
//! Inside a string, `Escape::read` decodes into the target (the key buffer, or the shown
//! string itself) up to the closing quote; an escape cut by the delta waits in the escape
//! state. Inside a token, bytes up to the next delimiter are added to the token; the
//! delimiter ends it and is then read as structure. At the end of every delta an open
//! token shows its preview (`1.5e` shows `1.5`, `tr` shows `true`, `1.` shows nothing), and
//! when it ends it shows its final value or disappears; a duplicate key's old value is put
//! back if the new token turns out to be no value.
//!
//! ## Changing it safely
//!
//! Every rule of the partial arguments (the table above and `tests/it/partial_json_spec.rs`)
//! is one arm or one guard above; add a case to that file with the rule. The property tests
//! (`tests/it/partial_json_props.rs`) check that the value after every delta equals
//! [`parse_partial`] of the text so far, however the text is cut: a change that keeps
//! something from one delta to the next must keep that true. The conformance cases
//! `partial_json` and `partial_json_stream` compare both with pi.

pub(crate) mod finish;
mod parser;
mod scalar;
mod string;
mod value;

pub use finish::{ParsedArguments, parse_tool_call_arguments};
pub use parser::{MAX_DEPTH, PartialJsonError, PartialJsonParser};

use serde_json::{Map, Value};

/// The partial arguments a text shows (the table in the [module docs](self)).
///
/// ```
/// use pi_runtime::json::parse_partial;
/// use serde_json::json;
///
/// assert_eq!(parse_partial(r#"{"a":[1,2"#), json!({"a": [1, 2]}));
/// assert_eq!(parse_partial(r#"{"a":1."#), json!({}));
/// ```
pub fn parse_partial(text: &str) -> Value {
    let mut arguments = Value::Object(Map::new());
    PartialJsonParser::new().push(text, &mut arguments);
    arguments
}
