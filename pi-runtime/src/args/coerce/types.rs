//! Pass 3: primitive coercion by `type` (Ajv `coerceTypes` style), the pass that
//! handles type arrays such as `["integer","null"]`. It does not follow `$ref`.

use serde_json::Value;

use super::{Change, chain, rebuild_array, rebuild_object, scalar};
use crate::args::compile::{Node, NodeId, Tree};
use crate::args::value::JsonType;

pub(super) fn coerce_types(tree: &Tree, id: NodeId, value: &Value) -> Option<Value> {
    let keywords = tree.keywords(id)?;
    let mut current = None;
    for &member in &keywords.all_of {
        chain(&mut current, value, |v| coerce_types(tree, member, v));
    }
    for branches in [&keywords.any_of, &keywords.one_of] {
        if !branches.is_empty() {
            chain(&mut current, value, |v| union(tree, branches, v));
        }
    }

    let types = &keywords.types;
    let now = current.as_ref().unwrap_or(value);
    let already = types.len() > 1 && types.iter().any(|t| t.matches(now));
    if !already && let Some(converted) = types.iter().find_map(|t| scalar::coerce_type(t, now)) {
        current = Some(converted);
    }

    let now = current.as_ref().unwrap_or(value);
    if types.contains(&JsonType::Object)
        && let Value::Object(map) = now
    {
        let changed = rebuild_object(map, |key, member| {
            let property = keywords.property(key);
            let mut next = property.and_then(|property| coerce_types(tree, property, member));
            let mut matched = false;
            for pattern in keywords
                .pattern_properties
                .iter()
                .filter(|p| p.matches(key))
            {
                matched = true;
                chain(&mut next, member, |v| coerce_types(tree, pattern.node, v));
            }
            if !matched
                && property.is_none()
                && let Some(additional) = keywords.additional_properties
                && matches!(tree.node(additional), Node::Schema(_))
            {
                next = coerce_types(tree, additional, member);
            }
            next.map_or(Change::Keep, Change::Replace)
        });
        if changed.is_some() {
            current = changed;
        }
    } else if types.contains(&JsonType::Array)
        && let Value::Array(items) = now
    {
        let changed = rebuild_array(items, |index, item| {
            coerce_types(tree, keywords.tuple_or_coerced_rest(index)?, item)
        });
        if changed.is_some() {
            current = changed;
        }
    }
    current
}

/// A value some branch accepts stays; else the first branch that accepts its own coercion.
fn union(tree: &Tree, branches: &[NodeId], value: &Value) -> Option<Value> {
    if branches.iter().any(|&branch| tree.accepts(branch, value)) {
        return None;
    }
    branches.iter().find_map(|&branch| {
        coerce_types(tree, branch, value).filter(|coerced| tree.accepts(branch, coerced))
    })
}
