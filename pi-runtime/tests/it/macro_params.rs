//! The parameter struct `#[tool]` generates (`…Params`) implements `Deserialize` and
//! `JsonSchema` with shared code of the runtime instead of serde's and schemars' derives. Each
//! tool here has a twin: the struct as the derives see it, with the attributes `#[tool]` used
//! to put on it. Both give the same schema, and for every input the same value or the same
//! error text (through `serde_json::from_str`, which can repeat a key, and through the
//! validated-arguments path the model's calls take).

use std::fmt::Debug;

use pi_runtime::__private::{deserialize_arguments, parameters_schema};
use pi_runtime::{tool, tool_args};
use proptest::prelude::*;
use schemars::JsonSchema;
use serde::de::DeserializeOwned;
use serde_json::{Value, json};

/// A nested argument type.
#[tool_args]
#[derive(Debug, PartialEq)]
struct Range {
    /// The first line.
    start: u32,
    /// The last line.
    end: Option<u32>,
}

/// How to sort.
#[tool_args]
#[derive(Debug, PartialEq)]
#[serde(rename_all = "snake_case")]
enum Order {
    /// Newest first.
    Newest,
    /// Oldest first.
    Oldest,
}

/// An `Option` the macro cannot see through: required to serde, optional to schemars.
type MaybeCount = Option<u8>;

/// Read lines of a file.
#[tool]
async fn read_lines(
    /// The path.
    path: String,
    /// Which lines.
    lines: Option<Range>,
    /// Labels to match.
    labels: Option<Vec<String>>,
    order: Order,
    /// How many, at most.
    count: MaybeCount,
    /// A keyword name.
    r#type: f64,
    /// Anything at all.
    extra: Option<Value>,
) -> String {
    format!(
        "{path}{lines:?}{labels:?}{order:?}{count:?}{}{extra:?}",
        r#type
    )
}

fn read_lines_parts(params: &ReadLinesParams) -> String {
    format!(
        "{:?}",
        (
            &params.path,
            &params.lines,
            &params.labels,
            &params.order,
            &params.count,
            &params.r#type,
            &params.extra
        )
    )
}

mod read_lines_twin {
    use super::{MaybeCount, Order, Range, Value};

    /// The struct `#[tool]` derived before.
    #[derive(serde::Deserialize, schemars::JsonSchema)]
    #[schemars(title = "", description = "")]
    #[serde(deny_unknown_fields)]
    pub(super) struct ReadLinesParams {
        #[schemars(title = "", description = "The path.")]
        pub(super) path: String,
        #[serde(default)]
        #[schemars(
            with = "Range",
            skip_serializing_if = "::core::option::Option::is_none"
        )]
        #[schemars(title = "", description = "Which lines.")]
        pub(super) lines: Option<Range>,
        #[serde(default)]
        #[schemars(
            with = "Vec<String>",
            skip_serializing_if = "::core::option::Option::is_none"
        )]
        #[schemars(title = "", description = "Labels to match.")]
        pub(super) labels: Option<Vec<String>>,
        #[schemars(title = "", description = "")]
        pub(super) order: Order,
        #[schemars(title = "", description = "How many, at most.")]
        pub(super) count: MaybeCount,
        #[schemars(title = "", description = "A keyword name.")]
        pub(super) r#type: f64,
        #[serde(default)]
        #[schemars(
            with = "Value",
            skip_serializing_if = "::core::option::Option::is_none"
        )]
        #[schemars(title = "", description = "Anything at all.")]
        pub(super) extra: Option<Value>,
    }

    pub(super) fn parts(params: &ReadLinesParams) -> String {
        format!(
            "{:?}",
            (
                &params.path,
                &params.lines,
                &params.labels,
                &params.order,
                &params.count,
                &params.r#type,
                &params.extra
            )
        )
    }
}

/// An open tool: unknown keys are ignored.
#[tool(closed = false)]
async fn open_tool(
    /// A flag.
    flag: bool,
    /// A note.
    note: Option<String>,
) -> String {
    format!("{flag}{note:?}")
}

fn open_tool_parts(params: &OpenToolParams) -> String {
    format!("{:?}", (&params.flag, &params.note))
}

mod open_tool_twin {
    /// The struct `#[tool]` derived before.
    #[derive(serde::Deserialize, schemars::JsonSchema)]
    #[schemars(title = "", description = "")]
    pub(super) struct OpenToolParams {
        #[schemars(title = "", description = "A flag.")]
        pub(super) flag: bool,
        #[serde(default)]
        #[schemars(
            with = "String",
            skip_serializing_if = "::core::option::Option::is_none"
        )]
        #[schemars(title = "", description = "A note.")]
        pub(super) note: Option<String>,
    }

    pub(super) fn parts(params: &OpenToolParams) -> String {
        format!("{:?}", (&params.flag, &params.note))
    }
}

/// No parameters.
#[tool]
async fn no_params() {}

