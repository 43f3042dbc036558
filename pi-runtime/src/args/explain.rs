//! The explainer: walks schema and value together after validation failed and says, in
//! pi-schema's words and order (its `explain.js`), where the value fails. jsonschema stays
//! the judge of validity; this module only finds the words.

use std::collections::HashSet;

use serde_json::{Map, Value};

use super::compile::{Dependency, Keywords, Limit, Node, NodeId, ROOT, Reference, Tree};
use super::format::{Issue, Segment, compact};
use super::value::{got_name, json_eq};

/// `$ref` hops without descending into the value after which a branch is given up (a schema
/// such as `{"$ref":"#"}` would otherwise never end).
const MAX_REF_DEPTH: usize = 64;

/// Enum lists longer than this are cut in messages.
const MAX_ENUM_SHOWN: usize = 20;

/// The errors of a value the root schema rejects, in report order. Never empty.
pub(crate) fn explain(tree: &Tree, value: &Value) -> Vec<Issue> {
    let mut explainer = Explainer::new(tree);
    explainer.explain(ROOT, value);
    if explainer.issues.is_empty() {
        explainer.issues.push(Issue::new(&[], "invalid".to_owned()));
    }
    explainer.issues
}

impl Tree {
    /// Whether the subschema `id` accepts `value`: jsonschema's verdict where it compiled the
    /// node, else (under a dangling `$ref`) whether the explainer finds nothing wrong. It
    /// lives here, not in `compile`, because of that fallback.
    pub(crate) fn accepts(&self, id: NodeId, value: &Value) -> bool {
        match self.node(id) {
            Node::Bool(accepts) => *accepts,
            Node::Schema(_) => self.validator_verdict(id, value).unwrap_or_else(|| {
                let mut explainer = Explainer::new(self);
                explainer.explain(id, value);
                explainer.issues.is_empty()
            }),
        }
    }
}

struct Explainer<'a> {
    tree: &'a Tree,
    location: Vec<Segment<'a>>,
    issues: Vec<Issue>,
    ref_depth: usize,
}

impl<'a> Explainer<'a> {
    fn new(tree: &'a Tree) -> Self {
        Explainer {
            tree,
            location: Vec::new(),
            issues: Vec::new(),
            ref_depth: 0,
        }
    }

    fn report(&mut self, message: String) {
        self.issues.push(Issue::new(&self.location, message));
    }

    fn report_at(&mut self, segment: Segment<'a>, message: String) {
        self.location.push(segment);
        self.report(message);
        self.location.pop();
    }

    fn explain_at(&mut self, segment: Segment<'a>, id: NodeId, value: &'a Value) {
        let ref_depth = std::mem::take(&mut self.ref_depth);
        self.location.push(segment);
        self.explain(id, value);
        self.location.pop();
        self.ref_depth = ref_depth;
    }

    /// Explain `value` under node `id` with every error at its place.
    fn explain(&mut self, id: NodeId, value: &'a Value) {
        let tree = self.tree;
        let keywords = match tree.node(id) {
            Node::Bool(true) => return,
            Node::Bool(false) => return self.report("no value is allowed here".to_owned()),
            Node::Schema(keywords) => keywords,
        };
        if self.ref_depth > MAX_REF_DEPTH || tree.validator_verdict(id, value) == Some(true) {
            return;
        }
        let before = self.issues.len();

        if !keywords.types.is_empty() && !keywords.types.iter().any(|t| t.matches(value)) {
            let expected: Vec<&str> = keywords.types.iter().map(|t| t.name()).collect();
            return self.report(format!(
                "expected {}, got {}",
                expected.join(" or "),
                got_name(value)
            ));
        }
        if let Some(members) = &keywords.enumeration
            && !members.iter().any(|member| json_eq(member, value))
        {
            self.report(format!("expected one of {}", enum_list(members)));
        }
        if let Some(constant) = &keywords.constant
            && !json_eq(constant, value)
        {
            self.report(format!("expected {}", compact(constant)));
        }
        match value {
            Value::String(text) => self.string(keywords, value, text),
            Value::Number(number) => self.number(keywords, value, number.as_f64()),
            Value::Object(map) => self.object(keywords, value, map),
            Value::Array(items) => self.array(keywords, items),
            Value::Null | Value::Bool(_) => {}
        }
        for &member in &keywords.all_of {
            self.explain(member, value);
        }
        if !keywords.any_of.is_empty() {
            self.union(&keywords.any_of, value, false);
        }
        if !keywords.one_of.is_empty() {
            self.union(&keywords.one_of, value, true);
        }
        if let Some(not) = keywords.not
            && tree.accepts(not, value)
        {
            self.report("must not match the schema in not".to_owned());
        }
        if let Some(condition) = keywords.if_ {
            let branch = if tree.accepts(condition, value) {
                keywords.then
            } else {
                keywords.else_
            };
            if let Some(branch) = branch {
                self.explain(branch, value);
            }
        }
        match &keywords.reference {
            Some(Reference::Node(target)) => {
                self.ref_depth += 1;
                self.explain(*target, value);
                self.ref_depth -= 1;
            }
            Some(Reference::Dangling(reference)) => {
                self.report(format!("unresolved reference {reference}"));
            }
            None => {}
        }
        if self.issues.len() == before {
            self.unevaluated(id, keywords, value);
        }
        if self.issues.len() == before && keywords.dynamic_reference {
            self.report("does not match the dynamically referenced schema".to_owned());
        }
    }

