//! Compiling a parameter schema once: the keyword tree the coercer and the explainer walk,
//! `$ref`s resolved to nodes, ECMAScript regexes, and a jsonschema validator for every
//! subschema (the judge of validity everywhere).

use std::borrow::Cow;
use std::collections::HashMap;
use std::sync::Arc;

use indexmap::IndexMap;
use jsonschema::{Validator, ValidatorMap};
use serde_json::{Map, Value};

use super::SchemaError;
use super::value::JsonType;

/// Index of a node in [`Tree::nodes`]; the root is node 0.
pub(crate) type NodeId = usize;

/// A schema's `properties`, in their declared order. Each coercion pass looks up every
/// member of every call's arguments ([`Keywords::property`]); a large one is hashed with
/// foldhash, not std's SipHash (the keys are the tool author's; a model's keys are only looked
/// up, never inserted).
pub(crate) type Members = IndexMap<String, NodeId, foldhash::fast::RandomState>;

/// Up to this many `properties`, [`Keywords::property`] compares names instead of hashing.
const SCAN_LIMIT: usize = 8;

/// The root node's id.
pub(crate) const ROOT: NodeId = 0;

/// One schema position: a boolean schema or an object of keywords.
#[derive(Debug)]
pub(crate) enum Node {
    Bool(bool),
    Schema(Box<Keywords>),
}

/// Where a `$ref` leads.
#[derive(Debug)]
pub(crate) enum Reference {
    Node(NodeId),
    /// The reference names nothing: that place rejects every value (as in pi).
    Dangling(String),
}

/// A numeric keyword value, with the text messages print (serde_json's, not JavaScript's).
#[derive(Debug)]
pub(crate) struct Limit {
    pub(crate) value: f64,
    pub(crate) text: String,
}

/// A keyword jsonschema checks for us (`pattern`, `format`, `multipleOf`): the text the
/// message shows and a validator of `{keyword: value}` alone.
#[derive(Debug)]
pub(crate) struct Assertion {
    pub(crate) text: String,
    pub(crate) validator: Arc<Validator>,
}

/// A `patternProperties` entry with its ECMAScript regex.
#[derive(Debug)]
pub(crate) struct PatternProperty {
    pub(crate) regex: fancy_regex::Regex,
    pub(crate) node: NodeId,
}

impl PatternProperty {
    pub(crate) fn matches(&self, key: &str) -> bool {
        // A match that exceeds the backtracking limit counts as no match; jsonschema, the
        // judge of validity, reports the value either way.
        self.regex.is_match(key).unwrap_or(false)
    }
}

/// Draft-7 array-form `dependencies` entry.
#[derive(Debug)]
pub(crate) enum Dependency {
    Required(String, Vec<String>),
    Schema(String, NodeId),
}

/// The keywords of one schema object that coercion and explanation read.
#[derive(Debug, Default)]
pub(crate) struct Keywords {
    pub(crate) reference: Option<Reference>,
    pub(crate) dynamic_reference: bool,
    /// `type` as a list, in schema order (non-string entries dropped).
    pub(crate) types: Vec<JsonType>,
    /// `type` was given as a single string (pass 2 only converts by a single type).
    pub(crate) single_type: bool,
    pub(crate) enumeration: Option<Vec<Value>>,
    pub(crate) constant: Option<Value>,
    pub(crate) all_of: Vec<NodeId>,
    pub(crate) any_of: Vec<NodeId>,
    pub(crate) one_of: Vec<NodeId>,
    pub(crate) not: Option<NodeId>,
    pub(crate) if_: Option<NodeId>,
    pub(crate) then: Option<NodeId>,
    pub(crate) else_: Option<NodeId>,

    pub(crate) properties: Option<Members>,
    pub(crate) required: Vec<String>,
    pub(crate) pattern_properties: Vec<PatternProperty>,
    pub(crate) additional_properties: Option<NodeId>,
    pub(crate) property_names: Option<NodeId>,
    pub(crate) min_properties: Option<Limit>,
    pub(crate) max_properties: Option<Limit>,
    pub(crate) dependent_required: Vec<(String, Vec<String>)>,
    pub(crate) dependencies: Vec<Dependency>,
    pub(crate) dependent_schemas: Vec<(String, NodeId)>,
    pub(crate) unevaluated_properties: Option<NodeId>,

