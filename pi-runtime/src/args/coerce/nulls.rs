//! Pass 1: an optional property sent as `null` is removed, as if omitted. Strict
//! sampling makes every property required and lets optional ones be `null`.

use serde_json::Value;

use super::{Change, rebuild_array, rebuild_object};
use crate::args::compile::{Node, NodeId, Tree};

pub(super) fn drop_optional_nulls(tree: &Tree, id: NodeId, value: &Value) -> Option<Value> {
    let keywords = tree.keywords(id)?;
    match value {
        Value::Object(map) if keywords.has_members(tree) => rebuild_object(map, |key, member| {
            if let Some(property) = keywords.property(key) {
                let removable = member.is_null()
                    && !keywords.required.iter().any(|name| name == key)
                    // A `$ref` is opaque to this pass (pi checks the schema itself).
                    && tree.keywords(property).is_none_or(|k| k.reference.is_none())
                    && !tree.accepts(property, &Value::Null);
                if removable {
                    return Change::Remove;
                }
                return replace(drop_optional_nulls(tree, property, member));
            }
            let mut current = None;
            let mut matched = false;
            for pattern in keywords
                .pattern_properties
                .iter()
                .filter(|p| p.matches(key))
            {
                matched = true;
                super::chain(&mut current, member, |v| {
                    drop_optional_nulls(tree, pattern.node, v)
                });
            }
            if !matched
                && let Some(additional) = keywords.additional_properties
                && matches!(tree.node(additional), Node::Schema(_))
            {
                current = drop_optional_nulls(tree, additional, member);
            }
            replace(current)
        }),
        Value::Array(items) => rebuild_array(items, |index, item| {
            let schema = keywords.tuple_or_coerced_rest(index)?;
            drop_optional_nulls(tree, schema, item)
        }),
        _ => None,
    }
}

fn replace(value: Option<Value>) -> Change {
    value.map_or(Change::Keep, Change::Replace)
}
