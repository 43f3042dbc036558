//! TypeScript declarations of what scripts can call: `schemaToType`, `renderToolSignature`,
//! `renderDeclarations` and the tool sample of pi-codemode.

use serde_json::{Map, Value};

use super::identifier::{is_identifier, to_codemode_identifier};
use crate::js::{js_json, js_number, js_trim, utf16_len};

/// The largest rendered input type, in UTF-16 units, before it becomes `unknown`.
pub const INPUT_SCHEMA_MAX_CHARS: usize = 16_000;
/// Local `$ref` expansions per rendering, so shared definitions cannot blow up the text.
const MAX_REF_EXPANSIONS: usize = 32;
/// Keywords with a number or string value shown as `@keyword value` tags, in tag order.
const TAG_KEYWORDS: [&str; 11] = [
    "minimum",
    "exclusiveMinimum",
    "maximum",
    "exclusiveMaximum",
    "multipleOf",
    "minLength",
    "maxLength",
    "pattern",
    "format",
    "minItems",
    "maxItems",
];
const LOWER_BOUNDS: [&str; 4] = ["minimum", "exclusiveMinimum", "minLength", "minItems"];
const UPPER_BOUNDS: [&str; 4] = ["maximum", "exclusiveMaximum", "maxLength", "maxItems"];
/// The longest tag; longer ones (large defaults, long patterns) are left out.
const MAX_TAG_CHARS: usize = 80;
const INDENT: &str = "  ";

/// What a script sees of one callable: its name, description and schemas.
///
/// ```
/// use pi_runtime::__conformance::{Declaration, render_tool_signature};
/// use serde_json::json;
///
/// let read = Declaration::new("read-file", "Read a file")
///     .with_input_schema(json!({"type": "object", "properties": {"path": {"type": "string"}},
///                              "required": ["path"]}))
///     .with_output_schema(json!({"type": "string"}));
/// assert_eq!(
///     render_tool_signature(&read),
///     "read_file(args: { path: string; }): Promise<string>;"
/// );
/// ```
#[derive(Debug, Clone, PartialEq, Default)]
pub struct Declaration {
    /// The raw name; scripts use its identifier.
    pub name: String,
    /// The description, as a doc comment.
    pub description: String,
    /// The argument schema (`unknown` without one).
    pub input_schema: Option<Value>,
    /// The schema of what a call resolves to (`unknown` without one).
    pub output_schema: Option<Value>,
}

impl Declaration {
    /// A declaration without schemas.
    pub fn new(name: impl Into<String>, description: impl Into<String>) -> Self {
        Declaration {
            name: name.into(),
            description: description.into(),
            input_schema: None,
            output_schema: None,
        }
    }

    /// The argument schema.
    #[must_use]
    pub fn with_input_schema(mut self, schema: Value) -> Self {
        self.input_schema = Some(schema);
        self
    }

    /// The schema of the resolved value.
    #[must_use]
    pub fn with_output_schema(mut self, schema: Value) -> Self {
        self.output_schema = Some(schema);
        self
    }
}

/// A script global other than `tools`: `name` or `ns.member`, with a signature or schemas.
#[derive(Debug, Clone, PartialEq, Default)]
pub struct Global {
    /// `name` (a function) or `namespace.member`.
    pub name: String,
    /// The doc comment.
    pub description: String,
    /// The argument schema, when there is no `signature`.
    pub input_schema: Option<Value>,
    /// The result schema, when there is no `signature`.
    pub output_schema: Option<Value>,
    /// Written after the name as is, e.g. `(name: string): Promise<string>`.
    pub signature: Option<String>,
}

