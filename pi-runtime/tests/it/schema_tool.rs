//! The JSON Schema `#[tool]` generates: an exact snapshot per feature, and agreement with
//! serde (the schema accepts what the parameter type deserializes and rejects what it
//! refuses), checked with the `jsonschema` validator.

use pi_runtime::args::CompiledSchema;
use pi_runtime::{AgentTool, Args, ToolContext, tool, tool_args};
use serde::de::DeserializeOwned;
use serde_json::{Value, json};

fn schema(tool: &dyn AgentTool) -> Value {
    Value::clone(&tool.definition().parameters)
}

/// Both the schema and serde accept every sample: the validator lets these through and
/// `execute` can deserialize them.
#[track_caller]
fn assert_accepted<T: DeserializeOwned>(schema: &Value, samples: &[Value]) {
    for sample in samples {
        assert!(
            jsonschema::is_valid(schema, sample),
            "schema rejects {sample}"
        );
        assert!(
            serde_json::from_value::<T>(sample.clone()).is_ok(),
            "serde rejects {sample}"
        );
    }
}

/// Both reject every sample: nothing serde would refuse gets past the validator.
#[track_caller]
fn assert_rejected<T: DeserializeOwned>(schema: &Value, samples: &[Value]) {
    for sample in samples {
        assert!(
            !jsonschema::is_valid(schema, sample),
            "schema accepts {sample}"
        );
        assert!(
            serde_json::from_value::<T>(sample.clone()).is_err(),
            "serde accepts {sample}"
        );
    }
}

/// Execute a bash command in the working directory.
#[tool]
async fn bash(
    /// Bash command to execute
    command: String,
    /// Timeout in seconds (optional, no default timeout)
    timeout: Option<f64>,
    _ctx: ToolContext,
) -> String {
    format!("{command} {timeout:?}")
}

#[test]
fn plain_parameters() {
    assert_eq!(
        schema(&Bash).to_string(),
        r#"{"type":"object","properties":{"command":{"type":"string","description":"Bash command to execute"},"timeout":{"type":"number","description":"Timeout in seconds (optional, no default timeout)"}},"required":["command"],"additionalProperties":false}"#
    );
    assert_accepted::<BashParams>(
        &schema(&Bash),
        &[
            json!({"command": "ls"}),
            json!({"command": "ls", "timeout": 1.5}),
            json!({"command": "ls", "timeout": 2}),
        ],
    );
    assert_rejected::<BashParams>(
        &schema(&Bash),
        &[
            json!({}),
            json!({"command": 1}),
            json!({"command": "ls", "timeout": "soon"}),
            json!({"command": "ls", "extra": true}),
            json!(null),
        ],
    );
}

#[test]
fn the_schema_is_stricter_than_serde_where_coercion_decides() {
    // serde reads `null` as `None`; the schema, like pi's `Type.Optional`, does not allow it:
    // the coercion pass removes `null` from optional properties before validation
    // (SPEC §4.3). serde also reads a struct from an array; the model must send an object.
    for lenient in [json!({"command": "ls", "timeout": null}), json!(["ls"])] {
        assert!(!jsonschema::is_valid(&schema(&Bash), &lenient));
        assert!(serde_json::from_value::<BashParams>(lenient).is_ok());
    }
}

/// Do nothing.
#[tool]
async fn nothing() {}

#[test]
fn no_parameters() {
    assert_eq!(
        schema(&Nothing).to_string(),
        r#"{"type":"object","properties":{},"required":[],"additionalProperties":false}"#
    );
    assert_accepted::<NothingParams>(&schema(&Nothing), &[json!({})]);
    assert_rejected::<NothingParams>(&schema(&Nothing), &[json!({"a": 1}), json!("")]);
}

/// Undocumented parameters.
#[tool]
async fn bare(path: String, depth: Option<u8>) -> String {
    format!("{path} {depth:?}")
}

#[test]
fn an_undocumented_parameter_has_no_description() {
    assert_eq!(
        schema(&Bare).to_string(),
        r#"{"type":"object","properties":{"path":{"type":"string"},"depth":{"type":"integer","minimum":0,"maximum":255}},"required":["path"],"additionalProperties":false}"#
    );
}

/// Everything optional.
#[tool]
async fn optional(
    /// Where to start.
    offset: Option<u32>,
    /// How many.
    #[serde(default)]
    limit: u32,
) -> String {
    format!("{offset:?} {limit}")
}