    /// `prefixItems`, or a draft-7 `items` array.
    pub(crate) tuple: Option<Vec<NodeId>>,
    /// The schema of the items the tuple does not cover (all items without a tuple).
    pub(crate) rest_items: Option<NodeId>,
    /// The rest schema is 2020-12 `items` (coerced), not draft-7 `additionalItems` (only
    /// validated).
    pub(crate) coerce_rest: bool,
    pub(crate) min_items: Option<Limit>,
    pub(crate) max_items: Option<Limit>,
    pub(crate) unique_items: bool,
    pub(crate) contains: Option<NodeId>,
    pub(crate) min_contains: Option<Limit>,
    pub(crate) max_contains: Option<Limit>,
    pub(crate) unevaluated_items: Option<NodeId>,

    pub(crate) min_length: Option<Limit>,
    pub(crate) max_length: Option<Limit>,
    pub(crate) pattern: Option<Assertion>,
    pub(crate) format: Option<Assertion>,

    pub(crate) minimum: Option<Limit>,
    pub(crate) maximum: Option<Limit>,
    pub(crate) exclusive_minimum: Option<Limit>,
    pub(crate) exclusive_maximum: Option<Limit>,
    pub(crate) multiple_of: Option<Assertion>,
}

impl Keywords {
    /// The schema `properties` declares for member `key`.
    ///
    /// A tool's objects have a few members, and each coercion pass looks up every member of
    /// the arguments: up to [`SCAN_LIMIT`] members, comparing the names is cheaper than
    /// hashing the key.
    pub(crate) fn property(&self, key: &str) -> Option<NodeId> {
        let properties = self.properties.as_ref()?;
        if properties.len() <= SCAN_LIMIT {
            (properties.iter()).find_map(|(name, &id)| (name == key).then_some(id))
        } else {
            properties.get(key).copied()
        }
    }

    /// Declares object members pass 2 converts (`properties`, `patternProperties`, or a
    /// schema-object `additionalProperties`).
    pub(crate) fn has_members(&self, tree: &Tree) -> bool {
        self.properties.is_some()
            || !self.pattern_properties.is_empty()
            || self
                .additional_properties
                .is_some_and(|id| matches!(tree.node(id), Node::Schema(_)))
    }

    /// The schema coercion uses for array item `index`: draft-7 `additionalItems` items are
    /// validated but never coerced (as in pi).
    pub(crate) fn tuple_or_coerced_rest(&self, index: usize) -> Option<NodeId> {
        let rest = self.rest_items.filter(|_| self.coerce_rest);
        match &self.tuple {
            Some(tuple) => tuple.get(index).copied().or(rest),
            None => rest,
        }
    }

    /// The schema of array item `index`.
    pub(crate) fn item_schema(&self, index: usize) -> Option<NodeId> {
        match &self.tuple {
            Some(tuple) => tuple.get(index).copied().or(self.rest_items),
            None => self.rest_items,
        }
    }
}

/// A compiled schema: the node tree and the validators.
#[derive(Debug)]
pub(crate) struct Tree {
    nodes: Vec<(String, Node)>,
    root: Validator,
    validators: ValidatorMap,
}

impl Tree {
    pub(crate) fn node(&self, id: NodeId) -> &Node {
        &self.nodes[id].1
    }

    pub(crate) fn keywords(&self, id: NodeId) -> Option<&Keywords> {
        match self.node(id) {
            Node::Schema(keywords) => Some(keywords),
            Node::Bool(_) => None,
        }
    }

    /// Follow `$ref`s from `id` to the first node that is not a bare reference.
    pub(crate) fn through_refs(&self, mut id: NodeId) -> NodeId {
        for _ in 0..self.nodes.len() {
            match self.keywords(id).and_then(|k| k.reference.as_ref()) {
                Some(Reference::Node(target)) => id = *target,
                _ => break,
            }
        }
        id
    }