/// pi-codemode's `renderDeclarations`: `declare const tools: {...};` with one member per tool,
/// then each global as `declare function` or grouped by namespace into `declare const ns`.
///
/// ```
/// use pi_runtime::__conformance::{Declaration, Global, render_declarations};
///
/// let text = render_declarations(
///     &[Declaration::new("ping", "Ping")],
///     &[Global { name: "exit".into(), signature: Some("(): never".into()), ..Global::default() }],
/// );
/// assert_eq!(
///     text,
///     "declare const tools: {\n  /** Ping */\n  ping(args: unknown): Promise<unknown>;\n};\n\n\
///      declare function exit(): never;"
/// );
/// ```
pub fn render_declarations(tools: &[Declaration], globals: &[Global]) -> String {
    let mut sections = Vec::new();
    if !tools.is_empty() {
        let members: Vec<String> = tools
            .iter()
            .map(|tool| {
                format!(
                    "{}{INDENT}{}",
                    doc_comment(&tool.description, INDENT),
                    render_tool_signature(tool)
                )
            })
            .collect();
        sections.push(format!(
            "declare const tools: {{\n{}\n}};",
            members.join("\n")
        ));
    }
    let mut namespaces: Vec<(&str, Vec<String>)> = Vec::new();
    for global in globals {
        let Some((namespace, member)) = global.name.split_once('.') else {
            let head = format!("declare function {}", global.name);
            sections.push(render_global(&head, global, ""));
            continue;
        };
        let rendered = render_global(member, global, INDENT);
        match namespaces.iter_mut().find(|(name, _)| *name == namespace) {
            Some((_, members)) => members.push(rendered),
            None => namespaces.push((namespace, vec![rendered])),
        }
    }
    for (namespace, members) in namespaces {
        sections.push(format!(
            "declare const {namespace}: {{\n{}\n}};",
            members.join("\n")
        ));
    }
    sections.join("\n\n")
}

/// One member of `tools`: `<identifier>(args: <input>): Promise<<output>>;`, an input type
/// over [`INPUT_SCHEMA_MAX_CHARS`] rendered `unknown`.
pub fn render_tool_signature(tool: &Declaration) -> String {
    let input = tool.input_schema.as_ref().map_or_else(
        || "unknown".to_owned(),
        |schema| schema_to_type(schema, Some(INPUT_SCHEMA_MAX_CHARS)),
    );
    format!(
        "{}(args: {input}): Promise<{}>;",
        to_codemode_identifier(&tool.name),
        output_type(tool.output_schema.as_ref())
    )
}

/// A tool's sample, what `ALL_TOOLS`, `describeTool` and the codemode description show: the
/// trimmed description, then the tool's one-line declaration in a `ts` fence.
pub fn render_tool_sample(tool: &Declaration) -> String {
    format!(
        "{}\n\ncodemode tool declaration:\n```ts\ndeclare const tools: {{ {} }};\n```",
        js_trim(&tool.description),
        render_tool_signature(tool)
    )
}

/// The type a call resolves to: the schema's type, `unknown` without one.
pub(crate) fn output_type(schema: Option<&Value>) -> String {
    schema.map_or_else(
        || "unknown".to_owned(),
        |schema| schema_to_type(schema, None),
    )
}

fn render_global(head: &str, global: &Global, indent: &str) -> String {
    let comment = doc_comment(&global.description, indent);
    if let Some(signature) = &global.signature {
        return format!("{comment}{indent}{head}{signature};");
    }
    let input = output_type(global.input_schema.as_ref());
    let output = output_type(global.output_schema.as_ref());
    format!("{comment}{indent}{head}(args: {input}): Promise<{output}>;")
}

fn doc_comment(description: &str, indent: &str) -> String {
    let text = js_trim(description);
    if text.is_empty() {
        return String::new();
    }
    let text = text.replace("*/", "*\\/");
    let lines: Vec<&str> = text
        .split('\n')
        .map(|line| line.strip_suffix('\r').unwrap_or(line))
        .collect();
    if let [line] = lines.as_slice() {
        return format!("{indent}/** {line} */\n");
    }
    let body: Vec<String> = lines
        .iter()
        .map(|line| {
            if line.is_empty() {
                format!("{indent} *")
            } else {
                format!("{indent} * {line}")
            }
        })
        .collect();
    format!("{indent}/**\n{}\n{indent} */\n", body.join("\n"))
}

