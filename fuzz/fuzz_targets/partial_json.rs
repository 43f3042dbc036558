//! Fuzz the streaming argument parsers: no input panics, the value after every delta is the
//! value of the text so far, the change lists reproduce it, every version an
//! `ArgumentsStream` hands out equals it and stays so, and complete JSON objects come out
//! exactly as serde_json reads them.
#![no_main]

use libfuzzer_sys::fuzz_target;
use pi_runtime::json::{
    ArgumentsStream, PartialJsonParser, apply_changes, parse_partial, parse_streaming_json,
    parse_tool_call_arguments,
};
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
    let mut versions = ArgumentsStream::new();
    let mut taken = Vec::new();
    let mut copy = Value::Object(Default::default());
    let mut at = 0;
    let mut step = usize::from(seed % 8) + 1;
    while at < text.len() {
        let mut end = (at + step).min(text.len());
        while !text.is_char_boundary(end) {
            end += 1;
        }
        let changes = parser.push(&text[at..end]);
        apply_changes(&mut copy, changes);
        assert_eq!(&copy, parser.value(), "changes after {:?}", &text[..end]);
        assert_eq!(
            parser.value(),
            &parse_partial(&text[..end]),
            "cut at {end} of {text:?}"
        );
        let version = versions.push(&text[at..end]);
        assert_eq!(
            &versions.view(version).to_value(),
            parser.value(),
            "version at {end}"
        );
        taken.push((version, parser.value().clone()));
        at = end;
        step = step * 5 % 9 + 1;
    }
    for (version, value) in &taken {
        assert_eq!(
            &versions.view(*version).to_value(),
            value,
            "a later delta changed a version"
        );
    }
    let (arguments, error) = parse_tool_call_arguments(text);
    if let Ok(Value::Object(strict)) = serde_json::from_str::<Value>(text) {
        assert_eq!(error, None);
        assert_eq!(arguments, Value::Object(strict.clone()));
        assert_eq!(
            parser.value(),
            &Value::Object(strict),
            "complete object {text:?}"
        );
    }
    let _ = parse_streaming_json(text);
});
