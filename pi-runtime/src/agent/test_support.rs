//! What the agent's unit tests share.

use serde_json::Value;

use crate::message::Message;

/// The transcript without its clocks, to compare two runs' messages.
pub(crate) fn timeless(messages: &[Message]) -> Value {
    fn strip(value: &mut Value) {
        match value {
            Value::Object(map) => {
                map.remove("timestamp");
                map.remove("durationMs");
                map.values_mut().for_each(strip);
            }
            Value::Array(items) => items.iter_mut().for_each(strip),
            _ => {}
        }
    }
    let mut value = serde_json::to_value(messages).expect("messages serialize");
    strip(&mut value);
    value
}
