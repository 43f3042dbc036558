//! The scalar conversions of passes 2 and 3, pi's except for one deliberate difference: no
//! number or boolean ever becomes a string (the check reports it, so the model sees that it
//! sent the wrong type instead of having text invented for it).

use serde_json::Value;

use crate::args::js_number::{bigint_literal, finite_number, js_number, truncate};
use crate::args::value::JsonType;
use crate::js::js_trim;

/// Pass 2 (`Value.Convert`): `value` converted to `target`, or `None` when the rule leaves it
/// unchanged.
pub(super) fn convert(target: &JsonType, value: &Value) -> Option<Value> {
    match target {
        JsonType::String => match value {
            // Numbers and booleans stay as they are; the check reports them.
            Value::Null => Some(Value::from("null")),
            _ => None,
        },
        JsonType::Number => to_number(value),
        JsonType::Integer => match value {
            Value::Number(n) => truncate(n),
            other => to_number(other).map(|n| match &n {
                Value::Number(inner) => truncate(inner).unwrap_or(n),
                _ => n,
            }),
        },
        JsonType::Boolean => match value {
            Value::Null => Some(Value::Bool(false)),
            Value::Number(n) => number_to_bool(n),
            Value::String(s) => match s.as_str() {
                "1" => Some(Value::Bool(true)),
                "0" => Some(Value::Bool(false)),
                s if s.eq_ignore_ascii_case("true") => Some(Value::Bool(true)),
                s if s.eq_ignore_ascii_case("false") => Some(Value::Bool(false)),
                _ => None,
            },
            _ => None,
        },
        JsonType::Null => {
            let becomes_null = match value {
                Value::Bool(b) => !b,
                Value::Number(n) => n.as_f64() == Some(0.0),
                Value::String(s) => {
                    s.is_empty()
                        || s == "0"
                        || s.eq_ignore_ascii_case("null")
                        || s.eq_ignore_ascii_case("undefined")
                }
                _ => false,
            };
            becomes_null.then_some(Value::Null)
        }
        JsonType::Object | JsonType::Array | JsonType::Unknown(_) => None,
    }
}

/// `1` → `true`, `0` → `false` (any spelling of the number: `1.0`, `-0`).
fn number_to_bool(n: &serde_json::Number) -> Option<Value> {
    let x = n.as_f64()?;
    if x == 1.0 {
        Some(Value::Bool(true))
    } else if x == 0.0 {
        Some(Value::Bool(false))
    } else {
        None
    }
}

fn to_number(value: &Value) -> Option<Value> {
    match value {
        Value::Bool(b) => Some(Value::from(u8::from(*b))),
        Value::Null => Some(Value::from(0)),
        Value::String(s) => finite_number(s)
            .or_else(|| {
                if s.eq_ignore_ascii_case("true") {
                    Some(Value::from(1))
                } else if s.eq_ignore_ascii_case("false") {
                    Some(Value::from(0))
                } else {
                    None
                }
            })
            .or_else(|| bigint_literal(s)),
        _ => None,
    }
}

/// Pass 3 (Ajv `coerceTypes`): `value` converted to `target`, or `None` when it stays.
pub(super) fn coerce_type(target: &JsonType, value: &Value) -> Option<Value> {
    match (target, value) {
        (JsonType::Number | JsonType::Integer, Value::Null) => Some(Value::from(0)),
        (JsonType::Number | JsonType::Integer, Value::Bool(b)) => Some(Value::from(u8::from(*b))),
        (JsonType::Number, Value::String(s)) if !js_trim(s).is_empty() => finite_number(s),
        (JsonType::Integer, Value::String(s)) if !js_trim(s).is_empty() => {
            // No truncation here: `"42.5"` is not an integer and stays a string.
            js_number(s)
                .filter(|x| x.is_finite() && x.fract() == 0.0)
                .and_then(|_| finite_number(s))
        }
        (JsonType::Boolean, Value::Null) => Some(Value::Bool(false)),
        (JsonType::Boolean, Value::String(s)) if s == "true" => Some(Value::Bool(true)),
        (JsonType::Boolean, Value::String(s)) if s == "false" => Some(Value::Bool(false)),
        (JsonType::Boolean, Value::Number(n)) => number_to_bool(n),
        // Numbers and booleans are never written out as text.
        (JsonType::String, Value::Null) => Some(Value::from("")),
        (JsonType::Null, Value::String(s)) if s.is_empty() => Some(Value::Null),
        (JsonType::Null, Value::Bool(false)) => Some(Value::Null),
        (JsonType::Null, Value::Number(n)) if n.as_f64() == Some(0.0) => Some(Value::Null),
        _ => None,
    }
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;

    #[test]
    fn pass_two_never_writes_numbers_as_text() {
        assert_eq!(convert(&JsonType::String, &json!(42)), None);
        assert_eq!(convert(&JsonType::String, &json!(true)), None);
        assert_eq!(
            convert(&JsonType::String, &json!(null)),
            Some(json!("null"))
        );
    }

    #[test]
    fn pass_three_integer_keeps_fractional_strings() {
        assert_eq!(coerce_type(&JsonType::Integer, &json!("42.5")), None);
        assert_eq!(coerce_type(&JsonType::Integer, &json!("5")), Some(json!(5)));
        assert_eq!(coerce_type(&JsonType::Integer, &json!(" ")), None);
        assert_eq!(
            coerce_type(&JsonType::Number, &json!(" 7 ")),
            Some(json!(7))
        );
    }
}
