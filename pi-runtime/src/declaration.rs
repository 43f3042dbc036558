//! `Tool`: the provider-facing definition of a tool.

use std::fmt;
use std::sync::{Arc, OnceLock};

use serde::{Deserialize, Serialize};
use serde_json::Value;

use crate::args::{CompiledSchema, SchemaError, ValidationError};

/// How strictly the provider should constrain sampling to the schema. In strict mode the
/// provider gets a rewritten schema: every property required, optional ones nullable (the
/// `null` is dropped again before validation), every object closed.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
#[non_exhaustive]
pub enum Strictness {
    /// Strict where the provider and the schema allow it, silently normal otherwise.
    Prefer,
    /// Strict, or the request fails.
    Require,
}

/// Grammar variants of an OpenAI grammar ("custom") tool.
#[derive(Debug, Clone, PartialEq, Eq, Default, Serialize, Deserialize)]
pub struct GrammarVariants {
    /// A Lark grammar.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub openai_lark: Option<String>,
    /// A regular expression.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub openai_regex: Option<String>,
}

/// Provider-side constrained decoding of a tool's arguments.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(tag = "type", rename_all = "snake_case")]
#[non_exhaustive]
pub enum ConstrainedSampling {
    /// `{"type":"json_schema","strict":"prefer"|"require"}`.
    JsonSchema {
        /// Prefer or require strict mode.
        strict: Strictness,
    },
    /// `{"type":"grammar","variants":{...}}`.
    Grammar {
        /// The grammar texts.
        variants: GrammarVariants,
    },
}

/// The provider-facing definition: name, description, parameter schema and constrained
/// sampling. The schema is the single source of truth for the request, coercion and
/// validation; its validator is compiled once, on first use or at registration.
#[derive(Clone)]
pub struct Tool {
    /// The name the model calls, matched exactly.
    pub name: String,
    /// Shown to the model in the provider's `tools` field.
    pub description: String,
    /// The arguments' JSON Schema; key order is preserved. Shared: every request declares
    /// its tools again, and a copy of each schema per request would cost its size each time.
    pub parameters: Arc<Value>,
    /// Constrained sampling, if any.
    pub constrained_sampling: Option<ConstrainedSampling>,
    compiled: Arc<OnceLock<Result<Arc<CompiledSchema>, SchemaError>>>,
}

impl Tool {
    /// A tool definition without constrained sampling.
    pub fn new(name: impl Into<String>, description: impl Into<String>, parameters: Value) -> Self {
        Tool {
            name: name.into(),
            description: description.into(),
            parameters: Arc::new(parameters),
            constrained_sampling: None,
            compiled: Arc::default(),
        }
    }

    /// Ask for constrained sampling.
    #[must_use]
    pub fn with_constrained_sampling(mut self, sampling: ConstrainedSampling) -> Self {
        self.constrained_sampling = Some(sampling);
        self
    }

    /// The compiled validator of `parameters`, compiled on the first call and cached.
    ///
    /// # Errors
    /// The schema is not an object or does not compile (pi would only fail at the first call).
    pub fn compiled_schema(&self) -> Result<&Arc<CompiledSchema>, &SchemaError> {
        self.compiled
            .get_or_init(|| CompiledSchema::compile(&self.parameters).map(Arc::new))
            .as_ref()
    }

    /// Coerce and validate `arguments` against the parameters (see [`args`](crate::args));
    /// `Ok` carries the coerced arguments.
    ///
    /// # Errors
    /// The text the model sees: the arguments do not match, or the schema does not compile.
    pub fn validate(&self, arguments: &Value) -> Result<Value, ValidationError> {
        match self.compiled_schema() {
            Ok(compiled) => compiled.validate(&self.name, arguments),
            Err(error) => Err(ValidationError::new(error.to_string())),
        }
    }
}

impl fmt::Debug for Tool {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Tool")
            .field("name", &self.name)
            .field("description", &self.description)
            .field("parameters", &self.parameters)
            .field("constrained_sampling", &self.constrained_sampling)
            .finish_non_exhaustive()
    }
}

impl PartialEq for Tool {
    fn eq(&self, other: &Self) -> bool {
        self.name == other.name
            && self.description == other.description
            && self.parameters == other.parameters
            && self.constrained_sampling == other.constrained_sampling
    }
}

/// A tool serializes as pi's tool *declaration*: `name`, `description`, `parameters`, and
/// `constrainedSampling` when it has one. That is what a transcript's system messages carry
/// (`toolsAdded`), so a saved transcript names the same tools when it is read back.
impl Serialize for Tool {
    fn serialize<S: serde::Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        use serde::ser::SerializeStruct;
        let fields = if self.constrained_sampling.is_some() {
            4
        } else {
            3
        };
        let mut out = serializer.serialize_struct("Tool", fields)?;
        out.serialize_field("name", &self.name)?;
        out.serialize_field("description", &self.description)?;
        out.serialize_field("parameters", &self.parameters)?;
        if let Some(sampling) = &self.constrained_sampling {
            out.serialize_field("constrainedSampling", sampling)?;
        }
        out.end()
    }
}

/// Reads a declaration; a missing `description` is empty and missing `parameters` are an
/// object without properties, as for a context's tools.
impl<'de> Deserialize<'de> for Tool {
    fn deserialize<D: serde::Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        #[derive(Deserialize)]
        #[serde(rename_all = "camelCase")]
        struct Declaration {
            name: String,
            #[serde(default)]
            description: String,
            #[serde(default = "no_parameters")]
            parameters: Value,
            #[serde(default)]
            constrained_sampling: Option<ConstrainedSampling>,
        }
        fn no_parameters() -> Value {
            serde_json::json!({"type": "object", "properties": {}})
        }
        let declaration = Declaration::deserialize(deserializer)?;
        let tool = Tool::new(
            declaration.name,
            declaration.description,
            declaration.parameters,
        );
        Ok(match declaration.constrained_sampling {
            Some(sampling) => tool.with_constrained_sampling(sampling),
            None => tool,
        })
    }
}

impl Tool {
    /// Whether two tools declare the same interface to the model: the same name,
    /// description, constrained sampling and parameters, with the schema's keys in the same
    /// order (pi compares the declarations' JSON texts, so a reordered schema is a change).
    pub fn declares_same(&self, other: &Tool) -> bool {
        self.name == other.name
            && self.description == other.description
            && self.constrained_sampling == other.constrained_sampling
            && (Arc::ptr_eq(&self.parameters, &other.parameters)
                || same_json_text(&self.parameters, &other.parameters))
    }
}

/// Whether two JSON values print the same compact text: as `==`, except that the members of
/// objects must also come in the same order.
fn same_json_text(left: &Value, right: &Value) -> bool {
    match (left, right) {
        (Value::Object(left), Value::Object(right)) => {
            left.len() == right.len()
                && left
                    .iter()
                    .zip(right)
                    .all(|((lk, lv), (rk, rv))| lk == rk && same_json_text(lv, rv))
        }
        (Value::Array(left), Value::Array(right)) => {
            left.len() == right.len() && left.iter().zip(right).all(|(l, r)| same_json_text(l, r))
        }
        _ => left == right,
    }
}
