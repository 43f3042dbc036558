//! Fuzz the streaming argument parser: no input panics, the arguments after every delta are
//! the partial arguments of the text so far, and complete JSON objects come out exactly as
//! serde_json reads them.
#![no_main]

use libfuzzer_sys::fuzz_target;
use pi_runtime::json::{PartialJsonParser, parse_partial, parse_tool_call_arguments};
use serde_json::Value;

fuzz_target!(|data: &[u8]| {
    // The first byte seeds the delta sizes; the rest is the argument text.
    let Some((&seed, text)) = data.split_first() else {
        return;
    };
    let Ok(text) = std::str::from_utf8(text) else {
        return;
    };
    let mut parser = PartialJsonParser::new();
    let mut arguments = Value::Object(Default::default());
    let mut at = 0;
    let mut step = usize::from(seed % 8) + 1;
    while at < text.len() {
        let mut end = (at + step).min(text.len());
        while !text.is_char_boundary(end) {
            end += 1;
        }
        parser.push(&text[at..end], &mut arguments);
        assert_eq!(
            arguments,
            parse_partial(&text[..end]),
            "cut at {end} of {text:?}"
        );
        at = end;
        step = step * 5 % 9 + 1;
    }
    let (final_arguments, error) = parse_tool_call_arguments(text);
    if let Ok(Value::Object(strict)) = serde_json::from_str::<Value>(text) {
        assert_eq!(error, None);
        assert_eq!(final_arguments, Value::Object(strict.clone()));
        assert_eq!(arguments, Value::Object(strict), "complete object {text:?}");
    }
});