    fn string(&mut self, keywords: &Keywords, value: &Value, text: &str) {
        let length = text.chars().count() as f64;
        if let Some(min) = &keywords.min_length
            && length < min.value
        {
            self.report(format!("expected at least {} characters", min.text));
        }
        if let Some(max) = &keywords.max_length
            && length > max.value
        {
            self.report(format!("expected at most {} characters", max.text));
        }
        if let Some(pattern) = &keywords.pattern
            && !pattern.validator.is_valid(value)
        {
            self.report(format!("expected to match {}", pattern.text));
        }
        if let Some(format) = &keywords.format
            && !format.validator.is_valid(value)
        {
            self.report(format!("expected format {}", format.text));
        }
    }

    fn number(&mut self, keywords: &Keywords, value: &Value, x: Option<f64>) {
        let Some(x) = x else { return };
        type Check<'k> = (&'k Option<Limit>, fn(f64, f64) -> bool, &'static str);
        let checks: [Check<'_>; 4] = [
            (&keywords.minimum, |x, l| x < l, ">="),
            (&keywords.maximum, |x, l| x > l, "<="),
            (&keywords.exclusive_minimum, |x, l| x <= l, ">"),
            (&keywords.exclusive_maximum, |x, l| x >= l, "<"),
        ];
        for (limit, fails, operator) in checks {
            if let Some(limit) = limit
                && fails(x, limit.value)
            {
                self.report(format!("expected {operator} {}", limit.text));
            }
        }
        if let Some(divisor) = &keywords.multiple_of
            && !divisor.validator.is_valid(value)
        {
            self.report(format!("expected a multiple of {}", divisor.text));
        }
    }

    fn object(&mut self, keywords: &'a Keywords, value: &'a Value, map: &'a Map<String, Value>) {
        let tree = self.tree;
        for name in &keywords.required {
            if !map.contains_key(name) {
                self.report_at(Segment::Key(name), "missing".to_owned());
            }
        }
        if let Some(properties) = &keywords.properties {
            for (name, &property) in properties {
                if let Some(member) = map.get(name) {
                    self.explain_at(Segment::Key(name), property, member);
                }
            }
        }
        for (key, member) in map {
            let mut matched = keywords.property(key).is_some();
            for pattern in &keywords.pattern_properties {
                if pattern.matches(key) {
                    matched = true;
                    self.explain_at(Segment::Key(key), pattern.node, member);
                }
            }
            if !matched && let Some(additional) = keywords.additional_properties {
                match tree.node(additional) {
                    Node::Bool(false) => {
                        self.report_at(Segment::Key(key), "unknown field".to_owned())
                    }
                    _ => self.explain_at(Segment::Key(key), additional, member),
                }
            }
            if let Some(names) = keywords.property_names
                && !tree.accepts(names, &Value::String(key.clone()))
            {
                self.report_at(Segment::Key(key), "invalid property name".to_owned());
            }
        }
        let count = map.len() as f64;
        if let Some(min) = &keywords.min_properties
            && count < min.value
        {
            self.report(format!("expected at least {} properties", min.text));
        }
        if let Some(max) = &keywords.max_properties
            && count > max.value
        {
            self.report(format!("expected at most {} properties", max.text));
        }
        let required_when = keywords
            .dependent_required
            .iter()
            .map(|(key, names)| (key, names))
            .chain(keywords.dependencies.iter().filter_map(|d| match d {
                Dependency::Required(key, names) => Some((key, names)),
                Dependency::Schema(..) => None,
            }));
        for (key, names) in required_when {
            if map.contains_key(key) {
                for name in names {
                    if !map.contains_key(name) {
                        self.report_at(
                            Segment::Key(name),
                            format!("required when {key} is present"),
                        );
                    }
                }
            }
        }
        let dependent_schemas = keywords
            .dependencies
            .iter()
            .filter_map(|d| match d {
                Dependency::Schema(key, schema) => Some((key, *schema)),
                Dependency::Required(..) => None,
            })
            .chain(
                keywords
                    .dependent_schemas
                    .iter()
                    .map(|(key, schema)| (key, *schema)),
            );
        for (key, schema) in dependent_schemas {
            if map.contains_key(key) {
                self.explain(schema, value);
            }
        }
    }

