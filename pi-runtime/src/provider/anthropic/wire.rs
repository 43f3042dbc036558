//! The event fields this parser reads; everything else is skipped unparsed. Strings borrow
//! from the event data unless they hold escapes.

use std::borrow::Cow;
use std::fmt;
use std::marker::PhantomData;

use serde::de::value::MapAccessDeserializer;
use serde::de::{Error as _, MapAccess, Visitor};
use serde::{Deserialize, Deserializer};
use serde_json::Value;

use crate::message::Usage;

/// One Messages stream event, named by its `type`.
#[derive(Debug, Deserialize)]
#[serde(tag = "type", rename_all = "snake_case")]
pub(super) enum Event<'a> {
    MessageStart {
        #[serde(borrow)]
        message: MessageStart<'a>,
    },
    ContentBlockStart {
        index: u64,
        #[serde(borrow)]
        content_block: Block<'a>,
    },
    ContentBlockDelta {
        index: u64,
        #[serde(borrow)]
        delta: BlockDelta<'a>,
    },
    ContentBlockStop {
        index: u64,
    },
    MessageDelta {
        #[serde(borrow)]
        delta: MessageDelta<'a>,
        #[serde(default)]
        usage: Option<WireUsage>,
    },
    MessageStop,
    Error,
    #[serde(other)]
    Other,
}

impl<'a> Event<'a> {
    /// Parse one event's data.
    ///
    /// The derive above finds an internally tagged enum's `type` by first buffering the whole
    /// event, and the delta inside it once more: that is most of a stream's parsing cost. So a
    /// `content_block_delta`, nearly every event of a stream, is read straight from the text
    /// when `type` comes first, as Anthropic sends it. Whatever that read does not take (any
    /// other event, another key order, anything it fails on) goes to the derive, which
    /// therefore decides every error; on what it takes, the two agree.
    pub(super) fn parse(data: &'a str) -> serde_json::Result<Self> {
        match serde_json::from_str::<Direct<DeltaEvent<'a>>>(data) {
            Ok(Direct(delta)) => Ok(Event::ContentBlockDelta {
                index: delta.index,
                delta: (delta.delta.0).0,
            }),
            Err(_) => serde_json::from_str(data),
        }
    }
}

/// A tagged value read in one pass: a map whose first key is `type`, the tag, then the rest
/// of the map, which `T` reads (see [`Tagged`]).
struct Direct<T>(T);

/// A value [`Direct`] reads once it knows the tag.
trait Tagged<'de>: Sized {
    fn read<A: MapAccess<'de>>(tag: &'de str, rest: A) -> Result<Self, A::Error>;
}

impl<'de, T: Tagged<'de>> Deserialize<'de> for Direct<T> {
    fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        deserializer.deserialize_map(TagFirst(PhantomData))
    }
}

struct TagFirst<T>(PhantomData<T>);

impl<'de, T: Tagged<'de>> Visitor<'de> for TagFirst<T> {
    type Value = Direct<T>;

    fn expecting(&self, formatter: &mut fmt::Formatter<'_>) -> fmt::Result {
        formatter.write_str("a map whose first key is `type`")
    }

    fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> Result<Self::Value, A::Error> {
        if map.next_key::<&'de str>()? != Some("type") {
            return Err(A::Error::custom("`type` is not the first key"));
        }
        let tag = map.next_value::<&'de str>()?;
        T::read(tag, map).map(Direct)
    }
}

/// A `type` key after the first, which the derive refuses (whatever its value, `null` too):
/// reading one fails the direct read, and the event goes to the derive.
#[derive(Default)]
struct NoTagAgain;

impl<'de> Deserialize<'de> for NoTagAgain {
    fn deserialize<D: Deserializer<'de>>(_: D) -> Result<Self, D::Error> {
        Err(D::Error::duplicate_field("type"))
    }
}

/// Read the rest of a tagged map, after its tag, as `T`.
fn rest<'de, T: Deserialize<'de>, A: MapAccess<'de>>(rest: A) -> Result<T, A::Error> {
    T::deserialize(MapAccessDeserializer::new(rest))
}