    /// Whether the whole root schema accepts `value`.
    pub(crate) fn root_accepts(&self, value: &Value) -> bool {
        self.root.is_valid(value)
    }

    /// jsonschema's verdict on `value` under node `id`, if it compiled that node on its own:
    /// only places under a dangling `$ref` lack a validator.
    pub(crate) fn validator_verdict(&self, id: NodeId, value: &Value) -> Option<bool> {
        self.validators
            .get(&self.nodes[id].0)
            .map(|validator| validator.is_valid(value))
    }
}

/// Compile `schema` (a JSON object).
pub(crate) fn compile(schema: &Value) -> Result<Tree, SchemaError> {
    if !schema.is_object() {
        return Err(SchemaError::new(
            "the parameter schema must be a JSON object",
        ));
    }
    let mut compiler = Compiler::new(schema);
    compiler.node_at(String::new(), schema)?;
    let options = jsonschema::options().should_validate_formats(true);
    let mut document = Cow::Borrowed(schema);
    for (pointer, patch) in &compiler.type_patches {
        if let Some(place) = document.to_mut().pointer_mut(pointer) {
            match patch {
                // An unknown type name never matches, so a `type` naming only
                // unknown types rejects every value, which is what `false` says in words
                // jsonschema accepts.
                None => *place = Value::Bool(false),
                Some(known) => place["type"] = known.clone(),
            }
        }
    }
    let root = match options.build(&document) {
        Ok(root) => root,
        Err(error) if compiler.dangling.is_empty() => return Err(invalid(&error)),
        Err(_) => {
            // jsonschema refuses a document with a dangling `$ref`; pi makes that place
            // reject every value and lets the rest validate, which is what `false`
            // in its place does.
            for pointer in &compiler.dangling {
                if let Some(place) = document.to_mut().pointer_mut(pointer) {
                    *place = Value::Bool(false);
                }
            }
            options.build(&document).map_err(|error| invalid(&error))?
        }
    };
    let validators = options
        .build_map(&document)
        .map_err(|error| invalid(&error))?;
    let nodes = compiler
        .nodes
        .into_iter()
        .map(|(pointer, node)| (format!("#{pointer}"), node))
        .collect();
    Ok(Tree {
        nodes,
        root,
        validators,
    })
}

fn invalid(error: &jsonschema::ValidationError<'_>) -> SchemaError {
    SchemaError::new(format!("invalid parameter schema: {error}"))
}

struct Compiler<'s> {
    root: &'s Value,
    ids: HashMap<&'s str, String>,
    anchors: HashMap<&'s str, String>,
    nodes: Vec<(String, Node)>,
    by_pointer: HashMap<String, NodeId>,
    dangling: Vec<String>,
    /// Nodes whose `type` names types jsonschema does not know: the known names that remain,
    /// or `None` when none does.
    type_patches: Vec<(String, Option<Value>)>,
    assertions: HashMap<String, Arc<Validator>>,
}

impl<'s> Compiler<'s> {
    fn new(root: &'s Value) -> Self {
        let mut compiler = Compiler {
            root,
            ids: HashMap::new(),
            anchors: HashMap::new(),
            nodes: Vec::new(),
            by_pointer: HashMap::new(),
            dangling: Vec::new(),
            type_patches: Vec::new(),
            assertions: HashMap::new(),
        };
        compiler.index(root, String::new());
        compiler
    }

    /// Record every `$id` and `$anchor` (draft 7: an `$id` starting with `#`) by pointer.
    fn index(&mut self, value: &'s Value, pointer: String) {
        match value {
            Value::Object(map) => {
                if let Some(id) = map.get("$id").and_then(Value::as_str) {
                    match id.strip_prefix('#') {
                        Some(anchor) => self.anchors.insert(anchor, pointer.clone()),
                        None => self.ids.insert(id.trim_end_matches('#'), pointer.clone()),
                    };
                }
                if let Some(anchor) = map.get("$anchor").and_then(Value::as_str) {
                    self.anchors.insert(anchor, pointer.clone());
                }
                for (key, child) in map {
                    self.index(child, child_pointer(&pointer, key));
                }
            }
            Value::Array(items) => {
                for (i, child) in items.iter().enumerate() {
                    self.index(child, format!("{pointer}/{i}"));
                }
            }
            _ => {}
        }
    }