    fn array(&mut self, keywords: &'a Keywords, items: &'a [Value]) {
        let tree = self.tree;
        for (index, item) in items.iter().enumerate() {
            if let Some(schema) = keywords.item_schema(index) {
                self.explain_at(Segment::Index(index), schema, item);
            }
        }
        let count = items.len() as f64;
        if let Some(min) = &keywords.min_items
            && count < min.value
        {
            self.report(format!("expected at least {} items", min.text));
        }
        if let Some(max) = &keywords.max_items
            && count > max.value
        {
            self.report(format!("expected at most {} items", max.text));
        }
        if keywords.unique_items
            && items
                .iter()
                .enumerate()
                .any(|(i, a)| items[i + 1..].iter().any(|b| json_eq(a, b)))
        {
            self.report("expected unique items".to_owned());
        }
        if let Some(contains) = keywords.contains {
            let matching = items
                .iter()
                .filter(|item| tree.accepts(contains, item))
                .count() as f64;
            let (min, min_text) = match &keywords.min_contains {
                Some(min) => (min.value, min.text.as_str()),
                None => (1.0, "1"),
            };
            let plural = |text: &str| if text == "1" { "item" } else { "items" };
            match &keywords.max_contains {
                None if matching < min => self.report(format!(
                    "expected at least {min_text} matching {}",
                    plural(min_text)
                )),
                Some(max) if min == 0.0 && matching > max.value => self.report(format!(
                    "expected at most {} matching {}",
                    max.text,
                    plural(&max.text)
                )),
                Some(max) if min != 0.0 && (matching < min || matching > max.value) => {
                    self.report(format!(
                        "expected between {min_text} and {} matching items",
                        max.text
                    ))
                }
                _ => {}
            }
        }
    }

    /// Which errors a failed `anyOf`/`oneOf` reports: a tagged union the selected branch's
    /// (or the unknown tag); otherwise only the best branch's, the one declaring the most keys
    /// of the value, then the one whose first error is deepest, then the earliest.
    fn union(&mut self, branches: &[NodeId], value: &'a Value, one_of: bool) {
        let tree = self.tree;
        let matching = branches
            .iter()
            .filter(|&&branch| tree.accepts(branch, value))
            .count();
        match (one_of, matching) {
            (true, 1) => return,
            (true, 2..) => return self.report("matches more than one alternative".to_owned()),
            (false, 1..) => return,
            _ => {}
        }
        if let Value::Object(map) = value
            && let Some((key, tags)) = self.tag(branches)
        {
            let selected = map
                .get(key)
                .and_then(|tag| tags.iter().position(|c| json_eq(c, tag)));
            return match selected {
                Some(index) => self.explain(branches[index], value),
                None => {
                    let tags: Vec<Value> = tags.into_iter().cloned().collect();
                    self.report_at(
                        Segment::Key(key),
                        format!("expected one of {}", compact(&Value::Array(tags))),
                    );
                }
            };
        }
        let mut best: Option<(usize, usize, Vec<Issue>)> = None;
        for &branch in branches {
            let issues = self.collect(branch, value);
            let Some(first) = issues.first() else {
                continue;
            };
            let declared = self.declared_keys(branch, value);
            let better = best.as_ref().is_none_or(|(keys, pointer_len, _)| {
                declared > *keys || (declared == *keys && first.pointer_len > *pointer_len)
            });
            if better {
                best = Some((declared, first.pointer_len, issues));
            }
        }
        match best {
            Some((_, _, issues)) => self.issues.extend(issues),
            None => self.report("matches no alternative".to_owned()),
        }
    }

    /// The errors of `value` under `id` at the current location, kept apart.
    fn collect(&mut self, id: NodeId, value: &'a Value) -> Vec<Issue> {
        let outer = std::mem::take(&mut self.issues);
        self.explain(id, value);
        std::mem::replace(&mut self.issues, outer)
    }

    /// How many keys of an object value the branch declares in `properties`.
    fn declared_keys(&self, branch: NodeId, value: &Value) -> usize {
        let (Value::Object(map), Some(keywords)) =
            (value, self.tree.keywords(self.tree.through_refs(branch)))
        else {
            return 0;
        };
        map.keys()
            .filter(|key| keywords.property(key).is_some())
            .count()
    }