/// A `content_block_delta` after its tag.
#[derive(Deserialize)]
struct DeltaEvent<'a> {
    index: u64,
    #[serde(borrow)]
    delta: Direct<DirectDelta<'a>>,
    #[serde(rename = "type", default)]
    _tag_again: NoTagAgain,
}

impl<'de: 'a, 'a> Tagged<'de> for DeltaEvent<'a> {
    fn read<A: MapAccess<'de>>(tag: &'de str, map: A) -> Result<Self, A::Error> {
        if tag != "content_block_delta" {
            return Err(A::Error::custom("not a content_block_delta"));
        }
        rest(map)
    }
}

/// A [`BlockDelta`] after its tag, with the fields of every kind: one a kind does not read
/// must still be a string here, or the event goes to the derive (which skips it).
#[derive(Deserialize)]
struct DeltaFields<'a> {
    #[serde(borrow, default)]
    text: Cow<'a, str>,
    #[serde(borrow, default)]
    thinking: Cow<'a, str>,
    #[serde(borrow, default)]
    signature: Cow<'a, str>,
    #[serde(borrow, default)]
    partial_json: Cow<'a, str>,
    #[serde(rename = "type", default)]
    _tag_again: NoTagAgain,
}

struct DirectDelta<'a>(BlockDelta<'a>);

impl<'de: 'a, 'a> Tagged<'de> for DirectDelta<'a> {
    fn read<A: MapAccess<'de>>(tag: &'de str, map: A) -> Result<Self, A::Error> {
        let fields: DeltaFields<'a> = rest(map)?;
        Ok(DirectDelta(match tag {
            "text_delta" => BlockDelta::TextDelta { text: fields.text },
            "thinking_delta" => BlockDelta::ThinkingDelta {
                thinking: fields.thinking,
            },
            "signature_delta" => BlockDelta::SignatureDelta {
                signature: fields.signature,
            },
            "input_json_delta" => BlockDelta::InputJsonDelta {
                partial_json: fields.partial_json,
            },
            _ => BlockDelta::Other,
        }))
    }
}

#[derive(Debug, Deserialize)]
pub(super) struct MessageStart<'a> {
    #[serde(borrow, default)]
    pub(super) id: Option<Cow<'a, str>>,
    #[serde(borrow, default)]
    pub(super) model: Option<Cow<'a, str>>,
    #[serde(default)]
    pub(super) usage: Option<WireUsage>,
}

#[derive(Debug, Deserialize)]
#[serde(tag = "type", rename_all = "snake_case")]
pub(super) enum Block<'a> {
    Text {
        #[serde(borrow, default)]
        text: Cow<'a, str>,
    },
    Thinking {
        #[serde(borrow, default)]
        thinking: Cow<'a, str>,
        #[serde(borrow, default)]
        signature: Cow<'a, str>,
    },
    RedactedThinking {
        #[serde(borrow, default)]
        data: Cow<'a, str>,
    },
    ToolUse {
        #[serde(borrow, default)]
        id: Cow<'a, str>,
        #[serde(borrow, default)]
        name: Cow<'a, str>,
        #[serde(default)]
        input: Option<Value>,
    },
    #[serde(other)]
    Other,
}

#[derive(Debug, Deserialize)]
#[serde(tag = "type", rename_all = "snake_case")]
pub(super) enum BlockDelta<'a> {
    TextDelta {
        #[serde(borrow, default)]
        text: Cow<'a, str>,
    },
    ThinkingDelta {
        #[serde(borrow, default)]
        thinking: Cow<'a, str>,
    },
    SignatureDelta {
        #[serde(borrow, default)]
        signature: Cow<'a, str>,
    },
    InputJsonDelta {
        #[serde(borrow, default)]
        partial_json: Cow<'a, str>,
    },
    #[serde(other)]
    Other,
}

#[derive(Debug, Deserialize)]
pub(super) struct MessageDelta<'a> {
    #[serde(borrow, default)]
    pub(super) stop_reason: Option<Cow<'a, str>>,
    #[serde(borrow, default)]
    pub(super) stop_details: Option<StopDetails<'a>>,
}

#[derive(Debug, Deserialize)]
pub(super) struct StopDetails<'a> {
    #[serde(borrow, default)]
    pub(super) explanation: Option<Cow<'a, str>>,
}