#[test]
fn required_is_always_present() {
    assert_eq!(
        schema(&Optional).to_string(),
        r#"{"type":"object","properties":{"offset":{"type":"integer","minimum":0,"description":"Where to start."},"limit":{"type":"integer","minimum":0,"default":0,"description":"How many."}},"required":[],"additionalProperties":false}"#
    );
    assert_accepted::<OptionalParams>(
        &schema(&Optional),
        &[
            json!({}),
            json!({"offset": 3}),
            json!({"limit": 10, "offset": 0}),
        ],
    );
    assert_rejected::<OptionalParams>(
        &schema(&Optional),
        &[json!({"offset": -1}), json!({"limit": 1.5})],
    );
}

/// Serde and schemars attributes pass through.
#[tool]
async fn attributes(
    /// The path.
    #[serde(rename = "filePath")]
    path: String,
    /// Lines, at least one.
    #[schemars(range(min = 1, max = 100))]
    lines: u64,
    /// A keyword name.
    r#type: String,
) -> String {
    format!("{path} {lines} {type}", type = r#type)
}

#[test]
fn passthrough_attributes() {
    assert_eq!(
        schema(&Attributes).to_string(),
        r#"{"type":"object","properties":{"filePath":{"type":"string","description":"The path."},"lines":{"type":"integer","minimum":1,"maximum":100,"description":"Lines, at least one."},"type":{"type":"string","description":"A keyword name."}},"required":["filePath","lines","type"],"additionalProperties":false}"#
    );
    assert_accepted::<AttributesParams>(
        &schema(&Attributes),
        &[json!({"filePath": "a", "lines": 1, "type": "t"})],
    );
    assert_rejected::<AttributesParams>(
        &schema(&Attributes),
        &[
            json!({"path": "a", "lines": 1, "type": "t"}),
            json!({"filePath": "a", "lines": "1", "type": "t"}),
        ],
    );
    // The range is the schema's job: serde only checks the type.
    assert!(!jsonschema::is_valid(
        &schema(&Attributes),
        &json!({"filePath": "a", "lines": 0, "type": "t"})
    ));
}

/// One targeted replacement.
#[tool_args]
struct Replacement {
    /// Exact text to replace.
    #[serde(rename = "oldText")]
    old_text: String,
    /// Replacement text.
    #[serde(rename = "newText")]
    new_text: String,
}

/// Apply edits.
#[tool]
async fn edit(
    /// Path to the file to edit
    path: String,
    /// One or more targeted replacements.
    edits: Vec<Replacement>,
) -> String {
    let texts: Vec<_> = edits
        .iter()
        .map(|edit| format!("{}->{}", edit.old_text, edit.new_text))
        .collect();
    format!("{path}: {}", texts.join(", "))
}

#[test]
fn nested_types_are_inline_and_closed() {
    assert_eq!(
        schema(&Edit).to_string(),
        r#"{"type":"object","properties":{"path":{"type":"string","description":"Path to the file to edit"},"edits":{"type":"array","items":{"type":"object","properties":{"oldText":{"type":"string","description":"Exact text to replace."},"newText":{"type":"string","description":"Replacement text."}},"required":["oldText","newText"],"additionalProperties":false,"description":"One targeted replacement."},"description":"One or more targeted replacements."}},"required":["path","edits"],"additionalProperties":false}"#
    );
    assert_accepted::<EditParams>(
        &schema(&Edit),
        &[
            json!({"path": "a", "edits": []}),
            json!({"path": "a", "edits": [{"oldText": "x", "newText": "y"}]}),
        ],
    );
    assert_rejected::<EditParams>(
        &schema(&Edit),
        &[
            json!({"path": "a", "edits": [{"oldText": "x"}]}),
            json!({"path": "a", "edits": {"oldText": "x", "newText": "y"}}),
        ],
    );
}

/// The final analysis of one function.
#[tool_args]
#[serde(deny_unknown_fields)]
struct FunctionAnalysis {
    /// The function's name.
    name: String,
    /// Its parameter names.
    parameters: Vec<String>,
    /// One sentence.
    summary: String,
    /// What it does with an empty input; null when unsure.
    #[serde(rename = "emptyInputBehavior")]
    empty_input_behavior: Option<String>,
    /// A quote from the source.
    evidence: String,
}

/// Submit the final analysis of the current function; only one valid result is accepted.
#[tool(strict = "prefer")]
async fn submit_analysis(Args(analysis): Args<FunctionAnalysis>) -> String {
    format!(
        "{}({}) {} {:?} {}",
        analysis.name,
        analysis.parameters.join(", "),
        analysis.summary,
        analysis.empty_input_behavior,
        analysis.evidence
    )
}

#[test]
fn args_takes_the_schema_of_its_type() {
    // The type's own doc comment is not repeated at the root: the tool has a description.
    assert_eq!(
        schema(&SubmitAnalysis).to_string(),
        r#"{"type":"object","properties":{"name":{"type":"string","description":"The function's name."},"parameters":{"type":"array","items":{"type":"string"},"description":"Its parameter names."},"summary":{"type":"string","description":"One sentence."},"emptyInputBehavior":{"type":"string","description":"What it does with an empty input; null when unsure."},"evidence":{"type":"string","description":"A quote from the source."}},"required":["name","parameters","summary","evidence"],"additionalProperties":false}"#
    );
    let valid = json!({"name": "first", "parameters": ["items"], "summary": "s",
                       "emptyInputBehavior": "returns undefined", "evidence": "items[0]"});
    assert_accepted::<FunctionAnalysis>(
        &schema(&SubmitAnalysis),
        &[
            valid,
            json!({"name": "first", "parameters": [], "summary": "s", "evidence": "e"}),
        ],
    );
    assert_rejected::<FunctionAnalysis>(
        &schema(&SubmitAnalysis),
        &[
            json!({"name": "first", "parameters": ["items"], "summary": "s",
                   "emptyInputBehavior": null, "evidence": 42}),
            json!({"name": "first", "parameters": ["items"], "summary": "s",
                   "evidence": "e", "verdict": "ok"}),
        ],
    );
}

#[tokio::test]
async fn args_receives_the_whole_value() {
    let result = SubmitAnalysis
        .execute(
            "c".to_owned(),
            json!({"name": "first", "parameters": ["items"], "summary": "first item",
                   "emptyInputBehavior": null, "evidence": "items[0]"}),
            ToolContext::detached("c"),
        )
        .await
        .unwrap();
    assert_eq!(
        result.text_content(),
        "first(items) first item None items[0]"
    );
}

/// Report the weather.
#[tool]
async fn forecast(
    /// Conditions to report.
    conditions: Option<Vec<String>>,
) -> String {
    format!("{conditions:?}")
}

/// The arguments of `forecast`, as one type.
#[tool_args]
struct ForecastArgs {
    /// Conditions to report.
    conditions: Option<Vec<String>>,
}

/// Report the weather.
#[tool(type_name = "ForecastArgsTool")]
async fn forecast_args(Args(args): Args<ForecastArgs>) -> String {
    format!("{:?}", args.conditions)
}

#[test]
fn option_is_an_optional_property_in_both_forms() {
    // One rule for a `#[tool]` parameter and a `#[tool_args]` field: `T`'s schema, not
    // required, so coercion wraps a single value and drops an explicit `null`.
    let expected = r#"{"type":"object","properties":{"conditions":{"type":"array","items":{"type":"string"},"description":"Conditions to report."}},"required":[],"additionalProperties":false}"#;
    assert_eq!(schema(&Forecast).to_string(), expected);
    assert_eq!(schema(&ForecastArgsTool).to_string(), expected);
    for tool in [&Forecast as &dyn AgentTool, &ForecastArgsTool] {
        let compiled = CompiledSchema::compile(&schema(tool)).unwrap();
        for (sent, validated, conditions) in [
            (
                json!({"conditions": "wind"}),
                json!({"conditions": ["wind"]}),
                Some(vec!["wind"]),
            ),
            (json!({"conditions": null}), json!({}), None),
            (json!({}), json!({}), None),
        ] {
            let coerced = compiled.validate("forecast", &sent).unwrap();
            assert_eq!(coerced, validated, "{sent}");
            let args: ForecastArgs = serde_json::from_value(coerced).unwrap();
            let conditions = conditions.map(|list| list.into_iter().map(str::to_owned).collect());
            assert_eq!(args.conditions, conditions, "{sent}");
        }
    }
}

/// Units of measure.
#[tool_args]
#[serde(rename_all = "lowercase")]
enum Units {
    /// Celsius and km/h.
    Metric,
    /// Fahrenheit and mph.
    Imperial,
}

/// Get the weather.
#[tool]
async fn weather(
    /// Units for the numbers.
    units: Units,
    /// Units for each day, when they differ.
    daily: Option<Vec<Units>>,
) -> String {
    let _ = (units, daily);
    String::new()
}

#[test]
fn an_enum_with_documented_variants_lists_its_values() {
    // schemars writes a `oneOf` of documented `const`s; a failed union is explained by its
    // first branch alone (`expected "metric"`), so the schema is an `enum` instead.
    assert_eq!(
        schema(&Weather).to_string(),
        r#"{"type":"object","properties":{"units":{"type":"string","enum":["metric","imperial"],"description":"Units for the numbers.\n- \"metric\": Celsius and km/h.\n- \"imperial\": Fahrenheit and mph."},"daily":{"type":"array","items":{"type":"string","enum":["metric","imperial"],"description":"Units of measure.\n- \"metric\": Celsius and km/h.\n- \"imperial\": Fahrenheit and mph."},"description":"Units for each day, when they differ."}},"required":["units"],"additionalProperties":false}"#
    );
    let compiled = CompiledSchema::compile(&schema(&Weather)).unwrap();
    let error = compiled
        .validate("weather", &json!({"units": "kelvin", "daily": "celsius"}))
        .unwrap_err();
    assert_eq!(
        error.message(),
        "Validation failed for tool \"weather\":\n  - units: expected one of [\"metric\",\"imperial\"]\n  - daily.0: expected one of [\"metric\",\"imperial\"]\n\nReceived arguments:\n{\n  \"units\": \"kelvin\",\n  \"daily\": \"celsius\"\n}"
    );
    assert_accepted::<WeatherParams>(
        &schema(&Weather),
        &[json!({"units": "imperial", "daily": ["metric"]})],
    );
    assert_rejected::<WeatherParams>(&schema(&Weather), &[json!({"units": "Metric"})]);
}

/// An open schema, like pi's built-in tools.
#[tool(closed = false)]
async fn open(
    /// The path.
    path: String,
    /// The options.
    options: Vec<Replacement>,
) -> String {
    format!("{path} {}", options.len())
}

#[test]
fn closed_false_leaves_objects_open() {
    assert_eq!(
        schema(&Open).to_string(),
        r#"{"type":"object","properties":{"path":{"type":"string","description":"The path."},"options":{"type":"array","items":{"type":"object","properties":{"oldText":{"type":"string","description":"Exact text to replace."},"newText":{"type":"string","description":"Replacement text."}},"required":["oldText","newText"],"description":"One targeted replacement."},"description":"The options."}},"required":["path","options"]}"#
    );
    assert_accepted::<OpenParams>(
        &schema(&Open),
        &[
            json!({"path": "a", "options": [], "extra": 1}),
            json!({"path": "a", "options": [{"oldText": "x", "newText": "y", "z": 0}]}),
        ],
    );
}

/// Choose a color.
#[tool_args]
#[serde(rename_all = "lowercase")]
enum Color {
    Red,
    Green,
}

/// Paint.
#[tool]
async fn paint(
    /// The color.
    color: Color,
    /// Tags.
    tags: std::collections::BTreeMap<String, i32>,
) -> String {
    let color = match color {
        Color::Red => "red",
        Color::Green => "green",
    };
    format!("{color} {}", tags.len())
}

#[test]
fn enums_and_maps() {
    assert_eq!(
        schema(&Paint).to_string(),
        r#"{"type":"object","properties":{"color":{"type":"string","enum":["red","green"],"description":"The color."},"tags":{"type":"object","additionalProperties":{"type":"integer"},"description":"Tags."}},"required":["color","tags"],"additionalProperties":false}"#
    );
    assert_accepted::<PaintParams>(
        &schema(&Paint),
        &[
            json!({"color": "red", "tags": {}}),
            json!({"color": "green", "tags": {"a": 1}}),
        ],
    );
    assert_rejected::<PaintParams>(
        &schema(&Paint),
        &[
            json!({"color": "blue", "tags": {}}),
            json!({"color": "green", "tags": {"a": "1"}}),
        ],
    );
}

#[test]
fn every_schema_compiles_in_the_registry() {
    let registry = pi_runtime::ToolRegistry::new((
        Bash,
        Nothing,
        Optional,
        Attributes,
        Edit,
        SubmitAnalysis,
        Open,
        Paint,
    ));
    assert!(registry.is_ok(), "{registry:?}");
}
