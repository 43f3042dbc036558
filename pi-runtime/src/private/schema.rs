//! The parameter schema of a tool, generated once per type: schemars' output tidied into the
//! shape providers and strict mode expect (root `type: "object"`, `required` always present, no
//! `$schema`, no root `title`/`description`, everything inline, closed objects by default).

use schemars::generate::SchemaSettings;
use schemars::transform::{Transform, transform_subschemas};
use schemars::{JsonSchema, Schema};
use serde_json::{Map, Value};

/// `format` values schemars adds for Rust number types. They are not JSON Schema formats:
/// the model gains nothing from them, and strict-mode providers reject unknown formats.
const RUST_NUMBER_FORMATS: &[&str] = &[
    "int", "int8", "int16", "int32", "int64", "int128", "uint", "uint8", "uint16", "uint32",
    "uint64", "uint128", "float", "double",
];

/// The `parameters` schema of a tool whose arguments deserialize into `T`.
///
/// With `closed`, every object schema that lists `properties` and says nothing about
/// `additionalProperties` gets `"additionalProperties": false` (as pi-schema's `obj()` does),
/// so an extra key is reported to the model as an unknown field.
pub fn parameters_schema<T: JsonSchema + ?Sized>(closed: bool) -> Value {
    // Inline everything: strict mode rejects `$defs`/`$ref`. Recursive types
    // still get a `$ref`; they cannot be strict anyway.
    let settings = SchemaSettings::draft2020_12().with(|settings| {
        settings.meta_schema = None;
        settings.inline_subschemas = true;
    });
    let mut schema = settings.into_generator().into_root_schema_for::<T>();
    Tidy { closed }.transform(&mut schema);
    let mut value = schema.to_value();
    if let Value::Object(root) = &mut value {
        tidy_root(root);
    }
    value
}

/// Finds a `#[tool]` fn's output schema by autoref specialization: the macro calls
/// `(&&OutputSchemaProbe::<Output>::new()).output_schema()` with the fn's return type, which
/// resolves to [`OutputSchemaOf`] for `Json<T>` and `Result<Json<T>, E>` with `T: JsonSchema`,
/// and to [`OutputSchemaNone`] for everything else.
pub struct OutputSchemaProbe<T: ?Sized>(std::marker::PhantomData<T>);

impl<T: ?Sized> OutputSchemaProbe<T> {
    /// The probe.
    #[must_use]
    pub const fn new() -> Self {
        OutputSchemaProbe(std::marker::PhantomData)
    }
}

impl<T: ?Sized> std::fmt::Debug for OutputSchemaProbe<T> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("OutputSchemaProbe")
    }
}

impl<T: ?Sized> Default for OutputSchemaProbe<T> {
    fn default() -> Self {
        Self::new()
    }
}

/// The output schema of a `Json<T>` output: `T`'s schema when it is an object schema.
pub trait OutputSchemaOf {
    /// The schema, or `None`.
    fn output_schema(&self) -> Option<Value>;
}

impl<T: JsonSchema> OutputSchemaOf for &OutputSchemaProbe<crate::tool::Json<T>> {
    fn output_schema(&self) -> Option<Value> {
        object_schema::<T>()
    }
}

impl<T: JsonSchema, E> OutputSchemaOf for &OutputSchemaProbe<Result<crate::tool::Json<T>, E>> {
    fn output_schema(&self) -> Option<Value> {
        object_schema::<T>()
    }
}

/// Every other output has no schema.
pub trait OutputSchemaNone {
    /// `None`.
    fn output_schema(&self) -> Option<Value>;
}

impl<T: ?Sized> OutputSchemaNone for OutputSchemaProbe<T> {
    fn output_schema(&self) -> Option<Value> {
        None
    }
}

fn object_schema<T: JsonSchema>() -> Option<Value> {
    let schema = parameters_schema::<T>(false);
    (schema.get("type").and_then(Value::as_str) == Some("object")).then_some(schema)
}

/// The per-node part, applied to every subschema.
struct Tidy {
    closed: bool,
}