    /// A tagged union: a property of the first branch that carries a distinct primitive
    /// `const` in every branch. Returns the key and the constants in branch order.
    fn tag(&self, branches: &[NodeId]) -> Option<(&'a str, Vec<&'a Value>)> {
        let tree = self.tree;
        let branch_keywords = |branch: NodeId| tree.keywords(tree.through_refs(branch));
        let first = branch_keywords(*branches.first()?)?.properties.as_ref()?;
        first.keys().find_map(|key| {
            let mut tags: Vec<&'a Value> = Vec::with_capacity(branches.len());
            for &branch in branches {
                let property = branch_keywords(branch)?.property(key)?;
                let constant = tree
                    .keywords(tree.through_refs(property))?
                    .constant
                    .as_ref()?;
                if constant.is_object()
                    || constant.is_array()
                    || tags.iter().any(|t| json_eq(t, constant))
                {
                    return None;
                }
                tags.push(constant);
            }
            Some((key.as_str(), tags))
        })
    }

    /// `unevaluatedProperties` / `unevaluatedItems`, read over this node, its `allOf`
    /// members, its `$ref` target and the union branches that accept the value.
    fn unevaluated(&mut self, id: NodeId, keywords: &'a Keywords, value: &'a Value) {
        let tree = self.tree;
        if let (Some(rule), Value::Object(map)) = (keywords.unevaluated_properties, value) {
            let mut evaluated = HashSet::new();
            if !self.evaluated_keys(id, value, &mut evaluated, 0) {
                for (key, member) in map {
                    if evaluated.contains(key.as_str()) {
                        continue;
                    }
                    match tree.node(rule) {
                        Node::Bool(false) => {
                            self.report_at(Segment::Key(key), "unknown field".to_owned())
                        }
                        _ => self.explain_at(Segment::Key(key), rule, member),
                    }
                }
            }
        }
        if let (Some(rule), Value::Array(items)) = (keywords.unevaluated_items, value) {
            let covered = self.evaluated_items(id, 0);
            for (index, item) in items.iter().enumerate().skip(covered) {
                match tree.node(rule) {
                    Node::Bool(false) => {
                        self.report_at(Segment::Index(index), "unexpected item".to_owned())
                    }
                    _ => self.explain_at(Segment::Index(index), rule, item),
                }
            }
        }
    }

    /// Collect the keys `id` evaluates; `true` when it evaluates every key.
    fn evaluated_keys(
        &self,
        id: NodeId,
        value: &'a Value,
        into: &mut HashSet<&'a str>,
        depth: usize,
    ) -> bool {
        let tree = self.tree;
        let (Some(keywords), Value::Object(map)) = (tree.keywords(id), value) else {
            return false;
        };
        if depth > MAX_REF_DEPTH {
            return false;
        }
        if keywords.additional_properties.is_some() {
            return true;
        }
        for key in map.keys() {
            let declared = keywords.property(key).is_some();
            if declared || keywords.pattern_properties.iter().any(|p| p.matches(key)) {
                into.insert(key);
            }
        }
        let mut nested: Vec<NodeId> = keywords.all_of.clone();
        nested.extend(
            keywords
                .any_of
                .iter()
                .chain(&keywords.one_of)
                .filter(|&&branch| tree.accepts(branch, value)),
        );
        if let Some(Reference::Node(target)) = &keywords.reference {
            nested.push(*target);
        }
        nested
            .into_iter()
            .any(|child| self.evaluated_keys(child, value, into, depth + 1))
    }

    /// How many leading items `id` evaluates (`usize::MAX`: all of them).
    fn evaluated_items(&self, id: NodeId, depth: usize) -> usize {
        let tree = self.tree;
        let Some(keywords) = tree.keywords(id) else {
            return 0;
        };
        if depth > MAX_REF_DEPTH {
            return 0;
        }
        if keywords.rest_items.is_some() {
            return usize::MAX;
        }
        let own = keywords.tuple.as_ref().map_or(0, Vec::len);
        let reference = match &keywords.reference {
            Some(Reference::Node(target)) => Some(*target),
            _ => None,
        };
        keywords
            .all_of
            .iter()
            .copied()
            .chain(reference)
            .map(|child| self.evaluated_items(child, depth + 1))
            .fold(own, usize::max)
    }
}

/// `["a","b"]`, or the first 20 members then `, ... and <k> more]`.
fn enum_list(members: &[Value]) -> String {
    if members.len() <= MAX_ENUM_SHOWN {
        return compact(&Value::Array(members.to_vec()));
    }
    let shown: Vec<String> = members[..MAX_ENUM_SHOWN].iter().map(compact).collect();
    format!(
        "[{}, ... and {} more]",
        shown.join(","),
        members.len() - MAX_ENUM_SHOWN
    )
}
