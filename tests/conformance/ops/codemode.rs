//! The code mode ops: `codemode_declarations` (what scripts and the model see of the tools)
//! and `codemode_source` (the script text).

use pi_runtime::__conformance::{
    Declaration, Global, LoadoutTool, SOURCE_GRAMMAR, parse_codemode_source, prepare_loadout,
    render_declarations,
};
use pi_runtime::codemode::{
    CODEMODE_TOOL_NAME, CodemodeMode, CodemodeSettings, DEFAULT_INLINE_BUDGET, Namespace,
    PROMPT_GUIDELINE, PROMPT_SNIPPET, base_description,
};
use pi_runtime::tool::Exposure;
use serde::Deserialize;
use serde_json::{Map, Value, json};

use crate::protocol::{Answer, Prepared, str_field};

/// pi's documentation folder, as answers write it.
const PI_DOCS: &str = "<pi-docs>";

#[derive(Deserialize)]
#[serde(rename_all = "camelCase")]
struct DeclarationsRequest {
    #[serde(default)]
    tools: Vec<RequestTool>,
    #[serde(default)]
    globals: Vec<RequestGlobal>,
    #[serde(default)]
    options: RequestOptions,
    #[serde(default)]
    definition: bool,
}

#[derive(Deserialize)]
#[serde(rename_all = "camelCase")]
struct RequestTool {
    name: String,
    #[serde(default)]
    description: String,
    parameters: Option<Value>,
    output_schema: Option<Value>,
    #[serde(default)]
    exposure: Exposure,
    active: Option<bool>,
    namespace: Option<RequestNamespace>,
    #[serde(default)]
    prompt_guidelines: Vec<String>,
}

#[derive(Deserialize)]
struct RequestNamespace {
    name: String,
    #[serde(default)]
    description: String,
}

#[derive(Deserialize)]
#[serde(rename_all = "camelCase")]
struct RequestGlobal {
    name: String,
    #[serde(default)]
    description: String,
    input_schema: Option<Value>,
    output_schema: Option<Value>,
    signature: Option<String>,
}

#[derive(Deserialize, Default)]
#[serde(rename_all = "camelCase")]
struct RequestOptions {
    mode: Option<String>,
    models: Option<bool>,
    inline_budget: Option<f64>,
}

pub(crate) fn prepare_declarations(request: &Map<String, Value>) -> Result<Prepared, String> {
    let request = DeclarationsRequest::deserialize(Value::Object(request.clone()))
        .map_err(|error| format!("bad request: {error}"))?;
    let mode = match request.options.mode.as_deref() {
        None | Some("on") => CodemodeMode::On,
        Some("only") => CodemodeMode::Only,
        Some(other) => return Err(format!("bad request: unknown mode {other:?}")),
    };
    let settings = CodemodeSettings {
        mode,
        inline_budget: request
            .options
            .inline_budget
            .unwrap_or(DEFAULT_INLINE_BUDGET),
        models_docs: request
            .options
            .models
            .unwrap_or(true)
            .then(|| PI_DOCS.to_owned()),
    };
    let tools: Vec<LoadoutTool> = request
        .tools
        .into_iter()
        .map(|tool| LoadoutTool {
            active: tool.active.unwrap_or(tool.exposure == Exposure::Direct),
            parameters: tool
                .parameters
                .unwrap_or_else(|| json!({"type": "object", "properties": {}})),
            name: tool.name,
            description: tool.description,
            output_schema: tool.output_schema,
            exposure: tool.exposure,
            namespace: tool.namespace.map(|namespace| Namespace {
                name: namespace.name,
                description: namespace.description,
                ..Namespace::default()
            }),
            guidelines: tool.prompt_guidelines,
        })
        .collect();
    let globals: Vec<Global> = request
        .globals
        .into_iter()
        .map(|global| Global {
            name: global.name,
            description: global.description,
            input_schema: global.input_schema,
            output_schema: global.output_schema,
            signature: global.signature,
        })
        .collect();
    let definition = request.definition;
    Ok(Box::new(move || {
        // The codemode tool is registered after the others, and active.
        let declared: Vec<&str> = tools
            .iter()
            .filter(|tool| tool.active && tool.exposure != Exposure::Hidden)
            .map(|tool| tool.name.as_str())
            .chain([CODEMODE_TOOL_NAME])
            .collect();
        let loadout = prepare_loadout(&tools, &declared, &settings);
        let declarations: Vec<Declaration> = tools
            .iter()
            .map(|tool| Declaration {
                name: tool.name.clone(),
                description: tool.description.clone(),
                input_schema: Some(tool.parameters.clone()),
                output_schema: tool.output_schema.clone(),
            })
            .collect();
        let mut answer = json!({
            "description": loadout.description,
            "descriptions": loadout.descriptions,
            "hiddenDeclarations": loadout.hidden_declarations,
            "declarations": render_declarations(&declarations, &globals),
        });
        if definition {
            answer["tool"] = json!({
                "name": CODEMODE_TOOL_NAME,
                "label": CODEMODE_TOOL_NAME,
                "description": base_description(&settings),
                "promptSnippet": PROMPT_SNIPPET,
                "promptGuidelines": [PROMPT_GUIDELINE],
                "parameters": {"type": "object", "required": ["code"],
                               "properties": {"code": {"type": "string", "description": "Raw JavaScript source."}}},
                "constrainedSampling": {"type": "grammar", "variants": {"openai_lark": SOURCE_GRAMMAR}},
                "exposure": Exposure::ModelOnly.as_str(),
            });
        }
        Answer::Ok(answer)
    }))
}

pub(crate) fn prepare_source(request: &Map<String, Value>) -> Result<Prepared, String> {
    let text = str_field(request, "text")?.to_owned();
    let raw_errors = request.get("rawErrors") == Some(&Value::Bool(true));
    Ok(Box::new(move || match parse_codemode_source(&text) {
        Ok(source) => {
            let mut options = Map::new();
            if let Some(tokens) = source.options.max_output_tokens {
                options.insert("maxOutputTokens".into(), tokens.into());
            }
            if let Some(timeout) = source.options.timeout_ms {
                options.insert("timeoutMs".into(), timeout.into());
            }
            Answer::Ok(json!({"code": source.code, "options": options}))
        }
        Err(error) => Answer::Err(shown_error(error.message(), raw_errors)),
    }))
}

/// pi's message with the engine's `JSON.parse` text written `<JSON parse error>`.
fn shown_error(message: &str, raw: bool) -> String {
    const INVALID_JSON: &str =
        "@options must be valid JSON with supported fields `max_output_tokens` and `timeout_ms`: ";
    match message.strip_prefix(INVALID_JSON) {
        Some(_) if !raw => format!("{INVALID_JSON}<JSON parse error>"),
        _ => message.to_owned(),
    }
}