    /// Where `reference` leads in the document, if anywhere.
    fn resolve(&self, reference: &str) -> Option<(String, &'s Value)> {
        let (base, fragment) = reference.split_once('#').unwrap_or((reference, ""));
        let resource = if base.is_empty() {
            String::new()
        } else {
            self.ids.get(base)?.clone()
        };
        let pointer = if fragment.is_empty() {
            resource
        } else if fragment.starts_with('/') {
            format!("{resource}{}", percent_decode(fragment))
        } else {
            self.anchors.get(fragment)?.clone()
        };
        let target = self.root.pointer(&pointer)?;
        Some((pointer, target))
    }

    fn node_at(&mut self, pointer: String, schema: &'s Value) -> Result<NodeId, SchemaError> {
        if let Some(&id) = self.by_pointer.get(&pointer) {
            return Ok(id);
        }
        let id = self.nodes.len();
        self.nodes.push((pointer.clone(), Node::Bool(true)));
        self.by_pointer.insert(pointer.clone(), id);
        let node = match schema {
            Value::Bool(accepts) => Node::Bool(*accepts),
            Value::Object(map) => Node::Schema(Box::new(self.keywords(&pointer, map)?)),
            // Not a schema; jsonschema rejects the document before this matters.
            _ => Node::Bool(true),
        };
        self.nodes[id].1 = node;
        Ok(id)
    }

    fn child(
        &mut self,
        pointer: &str,
        key: &str,
        schema: &'s Value,
    ) -> Result<NodeId, SchemaError> {
        self.node_at(child_pointer(pointer, key), schema)
    }

    fn children(
        &mut self,
        pointer: &str,
        key: &str,
        schemas: Option<&'s Value>,
    ) -> Result<Vec<NodeId>, SchemaError> {
        let Some(Value::Array(schemas)) = schemas else {
            return Ok(Vec::new());
        };
        let base = child_pointer(pointer, key);
        schemas
            .iter()
            .enumerate()
            .map(|(i, schema)| self.node_at(format!("{base}/{i}"), schema))
            .collect()
    }

    fn optional_child(
        &mut self,
        pointer: &str,
        key: &str,
        map: &'s Map<String, Value>,
    ) -> Result<Option<NodeId>, SchemaError> {
        match map.get(key) {
            Some(schema @ (Value::Object(_) | Value::Bool(_))) => {
                self.child(pointer, key, schema).map(Some)
            }
            _ => Ok(None),
        }
    }

    fn named_children(
        &mut self,
        pointer: &str,
        key: &str,
        map: &'s Map<String, Value>,
    ) -> Result<Option<Members>, SchemaError> {
        let Some(Value::Object(members)) = map.get(key) else {
            return Ok(None);
        };
        let base = child_pointer(pointer, key);
        let mut out = Members::with_capacity_and_hasher(members.len(), Default::default());
        for (name, schema) in members {
            out.insert(name.clone(), self.child(&base, name, schema)?);
        }
        Ok(Some(out))
    }

    fn assertion(&mut self, keyword: &str, value: &Value) -> Result<Assertion, SchemaError> {
        let text = match value {
            Value::String(text) => text.clone(),
            other => other.to_string(),
        };
        let cache_key = format!("{keyword}\u{0}{value}");
        let validator = match self.assertions.get(&cache_key) {
            Some(validator) => Arc::clone(validator),
            None => {
                let mut schema = Map::new();
                schema.insert(keyword.to_owned(), value.clone());
                let validator = jsonschema::options()
                    .should_validate_formats(true)
                    .build(&Value::Object(schema))
                    .map_err(|error| invalid(&error))?;
                let validator = Arc::new(validator);
                self.assertions.insert(cache_key, Arc::clone(&validator));
                validator
            }
        };
        Ok(Assertion { text, validator })
    }