fn no_params_parts(_: &NoParamsParams) -> String {
    String::new()
}

mod no_params_twin {
    /// The struct `#[tool]` derived before.
    #[derive(serde::Deserialize, schemars::JsonSchema)]
    #[schemars(title = "", description = "")]
    #[serde(deny_unknown_fields)]
    pub(super) struct NoParamsParams {}

    pub(super) fn parts(_: &NoParamsParams) -> String {
        String::new()
    }
}

/// One required parameter.
#[tool]
async fn one(
    /// The only one.
    only: u64,
) -> u64 {
    only
}

fn one_parts(params: &OneParams) -> String {
    format!("{:?}", params.only)
}

mod one_twin {
    /// The struct `#[tool]` derived before.
    #[derive(serde::Deserialize, schemars::JsonSchema)]
    #[schemars(title = "", description = "")]
    #[serde(deny_unknown_fields)]
    pub(super) struct OneParams {
        #[schemars(title = "", description = "The only one.")]
        pub(super) only: u64,
    }

    pub(super) fn parts(params: &OneParams) -> String {
        format!("{:?}", params.only)
    }
}

/// The same schema, as the tool sends it (closed or not) and as schemars' root schema.
fn assert_same_schema<G: JsonSchema, D: JsonSchema>() {
    for closed in [true, false] {
        assert_eq!(
            parameters_schema::<G>(closed).to_string(),
            parameters_schema::<D>(closed).to_string()
        );
    }
    assert_eq!(
        schemars::schema_for!(G).as_value().to_string(),
        schemars::schema_for!(D).as_value().to_string()
    );
}

/// The same value or the same error text, from JSON text and from a validated `Value`.
fn assert_same_outcome<G, D>(
    json: &str,
    generated: fn(&G) -> String,
    derived: fn(&D) -> String,
) -> Result<(), TestCaseError>
where
    G: DeserializeOwned,
    D: DeserializeOwned,
{
    let from_text = |g: Result<G, serde_json::Error>, d: Result<D, serde_json::Error>| {
        (
            g.map(|g| generated(&g)).map_err(|e| e.to_string()),
            d.map(|d| derived(&d)).map_err(|e| e.to_string()),
        )
    };
    let (g, d) = from_text(serde_json::from_str(json), serde_json::from_str(json));
    prop_assert_eq!(g, d, "from_str({})", json);
    if let Ok(value) = serde_json::from_str::<Value>(json) {
        let g = deserialize_arguments::<G>("t", value.clone());
        let d = deserialize_arguments::<D>("t", value);
        prop_assert_eq!(
            g.map(|g| generated(&g)).map_err(|e| e.into_message()),
            d.map(|d| derived(&d)).map_err(|e| e.into_message()),
            "deserialize_arguments({})",
            json
        );
    }
    Ok(())
}

/// Inputs that reach every branch: each error, in each order, and sequences.
const CASES: &[&str] = &[
    r#"{"path":"a","order":"newest","count":3,"type":1.5}"#,
    r#"{"path":"a","lines":{"start":1},"labels":["x"],"order":"oldest","count":null,"type":2,"extra":{"k":[1]}}"#,
    r#"{"path":"a","lines":null,"labels":null,"order":"newest","count":1,"type":0,"extra":null}"#,
    r#"{"order":"newest","count":3,"type":1.5}"#,
    r#"{"path":"a","order":"newest","type":1.5}"#,
    r#"{"path":"a","count":1,"type":1.5}"#,
    r#"{"path":"a","order":"newest","count":1}"#,
    r#"{}"#,
    r#"{"path":"a","order":"newest","count":1,"type":1,"nope":1}"#,
    r#"{"nope":1,"path":7}"#,
    r#"{"path":7,"nope":1}"#,
    r#"{"path":"a","path":"b","order":"newest","count":1,"type":1}"#,
    r#"{"path":"a","order":"sideways","count":1,"type":1}"#,
    r#"{"path":"a","lines":{"start":-1},"order":"newest","count":1,"type":1}"#,
    r#"{"path":"a","labels":"x","order":"newest","count":1,"type":1}"#,
    r#"{"path":"a","order":"newest","count":300,"type":1}"#,
    r#"{"flag":true}"#,
    r#"{"flag":true,"note":"n","nope":[1,2]}"#,
    r#"{"flag":"yes"}"#,
    r#"{"note":null}"#,
    r#"{"only":1}"#,
    r#"{"only":1,"only":2}"#,
    r#"{"only":-1}"#,
    r#"{"Only":1}"#,
    r#"["a",null,null,"newest",1,1.5]"#,
    r#"["a",null,null,"newest",1,1.5,null,"x"]"#,
    r#"["a",null,null,"newest",1]"#,
    r#"["a"]"#,
    r#"[true]"#,
    r#"[true,"n"]"#,
    r#"[]"#,
    r#"[1]"#,
    r#"[1,2]"#,
    "null",
    "\"text\"",
    "3",
    "{\"path\":\"a\",",
];