/// Token counts; absent (or `null`) ones keep their earlier value, since proxies leave
/// `input_tokens` out of `message_delta`.
#[derive(Debug, Deserialize)]
pub(super) struct WireUsage {
    #[serde(default)]
    input_tokens: Option<u64>,
    #[serde(default)]
    output_tokens: Option<u64>,
    #[serde(default)]
    cache_read_input_tokens: Option<u64>,
    #[serde(default)]
    cache_creation_input_tokens: Option<u64>,
}

impl WireUsage {
    /// Anthropic sends no total: it is the sum of the parts.
    pub(super) fn update(&self, usage: &mut Usage) {
        let counts = [
            (self.input_tokens, &mut usage.input),
            (self.output_tokens, &mut usage.output),
            (self.cache_read_input_tokens, &mut usage.cache_read),
            (self.cache_creation_input_tokens, &mut usage.cache_write),
        ];
        for (count, slot) in counts {
            if let Some(count) = count {
                *slot = count;
            }
        }
        usage.total_tokens = usage.input + usage.output + usage.cache_read + usage.cache_write;
    }
}

#[cfg(test)]
mod tests {
    use proptest::prelude::*;

    use super::Event;

    /// What the derive alone answers for `data`.
    fn derived(data: &str) -> String {
        answer(serde_json::from_str::<Event<'_>>(data))
    }

    fn answer(parsed: serde_json::Result<Event<'_>>) -> String {
        match parsed {
            Ok(event) => format!("{event:?}"),
            Err(error) => format!("error: {error}"),
        }
    }

    fn assert_agrees(data: &str) {
        assert_eq!(answer(Event::parse(data)), derived(data), "{data}");
    }

    #[test]
    fn every_recorded_event_parses_as_the_derive_does() {
        let dir = concat!(
            env!("CARGO_MANIFEST_DIR"),
            "/../../shared/fixtures/wire/anthropic"
        );
        let mut events = 0;
        for entry in std::fs::read_dir(dir).unwrap_or_else(|error| panic!("{dir}: {error}")) {
            let path = entry.expect("a directory entry").path();
            let text = std::fs::read_to_string(&path).expect("a capture");
            for line in text.lines().filter(|line| line.starts_with('{')) {
                assert_agrees(line);
                events += 1;
            }
        }
        assert!(events > 50, "only {events} recorded events");
    }

    #[test]
    fn a_delta_with_its_tag_first_is_read_directly() {
        let data = r#"{"type":"content_block_delta","index":2,"delta":{"type":"input_json_delta","partial_json":"{\"a\": 1"}}"#;
        assert_eq!(
            answer(Event::parse(data)),
            r#"ContentBlockDelta { index: 2, delta: InputJsonDelta { partial_json: "{\"a\": 1" } }"#
        );
        assert_agrees(data);
    }

    #[test]
    fn what_the_direct_read_refuses_the_derive_decides() {
        let cases = [
            // The tag later, or repeated (the derive refuses a repeat, `null` too).
            r#"{"index":0,"type":"content_block_delta","delta":{"type":"text_delta","text":"a"}}"#,
            r#"{"type":"content_block_delta","index":0,"delta":{"text":"a","type":"text_delta"}}"#,
            r#"{"type":"content_block_delta","index":0,"type":"content_block_delta","delta":{"type":"text_delta","text":"a"}}"#,
            r#"{"type":"content_block_delta","index":0,"type":null,"delta":{"type":"text_delta","text":"a"}}"#,
            r#"{"type":"content_block_delta","index":0,"delta":{"type":"text_delta","type":"text_delta","text":"a"}}"#,
            // Fields another kind reads, of the wrong type: skipped by the derive.
            r#"{"type":"content_block_delta","index":0,"delta":{"type":"text_delta","text":"a","partial_json":5}}"#,
            r#"{"type":"content_block_delta","index":0,"delta":{"type":"citations_delta","text":null}}"#,
            // Missing or wrong fields, and a tag with an escape.
            r#"{"type":"content_block_delta","delta":{"type":"text_delta","text":"a"}}"#,
            r#"{"type":"content_block_delta","index":0}"#,
            r#"{"type":"content_block_delta","index":"0","delta":{"type":"text_delta","text":"a"}}"#,
            r#"{"type":"content_block_delta","index":0,"delta":{"type":"text_delta","text":null}}"#,
            r#"{"type":"content_block_delta","index":0,"delta":{"type":"text_delta"}}"#,
            r#"{"type":"content_block_delta","index":0,"delta":"text"}"#,
            r#"{"type":"content_block_d\u0065lta","index":0,"delta":{"type":"text_delta","text":"a"}}"#,
            r#"{"type":"content_block_delta","index":0,"delta":{"type":"text_delta","text":"a\nb\u00e9"}}"#,
            // Not a delta at all, or not an event.
            r#"{"type":"content_block_stop","index":0}"#,
            r#"{"type":"ping"}"#,
            r#"{"type":5}"#,
            r#"{"type":"content_block_delta","index":0,"delta":{"type":"text_delta","text":"a"}} x"#,
            r#"{"type":"content_block_delta","index":0,"delta":{"type":"text_delta","text":"a"}"#,
            "[]",
            "",
        ];
        for data in cases {
            assert_agrees(data);
        }
    }

    /// One member of an event or of its delta, from a pool that includes every field either
    /// reads, as every JSON type.
    fn member(keys: &'static [&'static str]) -> impl Strategy<Value = String> {
        let value = prop_oneof![
            Just("\"text_delta\"".to_owned()),
            Just("\"input_json_delta\"".to_owned()),
            Just("\"thinking_delta\"".to_owned()),
            Just("\"content_block_delta\"".to_owned()),
            Just("\"a\\\"b\\n\"".to_owned()),
            Just("null".to_owned()),
            Just("3".to_owned()),
            Just("-1".to_owned()),
            Just("[1]".to_owned()),
            Just(r#"{"type":"text_delta","text":"x"}"#.to_owned()),
            Just(r#"{"text":"x","type":"signature_delta","signature":"s"}"#.to_owned()),
        ];
        (proptest::sample::select(keys), value)
            .prop_map(|(key, value)| format!("\"{key}\":{value}"))
    }

    const KEYS: &[&str] = &[
        "type",
        "index",
        "delta",
        "text",
        "thinking",
        "signature",
        "partial_json",
        "other",
    ];

    /// A map of `members`, shuffled, after a `type` of `tag` if there is one.
    fn map(tag: Option<&'static str>, members: Vec<String>) -> impl Strategy<Value = String> {
        Just(members).prop_shuffle().prop_map(move |members| {
            let head = tag.map(|tag| format!("\"type\":\"{tag}\""));
            let all: Vec<String> = head.into_iter().chain(members).collect();
            format!("{{{}}}", all.join(","))
        })
    }

    /// A delta of some kind, maybe with its tag first, and stray members.
    fn delta() -> impl Strategy<Value = String> {
        let kind = proptest::sample::select(
            &[
                "text_delta",
                "input_json_delta",
                "thinking_delta",
                "signature_delta",
                "citations_delta",
            ][..],
        );
        (
            kind,
            any::<bool>(),
            proptest::collection::vec(member(KEYS), 0..3),
        )
            .prop_flat_map(|(kind, tag_first, mut members)| {
                let field = match kind {
                    "input_json_delta" => "partial_json",
                    "thinking_delta" => "thinking",
                    "signature_delta" => "signature",
                    _ => "text",
                };
                members.push(format!("\"{field}\":\"x\\u00e9\""));
                if !tag_first {
                    members.push(format!("\"type\":\"{kind}\""));
                }
                map(tag_first.then_some(kind), members)
            })
    }

    /// An event close to a `content_block_delta`: its members, some left out, in any order,
    /// among stray ones.
    fn event() -> impl Strategy<Value = String> {
        (
            delta(),
            any::<(bool, bool, bool)>(),
            proptest::collection::vec(member(KEYS), 0..3),
        )
            .prop_flat_map(|(delta, (tag_first, index, with_delta), mut members)| {
                if index {
                    members.push("\"index\":1".to_owned());
                }
                if with_delta {
                    members.push(format!("\"delta\":{delta}"));
                }
                map(tag_first.then_some("content_block_delta"), members)
            })
    }

    proptest! {
        #[test]
        fn any_event_parses_as_the_derive_does(data in event()) {
            prop_assert_eq!(answer(Event::parse(&data)), derived(&data), "{}", data);
        }
    }
}