    fn keywords(
        &mut self,
        pointer: &str,
        map: &'s Map<String, Value>,
    ) -> Result<Keywords, SchemaError> {
        let mut k = Keywords::default();
        if let Some(reference) = map.get("$ref").and_then(Value::as_str) {
            k.reference = Some(match self.resolve(reference) {
                Some((target, schema)) => Reference::Node(self.node_at(target, schema)?),
                None => {
                    self.dangling.push(pointer.to_owned());
                    Reference::Dangling(reference.to_owned())
                }
            });
        }
        k.dynamic_reference = map.contains_key("$dynamicRef");
        match map.get("type") {
            Some(Value::String(name)) => {
                k.types = vec![JsonType::parse(name)];
                k.single_type = true;
            }
            Some(Value::Array(names)) => {
                k.types = names
                    .iter()
                    .filter_map(Value::as_str)
                    .map(JsonType::parse)
                    .collect();
            }
            _ => {}
        }
        if k.types.iter().any(|t| matches!(t, JsonType::Unknown(_))) {
            let known: Vec<Value> = k
                .types
                .iter()
                .filter(|t| !matches!(t, JsonType::Unknown(_)))
                .map(|t| Value::from(t.name()))
                .collect();
            let patch = (!known.is_empty()).then_some(Value::Array(known));
            self.type_patches.push((pointer.to_owned(), patch));
        }
        k.enumeration = map.get("enum").and_then(Value::as_array).cloned();
        k.constant = map.get("const").cloned();
        k.all_of = self.children(pointer, "allOf", map.get("allOf"))?;
        k.any_of = self.children(pointer, "anyOf", map.get("anyOf"))?;
        k.one_of = self.children(pointer, "oneOf", map.get("oneOf"))?;
        k.not = self.optional_child(pointer, "not", map)?;
        k.if_ = self.optional_child(pointer, "if", map)?;
        k.then = self.optional_child(pointer, "then", map)?;
        k.else_ = self.optional_child(pointer, "else", map)?;

        k.properties = self.named_children(pointer, "properties", map)?;
        k.required = string_list(map.get("required"));
        if let Some(Value::Object(patterns)) = map.get("patternProperties") {
            let base = child_pointer(pointer, "patternProperties");
            for (source, schema) in patterns {
                k.pattern_properties.push(PatternProperty {
                    regex: ecma_regex(source)?,
                    node: self.child(&base, source, schema)?,
                });
            }
        }
        k.additional_properties = self.optional_child(pointer, "additionalProperties", map)?;
        k.property_names = self.optional_child(pointer, "propertyNames", map)?;
        k.min_properties = limit(map.get("minProperties"));
        k.max_properties = limit(map.get("maxProperties"));
        if let Some(Value::Object(entries)) = map.get("dependentRequired") {
            k.dependent_required = entries
                .iter()
                .map(|(key, names)| (key.clone(), string_list(Some(names))))
                .collect();
        }
        if let Some(Value::Object(entries)) = map.get("dependencies") {
            let base = child_pointer(pointer, "dependencies");
            for (key, entry) in entries {
                k.dependencies.push(match entry {
                    Value::Array(_) => Dependency::Required(key.clone(), string_list(Some(entry))),
                    schema => Dependency::Schema(key.clone(), self.child(&base, key, schema)?),
                });
            }
        }
        if let Some(schemas) = self.named_children(pointer, "dependentSchemas", map)? {
            k.dependent_schemas = schemas.into_iter().collect();
        }
        k.unevaluated_properties = self.optional_child(pointer, "unevaluatedProperties", map)?;

        if map.contains_key("prefixItems") {
            k.tuple = Some(self.children(pointer, "prefixItems", map.get("prefixItems"))?);
            k.rest_items = self.optional_child(pointer, "items", map)?;
            k.coerce_rest = true;
        } else if let Some(items @ Value::Array(_)) = map.get("items") {
            k.tuple = Some(self.children(pointer, "items", Some(items))?);
            k.rest_items = self.optional_child(pointer, "additionalItems", map)?;
        } else {
            k.rest_items = self.optional_child(pointer, "items", map)?;
            k.coerce_rest = true;
        }
        k.min_items = limit(map.get("minItems"));
        k.max_items = limit(map.get("maxItems"));
        k.unique_items = map.get("uniqueItems") == Some(&Value::Bool(true));
        k.contains = self.optional_child(pointer, "contains", map)?;
        k.min_contains = limit(map.get("minContains"));
        k.max_contains = limit(map.get("maxContains"));
        k.unevaluated_items = self.optional_child(pointer, "unevaluatedItems", map)?;

        k.min_length = limit(map.get("minLength"));
        k.max_length = limit(map.get("maxLength"));
        if let Some(pattern @ Value::String(_)) = map.get("pattern") {
            k.pattern = Some(self.assertion("pattern", pattern)?);
        }
        if let Some(format @ Value::String(_)) = map.get("format") {
            k.format = Some(self.assertion("format", format)?);
        }
        k.minimum = limit(map.get("minimum"));
        k.maximum = limit(map.get("maximum"));
        k.exclusive_minimum = limit(map.get("exclusiveMinimum"));
        k.exclusive_maximum = limit(map.get("exclusiveMaximum"));
        if let Some(divisor @ Value::Number(_)) = map.get("multipleOf") {
            k.multiple_of = Some(self.assertion("multipleOf", divisor)?);
        }
        Ok(k)
    }
}