#[test]
fn the_schemas_are_the_derives() {
    assert_same_schema::<ReadLinesParams, read_lines_twin::ReadLinesParams>();
    assert_same_schema::<OpenToolParams, open_tool_twin::OpenToolParams>();
    assert_same_schema::<NoParamsParams, no_params_twin::NoParamsParams>();
    assert_same_schema::<OneParams, one_twin::OneParams>();
}

#[test]
fn every_case_deserializes_as_the_derives_do() -> Result<(), TestCaseError> {
    for case in CASES {
        assert_same_outcome(case, read_lines_parts, read_lines_twin::parts)?;
        assert_same_outcome(case, open_tool_parts, open_tool_twin::parts)?;
        assert_same_outcome(case, no_params_parts, no_params_twin::parts)?;
        assert_same_outcome(case, one_parts, one_twin::parts)?;
    }
    Ok(())
}

#[test]
fn error_texts_are_the_model_facing_ones() {
    // Spot checks of the texts compared above, so a change in both is noticed too.
    let error = |json: Value| {
        deserialize_arguments::<OneParams>("one", json)
            .err()
            .map(pi_runtime::args::ValidationError::into_message)
    };
    assert_eq!(
        error(json!({"only": 1, "other": 2})).as_deref(),
        Some(
            "Validation failed for tool \"one\":\n  - other: unknown field `other`, expected `only`\n\nReceived arguments:\n{\n  \"only\": 1,\n  \"other\": 2\n}"
        )
    );
    assert_eq!(
        error(json!({})).as_deref(),
        Some(
            "Validation failed for tool \"one\":\n  - root: missing field `only`\n\nReceived arguments:\n{}"
        )
    );
    assert_eq!(
        serde_json::from_str::<OneParams>(r#"{"only":1,"only":2}"#)
            .err()
            .map(|e| e.to_string())
            .as_deref(),
        Some("duplicate field `only` at line 1 column 16")
    );
    assert_eq!(
        serde_json::from_str::<ReadLinesParams>("[\"a\"]")
            .err()
            .map(|e| e.to_string())
            .as_deref(),
        Some(
            "invalid length 3, expected struct ReadLinesParams with 7 elements at line 1 column 5"
        )
    );
}

fn json_value() -> impl Strategy<Value = Value> {
    let leaf = prop_oneof![
        Just(Value::Null),
        any::<bool>().prop_map(Value::from),
        (-3i64..400).prop_map(Value::from),
        Just(json!(1.5)),
        prop_oneof![Just("a"), Just("newest"), Just("oldest"), Just("")].prop_map(Value::from),
    ];
    leaf.prop_recursive(2, 8, 3, |inner| {
        prop_oneof![
            prop::collection::vec(inner.clone(), 0..3).prop_map(Value::from),
            prop::collection::vec(
                (prop_oneof![Just("start"), Just("end"), Just("k")], inner),
                0..3
            )
            .prop_map(|members| {
                Value::Object(
                    members
                        .into_iter()
                        .map(|(key, value)| (key.to_owned(), value))
                        .collect(),
                )
            }),
        ]
    })
}

/// An object over the fields of every twin, a few unknown keys and repeated keys, or a
/// sequence; written as text so keys can repeat.
fn arguments() -> impl Strategy<Value = String> {
    let key = prop_oneof![
        Just("path"),
        Just("lines"),
        Just("labels"),
        Just("order"),
        Just("count"),
        Just("type"),
        Just("extra"),
        Just("flag"),
        Just("note"),
        Just("only"),
        Just("nope"),
    ];
    prop_oneof![
        prop::collection::vec((key, json_value()), 0..9).prop_map(|members| {
            let members: Vec<String> = members
                .iter()
                .map(|(key, value)| format!("{}:{value}", Value::from(*key)))
                .collect();
            format!("{{{}}}", members.join(","))
        }),
        prop::collection::vec(json_value(), 0..9).prop_map(|items| Value::from(items).to_string()),
        json_value().prop_map(|value| value.to_string()),
    ]
}

proptest! {
    #[test]
    fn random_arguments_deserialize_as_the_derives_do(json in arguments()) {
        assert_same_outcome(&json, read_lines_parts, read_lines_twin::parts)?;
        assert_same_outcome(&json, open_tool_parts, open_tool_twin::parts)?;
        assert_same_outcome(&json, no_params_parts, no_params_twin::parts)?;
        assert_same_outcome(&json, one_parts, one_twin::parts)?;
    }
}

/// Keeps the generated tool types used, as a crate registering them would.
#[test]
fn the_tools_exist() {
    fn is_tool<T: pi_runtime::AgentTool + Debug>(_: &T) {}
    is_tool(&ReadLines);
    is_tool(&OpenTool);
    is_tool(&NoParams);
    is_tool(&One);
}