/// pi-codemode's `schemaToType`: a TypeScript type expression for a JSON Schema. With
/// `max_chars`, a text longer than that (UTF-16 units) is rendered again without constraint
/// tags, and is `unknown` if still too long.
///
/// ```
/// use pi_runtime::__conformance::schema_to_type;
/// use serde_json::json;
///
/// let schema = json!({"type": "object",
///                     "properties": {"tags": {"type": "array", "items": {"type": "string"}},
///                                    "id": {"type": "integer", "minimum": 1}},
///                     "required": ["id"]});
/// assert_eq!(
///     schema_to_type(&schema, None),
///     "{\n  // @integer @minimum 1\n  id: number;\n  tags?: Array<string>;\n}"
/// );
/// assert_eq!(schema_to_type(&schema, Some(10)), "unknown");
/// ```
pub fn schema_to_type(schema: &Value, max_chars: Option<usize>) -> String {
    let render = |tags: bool| {
        let mut context = Context {
            root: schema,
            resolving: Vec::new(),
            expansions: 0,
            tags,
        };
        context.render(schema)
    };
    let tagged = render(true);
    let Some(max) = max_chars else {
        return tagged;
    };
    if utf16_len(&tagged) <= max {
        return tagged;
    }
    let untagged = render(false);
    if utf16_len(&untagged) <= max {
        untagged
    } else {
        "unknown".to_owned()
    }
}

/// The subschema a local `$ref` (`#`, `#/$defs/Item`) names in `root`: segments
/// percent-decoded, then `~1` → `/` and `~0` → `~`; only an object or a boolean counts.
///
/// ```
/// use pi_runtime::__conformance::resolve_schema_ref;
/// use serde_json::json;
///
/// let root = json!({"$defs": {"a/b": {"type": "string"}}});
/// assert_eq!(resolve_schema_ref("#/$defs/a~1b", &root), Some(&json!({"type": "string"})));
/// assert_eq!(resolve_schema_ref("other.json#/x", &root), None);
/// ```
pub fn resolve_schema_ref<'a>(reference: &str, root: &'a Value) -> Option<&'a Value> {
    let path = match reference {
        "#" => "",
        _ => reference.strip_prefix("#/")?,
    };
    let mut current = root;
    for segment in path.split('/').filter(|segment| !segment.is_empty()) {
        let key = percent_decode(segment)?
            .replace("~1", "/")
            .replace("~0", "~");
        current = current.as_object()?.get(&key)?;
    }
    matches!(current, Value::Object(_) | Value::Bool(_)).then_some(current)
}

/// JavaScript's `decodeURIComponent`: `None` for a malformed escape or bytes that are not
/// UTF-8.
fn percent_decode(text: &str) -> Option<String> {
    if !text.contains('%') {
        return Some(text.to_owned());
    }
    let bytes = text.as_bytes();
    let mut out = Vec::with_capacity(bytes.len());
    let mut index = 0;
    while index < bytes.len() {
        if bytes[index] == b'%' {
            let hex = text.get(index + 1..index + 3)?;
            out.push(u8::from_str_radix(hex, 16).ok()?);
            index += 3;
        } else {
            out.push(bytes[index]);
            index += 1;
        }
    }
    String::from_utf8(out).ok()
}

/// One rendering: the references being expanded, and how many were.
struct Context<'a> {
    root: &'a Value,
    resolving: Vec<String>,
    expansions: usize,
    tags: bool,
}

