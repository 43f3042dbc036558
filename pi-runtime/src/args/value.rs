//! JSON value helpers with JavaScript's reading: numeric equality, JSON type names.

use serde_json::Value;

/// The type names a schema's `type` keyword may use. Names outside JSON Schema (`bigint`,
/// `undefined`, typos) are kept for the message and never match.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) enum JsonType {
    Null,
    Boolean,
    Object,
    Array,
    Number,
    Integer,
    String,
    Unknown(String),
}

impl JsonType {
    pub(crate) fn parse(name: &str) -> Self {
        match name {
            "null" => JsonType::Null,
            "boolean" => JsonType::Boolean,
            "object" => JsonType::Object,
            "array" => JsonType::Array,
            "number" => JsonType::Number,
            "integer" => JsonType::Integer,
            "string" => JsonType::String,
            other => JsonType::Unknown(other.to_owned()),
        }
    }

    pub(crate) fn name(&self) -> &str {
        match self {
            JsonType::Null => "null",
            JsonType::Boolean => "boolean",
            JsonType::Object => "object",
            JsonType::Array => "array",
            JsonType::Number => "number",
            JsonType::Integer => "integer",
            JsonType::String => "string",
            JsonType::Unknown(name) => name,
        }
    }

    /// Whether `value` is of this type (`integer`: a number without a fractional part).
    pub(crate) fn matches(&self, value: &Value) -> bool {
        match (self, value) {
            (JsonType::Null, Value::Null)
            | (JsonType::Boolean, Value::Bool(_))
            | (JsonType::Object, Value::Object(_))
            | (JsonType::Array, Value::Array(_))
            | (JsonType::Number, Value::Number(_))
            | (JsonType::String, Value::String(_)) => true,
            (JsonType::Integer, Value::Number(n)) => {
                n.is_i64() || n.is_u64() || n.as_f64().is_some_and(|x| x.fract() == 0.0)
            }
            _ => false,
        }
    }
}

/// The name a message gives the value's type: its JSON type, `number` for every number
/// (a deliberate difference: pi says `integer` for an integral one).
pub(crate) fn got_name(value: &Value) -> &'static str {
    match value {
        Value::Null => "null",
        Value::Bool(_) => "boolean",
        Value::Number(_) => "number",
        Value::String(_) => "string",
        Value::Array(_) => "array",
        Value::Object(_) => "object",
    }
}

/// Deep equality with numbers compared by value (`1` equals `1.0`), object keys in any order:
/// JavaScript's `===` on primitives and JSON Schema's equality on containers.
pub(crate) fn json_eq(a: &Value, b: &Value) -> bool {
    match (a, b) {
        (Value::Number(x), Value::Number(y)) => match (x.as_i64(), y.as_i64()) {
            (Some(x), Some(y)) => x == y,
            _ => match (x.as_u64(), y.as_u64()) {
                (Some(x), Some(y)) => x == y,
                _ => x.as_f64() == y.as_f64(),
            },
        },
        (Value::Array(x), Value::Array(y)) => {
            x.len() == y.len() && x.iter().zip(y).all(|(x, y)| json_eq(x, y))
        }
        (Value::Object(x), Value::Object(y)) => {
            x.len() == y.len()
                && x.iter()
                    .all(|(key, x)| y.get(key).is_some_and(|y| json_eq(x, y)))
        }
        _ => a == b,
    }
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;

    #[test]
    fn numbers_equal_by_value() {
        assert!(json_eq(&json!(1), &json!(1.0)));
        assert!(json_eq(&json!({"a": [1, 2.0]}), &json!({"a": [1.0, 2]})));
        assert!(json_eq(&json!({"a": 1, "b": 2}), &json!({"b": 2, "a": 1})));
        assert!(!json_eq(&json!(true), &json!(1)));
        assert!(!json_eq(&json!([1]), &json!([1, 1])));
    }

    #[test]
    fn integer_type_accepts_integral_floats() {
        assert!(JsonType::Integer.matches(&json!(5.0)));
        assert!(!JsonType::Integer.matches(&json!(5.5)));
        assert!(JsonType::Number.matches(&json!(5)));
        assert!(!JsonType::parse("bigint").matches(&json!(5)));
    }
}
