//! Coercion, as pi-schema does it: three passes over a copy of the arguments. Each pass
//! returns `None` for "unchanged", so an argument value that needs no conversion is never
//! copied, and a changed one shares nothing with the input (the transcript is never
//! modified).

mod convert;
mod nulls;
mod scalar;
mod types;

use serde_json::{Map, Value};

use super::compile::{ROOT, Tree};

/// The arguments after the three passes, or `None` when no pass changed anything.
pub(crate) fn coerce(tree: &Tree, arguments: &Value) -> Option<Value> {
    let pass1 = nulls::drop_optional_nulls(tree, ROOT, arguments);
    let after1 = pass1.as_ref().unwrap_or(arguments);
    let pass2 = convert::Converter::new(tree).convert(ROOT, after1);
    let after2 = pass2.as_ref().unwrap_or(after1);
    let pass3 = types::coerce_types(tree, ROOT, after2);
    pass3.or(pass2).or(pass1)
}

/// What a pass does with one member of an object.
enum Change {
    Keep,
    Remove,
    Replace(Value),
}

/// `map` with `change` applied to each member in order, or `None` when every member is kept.
/// Members keep their positions.
fn rebuild_object(
    map: &Map<String, Value>,
    mut change: impl FnMut(&str, &Value) -> Change,
) -> Option<Value> {
    let mut out: Option<Map<String, Value>> = None;
    for (index, (key, member)) in map.iter().enumerate() {
        match change(key, member) {
            Change::Keep => {
                if let Some(out) = &mut out {
                    out.insert(key.clone(), member.clone());
                }
            }
            change => {
                let out = out.get_or_insert_with(|| {
                    map.iter()
                        .take(index)
                        .map(|(k, v)| (k.clone(), v.clone()))
                        .collect()
                });
                if let Change::Replace(value) = change {
                    out.insert(key.clone(), value);
                }
            }
        }
    }
    out.map(Value::Object)
}

/// `items` with `change` applied to each item, or `None` when no item changed.
fn rebuild_array(
    items: &[Value],
    mut change: impl FnMut(usize, &Value) -> Option<Value>,
) -> Option<Value> {
    let mut out: Option<Vec<Value>> = None;
    for (index, item) in items.iter().enumerate() {
        match change(index, item) {
            None => {
                if let Some(out) = &mut out {
                    out.push(item.clone());
                }
            }
            Some(value) => {
                let out = out.get_or_insert_with(|| {
                    let mut out = Vec::with_capacity(items.len());
                    out.extend_from_slice(&items[..index]);
                    out
                });
                out.push(value);
            }
        }
    }
    out.map(Value::Array)
}

/// Apply `step` to the current value, keeping the latest change.
fn chain(
    current: &mut Option<Value>,
    original: &Value,
    step: impl FnOnce(&Value) -> Option<Value>,
) {
    if let Some(next) = step(current.as_ref().unwrap_or(original)) {
        *current = Some(next);
    }
}