impl Context<'_> {
    fn render(&mut self, schema: &Value) -> String {
        let object = match schema {
            Value::Bool(true) => return "unknown".to_owned(),
            Value::Bool(false) => return "never".to_owned(),
            Value::Object(object) => object,
            _ => return "unknown".to_owned(),
        };
        if let Some(Value::String(reference)) = object.get("$ref") {
            return self.expand(reference);
        }
        if let Some(value) = object.get("const") {
            return js_json(value);
        }
        if let Some(Value::Array(values)) = object.get("enum") {
            return union(values.iter().map(js_json).collect());
        }
        let variants = match (object.get("anyOf"), object.get("oneOf")) {
            (Some(Value::Array(variants)), _) | (_, Some(Value::Array(variants))) => Some(variants),
            _ => None,
        };
        if let Some(variants) = variants {
            let types = variants.iter().map(|v| self.render(v)).collect();
            return union(types);
        }
        if let Some(Value::Array(parts)) = object.get("allOf") {
            let parts: Vec<String> = parts
                .iter()
                .map(|part| self.render(part))
                .filter(|part| part != "unknown")
                .collect();
            if parts.is_empty() {
                return "unknown".to_owned();
            }
            let parts: Vec<String> = parts
                .into_iter()
                .map(|part| {
                    if part.contains(" | ") {
                        format!("({part})")
                    } else {
                        part
                    }
                })
                .collect();
            return parts.join(" & ");
        }
        match object.get("type") {
            Some(Value::Array(entries)) => {
                let types = entries
                    .iter()
                    .map(|entry| {
                        let mut variant = object.clone();
                        variant.insert("type".to_owned(), entry.clone());
                        self.render(&Value::Object(variant))
                    })
                    .collect();
                union(types)
            }
            Some(Value::String(kind)) => match kind.as_str() {
                "string" => "string".to_owned(),
                "number" | "integer" => "number".to_owned(),
                "boolean" => "boolean".to_owned(),
                "null" => "null".to_owned(),
                "array" => self.array_type(object),
                "object" => self.object_type(object),
                _ => "unknown".to_owned(),
            },
            Some(_) => "unknown".to_owned(),
            None => {
                if ["properties", "additionalProperties", "required"]
                    .iter()
                    .any(|key| object.contains_key(*key))
                {
                    self.object_type(object)
                } else if object.contains_key("items") || object.contains_key("prefixItems") {
                    self.array_type(object)
                } else {
                    "unknown".to_owned()
                }
            }
        }
    }

    fn expand(&mut self, reference: &str) -> String {
        if self.expansions >= MAX_REF_EXPANSIONS || self.resolving.iter().any(|r| r == reference) {
            return "unknown".to_owned();
        }
        let Some(target) = resolve_schema_ref(reference, self.root) else {
            return "unknown".to_owned();
        };
        self.expansions += 1;
        self.resolving.push(reference.to_owned());
        let rendered = self.render(target);
        self.resolving.pop();
        rendered
    }

    fn array_type(&mut self, schema: &Map<String, Value>) -> String {
        match schema.get("items") {
            Some(items) if !items.is_array() => return format!("Array<{}>", self.render(items)),
            _ => {}
        }
        let tuple = match (schema.get("prefixItems"), schema.get("items")) {
            (Some(Value::Array(items)), _) | (_, Some(Value::Array(items))) => items.as_slice(),
            _ => &[],
        };
        if tuple.is_empty() {
            return "unknown[]".to_owned();
        }
        let types: Vec<String> = tuple.iter().map(|item| self.render(item)).collect();
        format!("[{}]", types.join(", "))
    }

    fn object_type(&mut self, schema: &Map<String, Value>) -> String {
        let empty = Map::new();
        let properties = match schema.get("properties") {
            Some(Value::Object(properties)) => properties,
            _ => &empty,
        };
        let required: Vec<&str> = match schema.get("required") {
            Some(Value::Array(names)) => names.iter().filter_map(Value::as_str).collect(),
            _ => Vec::new(),
        };
        let mut names: Vec<&String> = properties.keys().collect();
        names.sort_by(|a, b| a.encode_utf16().cmp(b.encode_utf16()));
        let mut members: Vec<String> = Vec::with_capacity(names.len() + 1);
        for name in &names {
            let optional = if required.contains(&name.as_str()) {
                ""
            } else {
                "?"
            };
            let key = if is_identifier(name) {
                (*name).clone()
            } else {
                js_json(&Value::String((*name).clone()))
            };
            let rendered = self.render(&properties[name.as_str()]);
            members.push(format!("{key}{optional}: {rendered};"));
        }
        match schema.get("additionalProperties") {
            Some(Value::Bool(false)) => {}
            Some(Value::Bool(true)) => members.push("[key: string]: unknown;".to_owned()),
            Some(additional) => {
                let rendered = self.render(additional);
                members.push(format!("[key: string]: {rendered};"));
            }
            None if names.is_empty() => members.push("[key: string]: unknown;".to_owned()),
            None => {}
        }
        if members.is_empty() {
            return "{}".to_owned();
        }
        let comments: Vec<Vec<String>> = names
            .iter()
            .map(|name| {
                let property = &properties[name.as_str()];
                let mut lines = description_lines(property);
                if self.tags {
                    let tags = constraint_tags(property);
                    if !tags.is_empty() {
                        lines.push(tags);
                    }
                }
                lines
            })
            .collect();
        if comments.iter().all(Vec::is_empty) {
            return format!("{{ {} }}", members.join(" "));
        }
        let mut lines = vec!["{".to_owned()];
        for (comment, member) in comments.iter().zip(&members) {
            lines.extend(comment.iter().map(|line| format!("{INDENT}// {line}")));
            lines.push(format!(
                "{INDENT}{}",
                member.replace('\n', &format!("\n{INDENT}"))
            ));
        }
        for member in &members[names.len()..] {
            lines.push(format!("{INDENT}{member}"));
        }
        lines.push("}".to_owned());
        lines.join("\n")
    }
}