/// Compile an ECMAScript pattern (`u` flag) the way jsonschema does, so that coercion matches
/// `patternProperties` keys exactly as validation will.
fn ecma_regex(source: &str) -> Result<fancy_regex::Regex, SchemaError> {
    let bad = || {
        SchemaError::new(format!(
            "invalid regular expression in patternProperties: {source}"
        ))
    };
    let translated = jsonschema_regex::to_rust_regex(source).map_err(|()| bad())?;
    fancy_regex::Regex::new(&translated).map_err(|_| bad())
}

fn limit(value: Option<&Value>) -> Option<Limit> {
    match value {
        Some(Value::Number(n)) => Some(Limit {
            value: n.as_f64()?,
            text: n.to_string(),
        }),
        _ => None,
    }
}

fn string_list(value: Option<&Value>) -> Vec<String> {
    match value {
        Some(Value::Array(items)) => items
            .iter()
            .filter_map(Value::as_str)
            .map(str::to_owned)
            .collect(),
        _ => Vec::new(),
    }
}

/// `pointer` extended by `key`, escaped per RFC 6901.
pub(crate) fn child_pointer(pointer: &str, key: &str) -> String {
    let mut out = String::with_capacity(pointer.len() + key.len() + 1);
    out.push_str(pointer);
    out.push('/');
    for c in key.chars() {
        match c {
            '~' => out.push_str("~0"),
            '/' => out.push_str("~1"),
            c => out.push(c),
        }
    }
    out
}

/// Undo `%XX` escapes of a URI fragment (`#/%24defs/A` names `$defs`).
fn percent_decode(fragment: &str) -> String {
    if !fragment.contains('%') {
        return fragment.to_owned();
    }
    let bytes = fragment.as_bytes();
    let mut out = Vec::with_capacity(bytes.len());
    let mut i = 0;
    while i < bytes.len() {
        let hex = bytes
            .get(i + 1..i + 3)
            .and_then(|h| std::str::from_utf8(h).ok())
            .and_then(|h| u8::from_str_radix(h, 16).ok());
        match (bytes[i], hex) {
            (b'%', Some(byte)) => {
                out.push(byte);
                i += 3;
            }
            (byte, _) => {
                out.push(byte);
                i += 1;
            }
        }
    }
    String::from_utf8_lossy(&out).into_owned()
}