impl Transform for Tidy {
    fn transform(&mut self, schema: &mut Schema) {
        if let Some(node) = schema.as_object_mut() {
            collapse_value_union(node);
            // One key order everywhere, whatever order schemars wrote: `additionalProperties`
            // after `properties` and `required`, the description last (as TypeBox writes it).
            if node.contains_key("properties") {
                let additional = node.shift_remove("additionalProperties");
                if let Some(additional) = additional.or(self.closed.then_some(Value::Bool(false))) {
                    node.insert("additionalProperties".to_owned(), additional);
                }
            }
            if let Some(description) = node.shift_remove("description") {
                node.insert("description".to_owned(), description);
            }
            if node
                .get("format")
                .and_then(Value::as_str)
                .is_some_and(|format| RUST_NUMBER_FORMATS.contains(&format))
            {
                node.shift_remove("format");
            }
        }
        transform_subschemas(self, schema);
    }
}

/// The root-only part: the tool's own description is the tool description, not the type's
/// doc comment, and an object root always lists `properties` and `required` (empty when
/// there are none), in that order after `type`.
fn tidy_root(root: &mut Map<String, Value>) {
    root.shift_remove("$schema");
    root.shift_remove("title");
    root.shift_remove("description");
    if root.get("type").and_then(Value::as_str) != Some("object") {
        return;
    }
    let mut rest = std::mem::take(root);
    for (key, empty) in [
        ("type", Value::Null),
        ("properties", Value::Object(Map::new())),
        ("required", Value::Array(Vec::new())),
    ] {
        let value = rest.shift_remove(key).unwrap_or(empty);
        root.insert(key.to_owned(), value);
    }
    root.extend(rest);
}

/// A unit enum whose variants have doc comments: schemars writes a `oneOf` of `const`s, each
/// with its description. A failed union is explained by one branch only (pi's rule: the
/// first of equally good branches), so the model would read `units: expected "metric"` for
/// a `metric | imperial` enum; and strict mode rejects `oneOf`. As an `enum`, with each
/// variant's description as a line of the node's description, the model reads the same
/// text and is told `units: expected one of ["metric","imperial"]`.
///
/// Only a union that is the node's whole meaning is rewritten: branches of `const` or `enum`
/// primitives with at most a `type` (the value's own) and a `description`, and no other
/// keyword on the node but `description`.
fn collapse_value_union(node: &mut Map<String, Value>) {
    let key = match (node.contains_key("oneOf"), node.contains_key("anyOf")) {
        (true, false) => "oneOf",
        (false, true) => "anyOf",
        _ => return,
    };
    if node
        .keys()
        .any(|other| other != key && other != "description")
    {
        return;
    }
    let Some(Value::Array(branches)) = node.get(key) else {
        return;
    };
    let mut values: Vec<Value> = Vec::new();
    let mut types: Vec<&str> = Vec::new();
    let mut lines: Vec<String> = Vec::new();
    for branch in branches {
        let Some(branch) = branch.as_object() else {
            return;
        };
        if branch
            .keys()
            .any(|keyword| !matches!(keyword.as_str(), "const" | "enum" | "type" | "description"))
        {
            return;
        }
        let members = match (branch.get("const"), branch.get("enum")) {
            (Some(value), None) => std::slice::from_ref(value),
            (None, Some(Value::Array(members))) => members.as_slice(),
            _ => return,
        };
        for member in members {
            let Some(member_type) = primitive_type(member) else {
                return;
            };
            if branch
                .get("type")
                .is_some_and(|ty| ty.as_str() != Some(member_type))
                || values.contains(member)
            {
                return;
            }
            if !types.contains(&member_type) {
                types.push(member_type);
            }
            values.push(member.clone());
        }
        if let (Some(Value::String(description)), [value]) = (branch.get("description"), members) {
            lines.push(format!("- {value}: {description}"));
        }
    }
    if values.is_empty() {
        return;
    }
    let description = node
        .get("description")
        .and_then(Value::as_str)
        .into_iter()
        .map(str::to_owned)
        .chain(lines)
        .collect::<Vec<_>>()
        .join("\n");
    node.clear();
    if let [only] = types.as_slice() {
        node.insert("type".to_owned(), Value::from(*only));
    }
    node.insert("enum".to_owned(), Value::Array(values));
    if !description.is_empty() {
        node.insert("description".to_owned(), Value::String(description));
    }
}

/// The JSON type of a string, number or boolean; `None` for the rest.
fn primitive_type(value: &Value) -> Option<&'static str> {
    match value {
        Value::String(_) => Some("string"),
        Value::Number(_) => Some("number"),
        Value::Bool(_) => Some("boolean"),
        _ => None,
    }
}