/// The distinct types in order; `unknown` absorbs the rest; none is `never`.
fn union(types: Vec<String>) -> String {
    let mut unique: Vec<String> = Vec::with_capacity(types.len());
    for kind in types {
        if !unique.contains(&kind) {
            unique.push(kind);
        }
    }
    if unique.iter().any(|kind| kind == "unknown") {
        return "unknown".to_owned();
    }
    if unique.is_empty() {
        "never".to_owned()
    } else {
        unique.join(" | ")
    }
}

fn is_line_terminator(c: char) -> bool {
    matches!(c, '\r' | '\n' | '\u{2028}' | '\u{2029}')
}

/// A property's description as comment lines: trimmed, split at line terminators, each line
/// trimmed, empty ones dropped.
fn description_lines(property: &Value) -> Vec<String> {
    let Some(description) = property.get("description").and_then(Value::as_str) else {
        return Vec::new();
    };
    js_trim(description)
        .split(is_line_terminator)
        .map(js_trim)
        .filter(|line| !line.is_empty())
        .map(str::to_owned)
        .collect()
}

/// What a property's type cannot say, as tags: `@integer @minimum 1 @default 20`.
fn constraint_tags(property: &Value) -> String {
    let Value::Object(object) = property else {
        return String::new();
    };
    // An optional field such as `int | None` keeps its constraints in the non-null branch.
    let variants = match (object.get("anyOf"), object.get("oneOf")) {
        (Some(Value::Array(variants)), _) => Some(variants),
        (Some(_), _) => None,
        (None, Some(Value::Array(variants))) => Some(variants),
        _ => None,
    };
    let non_null: Vec<&Value> = variants
        .map(|variants| {
            variants
                .iter()
                .filter(|variant| variant.get("type") != Some(&Value::from("null")))
                .collect()
        })
        .unwrap_or_default();
    let mut schemas = vec![exclusive_bounds(object)];
    if let [Value::Object(branch)] = non_null.as_slice() {
        schemas.push(exclusive_bounds(branch));
    }
    let mut tags: Vec<String> = Vec::new();
    let is_integer = |kind: Option<&Value>| match kind {
        Some(Value::String(kind)) => kind == "integer",
        Some(Value::Array(kinds)) => kinds.iter().any(|kind| kind == "integer"),
        _ => false,
    };
    if schemas.iter().any(|schema| is_integer(schema.get("type"))) {
        tags.push("@integer".to_owned());
    }
    for keyword in TAG_KEYWORDS {
        let values: Vec<&Value> = schemas.iter().filter_map(|s| s.get(keyword)).collect();
        let lower = LOWER_BOUNDS.contains(&keyword);
        if lower || UPPER_BOUNDS.contains(&keyword) {
            let numbers = values.iter().filter_map(|value| value.as_f64());
            let bound = if lower {
                numbers.fold(None, |best: Option<f64>, x| {
                    Some(best.map_or(x, |b| b.max(x)))
                })
            } else {
                numbers.fold(None, |best: Option<f64>, x| {
                    Some(best.map_or(x, |b| b.min(x)))
                })
            };
            if let Some(bound) = bound {
                tags.push(format!("@{keyword} {}", js_number(bound)));
            }
            continue;
        }
        let mut seen: Vec<&Value> = Vec::new();
        for value in values {
            if seen.iter().any(|earlier| same_value(earlier, value)) {
                continue;
            }
            seen.push(value);
            match value {
                Value::Number(number) => {
                    let x = number.as_f64().unwrap_or(f64::NAN);
                    tags.push(format!("@{keyword} {}", js_number(x)));
                }
                Value::String(text) => tags.push(format!("@{keyword} {text}")),
                _ => {}
            }
        }
    }
    if schemas
        .iter()
        .any(|schema| schema.get("uniqueItems") == Some(&Value::Bool(true)))
    {
        tags.push("@uniqueItems".to_owned());
    }
    match object.get("default") {
        None | Some(Value::Null) => {}
        Some(default) => tags.push(format!("@default {}", js_json(default))),
    }
    if object.get("deprecated") == Some(&Value::Bool(true)) {
        tags.push("@deprecated".to_owned());
    }
    let tags: Vec<String> = tags
        .into_iter()
        .filter(|tag| utf16_len(tag) <= MAX_TAG_CHARS)
        .map(|tag| escape_line_terminators(&tag))
        .collect();
    tags.join(" ")
}

