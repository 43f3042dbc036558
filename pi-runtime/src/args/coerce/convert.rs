//! Pass 2: conversion by keyword (TypeBox `Value.Convert` rules). The first of
//! `$ref`, `const`, `enum`, `anyOf`/`oneOf`, `allOf`, a single `type` decides.

use serde_json::Value;

use super::{Change, chain, rebuild_array, rebuild_object, scalar};
use crate::args::compile::{Keywords, Node, NodeId, Reference, Tree};
use crate::args::value::{JsonType, json_eq};

/// Pass 2 over one value, with the stack of `$ref` targets being converted.
pub(super) struct Converter<'t> {
    tree: &'t Tree,
    /// (target, value) pairs being converted through a `$ref` higher up; meeting one again
    /// leaves the value unchanged, which ends recursive schemas and wraps.
    active: Vec<(NodeId, *const Value)>,
}

impl<'t> Converter<'t> {
    pub(super) fn new(tree: &'t Tree) -> Self {
        Converter {
            tree,
            active: Vec::new(),
        }
    }

    pub(super) fn convert(&mut self, id: NodeId, value: &Value) -> Option<Value> {
        let tree = self.tree;
        let keywords = tree.keywords(id)?;
        if let Some(reference) = &keywords.reference {
            // Sibling keywords are ignored by this pass.
            let Reference::Node(target) = reference else {
                return None;
            };
            return self.through_ref(*target, value);
        }
        if let Some(constant) = &keywords.constant {
            return literal(constant, value);
        }
        if let Some(members) = &keywords.enumeration {
            return members
                .iter()
                .all(|member| !json_eq(member, value))
                .then(|| {
                    members
                        .iter()
                        .filter_map(|member| literal(member, value))
                        .find(|candidate| !json_eq(candidate, value) && tree.accepts(id, candidate))
                })
                .flatten();
        }
        if !keywords.any_of.is_empty() {
            return self.union(id, keywords, &keywords.any_of, value);
        }
        if !keywords.one_of.is_empty() {
            return self.union(id, keywords, &keywords.one_of, value);
        }
        if !keywords.all_of.is_empty() {
            let mut current = None;
            for &member in &keywords.all_of {
                chain(&mut current, value, |v| self.convert(member, v));
            }
            chain(&mut current, value, |v| self.members(keywords, v));
            return current;
        }
        match keywords.types.as_slice() {
            [JsonType::Object] if keywords.single_type => self.members(keywords, value),
            [JsonType::Array] if keywords.single_type => self.items(keywords, value),
            [target] if keywords.single_type => scalar::convert(target, value),
            // A type array is pass 3's business.
            [_, ..] => None,
            [] if keywords.properties.is_some() || !keywords.pattern_properties.is_empty() => {
                self.members(keywords, value)
            }
            [] if keywords.tuple.is_some() || keywords.rest_items.is_some() => {
                self.items(keywords, value)
            }
            [] => None,
        }
    }

    fn through_ref(&mut self, target: NodeId, value: &Value) -> Option<Value> {
        let key = (target, std::ptr::from_ref(value));
        if self.active.contains(&key) {
            return None;
        }
        self.active.push(key);
        let converted = self.convert(target, value);
        self.active.pop();
        converted
    }

    /// The union rule: a value some branch accepts stays; otherwise the first branch whose
    /// conversion (plus the node's own members) the whole node accepts wins.
    fn union(
        &mut self,
        id: NodeId,
        keywords: &Keywords,
        branches: &[NodeId],
        value: &Value,
    ) -> Option<Value> {
        let tree = self.tree;
        if branches.iter().any(|&branch| tree.accepts(branch, value)) {
            return None;
        }
        for &branch in branches {
            let mut candidate = self.convert(branch, value);
            if keywords.has_members(tree) {
                chain(&mut candidate, value, |v| self.members(keywords, v));
            }
            if tree.accepts(id, candidate.as_ref().unwrap_or(value)) {
                return candidate;
            }
        }
        if keywords.has_members(tree) {
            self.members(keywords, value)
        } else {
            None
        }
    }

    /// The objects rule: each member converted by its declared, pattern or additional schema.
    fn members(&mut self, keywords: &Keywords, value: &Value) -> Option<Value> {
        let Value::Object(map) = value else {
            return None;
        };
        let tree = self.tree;
        rebuild_object(map, |key, member| {
            let mut current = None;
            let declared = keywords.property(key);
            if let Some(property) = declared {
                current = self.convert(property, member);
            }
            let mut matched = declared.is_some();
            for pattern in keywords
                .pattern_properties
                .iter()
                .filter(|p| p.matches(key))
            {
                matched = true;
                chain(&mut current, member, |v| self.convert(pattern.node, v));
            }
            if !matched
                && let Some(additional) = keywords.additional_properties
                && matches!(tree.node(additional), Node::Schema(_))
            {
                current = self.convert(additional, member);
            }
            current.map_or(Change::Keep, Change::Replace)
        })
    }

    /// The arrays rule: items converted in place; a single value becomes a one-item array
    /// (never for tuples).
    fn items(&mut self, keywords: &Keywords, value: &Value) -> Option<Value> {
        match value {
            Value::Array(items) => rebuild_array(items, |index, item| {
                let schema = keywords.tuple_or_coerced_rest(index)?;
                self.convert(schema, item)
            }),
            _ if keywords.tuple.is_some() => None,
            single => {
                let item = match keywords.rest_items {
                    Some(schema) => self.convert(schema, single),
                    None => None,
                };
                Some(Value::Array(vec![item.unwrap_or_else(|| single.clone())]))
            }
        }
    }
}

/// The literal rule of `const` and `enum` members: convert toward the constant's type and
/// keep the result only if it equals the constant.
fn literal(constant: &Value, value: &Value) -> Option<Value> {
    if json_eq(constant, value) {
        return None;
    }
    let target = match constant {
        Value::String(_) => JsonType::String,
        Value::Number(_) => JsonType::Number,
        Value::Bool(_) => JsonType::Boolean,
        _ => return None,
    };
    scalar::convert(&target, value).filter(|converted| json_eq(converted, constant))
}