/// Draft-04's boolean `exclusiveMinimum: true` makes `minimum` exclusive (and the same for
/// the maximum).
fn exclusive_bounds(schema: &Map<String, Value>) -> Map<String, Value> {
    let mut schema = schema.clone();
    for (bound, exclusive) in [
        ("minimum", "exclusiveMinimum"),
        ("maximum", "exclusiveMaximum"),
    ] {
        if schema.get(exclusive) == Some(&Value::Bool(true)) {
            match schema.remove(bound) {
                Some(value) => schema.insert(exclusive.to_owned(), value),
                None => schema.remove(exclusive),
            };
        }
    }
    schema
}

/// JavaScript's `SameValueZero` for the values a `Set` of tag values holds.
fn same_value(a: &Value, b: &Value) -> bool {
    match (a, b) {
        (Value::Number(a), Value::Number(b)) => a.as_f64() == b.as_f64(),
        (Value::String(a), Value::String(b)) => a == b,
        // Objects are never the same value; other kinds give no tag anyway.
        _ => false,
    }
}

fn escape_line_terminators(tag: &str) -> String {
    let mut out = String::with_capacity(tag.len());
    for c in tag.chars() {
        if is_line_terminator(c) {
            out.push_str(&format!("\\u{:04x}", u32::from(c)));
        } else {
            out.push(c);
        }
    }
    out
}
