//! The `Deserialize` and `JsonSchema` impls of a `#[tool]`'s parameter struct
//! (`ReadFileParams`): a few generated lines per tool that call the shared code here, instead
//! of serde's and schemars' derives.
//!
//! Why: a derive writes some 300 lines per struct, which the user's crate expands (running
//! the derive macros, unoptimized in a debug profile), parses, resolves, lowers and hashes on
//! every build, `touch` + `cargo check` included. The code here is compiled once, with
//! pi-runtime. It behaves as the derives do for what `#[tool]` puts on the struct
//! (`deny_unknown_fields` for a closed tool, the `Option` rule's `default` and `with`,
//! `title = ""` and each field's description): the same errors, raised in the same order at the
//! same places, and the same schema, key for key and in the same order. A struct with a
//! parameter carrying `#[serde]` or `#[schemars]` attributes keeps the derives, which read
//! them.
//!
//! The fields are deserialized into a list of nested pairs, `(A, (B, (C, ())))`, that the
//! generated impl takes apart into the struct: one generic visitor serves every arity.

use std::fmt;
use std::marker::PhantomData;

use schemars::{JsonSchema, Schema, SchemaGenerator};
use serde::de::{
    self, DeserializeSeed, Deserializer, Expected, IgnoredAny, MapAccess, SeqAccess, Unexpected,
    Visitor,
};
use serde::{Deserialize, forward_to_deserialize_any};
use serde_json::{Map, Value};

/// What deserializing a parameter struct needs to know of it.
#[derive(Debug, Clone, Copy)]
pub struct Shape {
    /// The struct's name (serde's error texts say `struct ReadFileParams`).
    pub name: &'static str,
    /// The field names, in declaration order.
    pub fields: &'static [&'static str],
    /// Per field: an `Option` under the `Option` rule (`#[serde(default)]`), `None` when a
    /// sequence ends before it rather than an error.
    pub defaults: &'static [bool],
    /// `#[serde(deny_unknown_fields)]`: an unknown key is an error instead of ignored.
    pub closed: bool,
}

/// `<Params as Deserialize>::deserialize`: the fields in order, as nested pairs.
///
/// # Errors
/// serde's derive's errors: a missing, unknown or duplicate field, a sequence too short, or a
/// field's own error.
pub fn deserialize_params<'de, D, L>(deserializer: D, shape: &Shape) -> Result<L, D::Error>
where
    D: Deserializer<'de>,
    L: FieldList<'de>,
{
    deserializer.deserialize_struct(
        shape.name,
        shape.fields,
        ParamsVisitor {
            shape,
            list: PhantomData,
        },
    )
}

/// The fields of a parameter struct as nested pairs, `(A, (B, ()))`: implemented for `()`
/// and for every `(H, T)` whose head deserializes and whose tail is a list. Not for users.
pub trait FieldList<'de>: Sized {
    /// The values seen so far, one `Option` per field.
    type Slots;

    /// No value seen.
    fn empty() -> Self::Slots;

    /// Deserialize the value of the field at `index` (of `fields`, the names from this one
    /// on) into its slot.
    ///
    /// # Errors
    /// The field was seen before, or its value does not deserialize.
    fn next_value<M: MapAccess<'de>>(
        slots: &mut Self::Slots,
        index: usize,
        fields: &[&'static str],
        map: &mut M,
    ) -> Result<(), M::Error>;

    /// The list, once the map is read: a missing field is `None` for an `Option`, else an
    /// error naming it (serde's `missing_field`).
    ///
    /// # Errors
    /// A field that is not an `Option` is missing.
    fn finish<E: de::Error>(slots: Self::Slots, fields: &[&'static str]) -> Result<Self, E>;

    /// The list from a sequence, its elements in field order; `seen` elements were read
    /// before this field.
    ///
    /// # Errors
    /// The sequence ends before a field that has no default, or an element does not
    /// deserialize.
    fn from_seq<S: SeqAccess<'de>>(
        seq: &mut S,
        seen: usize,
        shape: &Shape,
    ) -> Result<Self, S::Error>;
}

impl<'de> FieldList<'de> for () {
    type Slots = ();

    fn empty() -> Self::Slots {}

    fn next_value<M: MapAccess<'de>>(
        _slots: &mut Self::Slots,
        _index: usize,
        _fields: &[&'static str],
        _map: &mut M,
    ) -> Result<(), M::Error> {
        // `Key` only yields an index below the number of fields, so no index reaches here.
        Ok(())
    }

    fn finish<E: de::Error>(_slots: Self::Slots, _fields: &[&'static str]) -> Result<Self, E> {
        Ok(())
    }

    fn from_seq<S: SeqAccess<'de>>(
        _seq: &mut S,
        _seen: usize,
        _shape: &Shape,
    ) -> Result<Self, S::Error> {
        Ok(())
    }
}

impl<'de, H, T> FieldList<'de> for (H, T)
where
    H: Deserialize<'de>,
    T: FieldList<'de>,
{
    type Slots = (Option<H>, T::Slots);

    fn empty() -> Self::Slots {
        (None, T::empty())
    }

    fn next_value<M: MapAccess<'de>>(
        slots: &mut Self::Slots,
        index: usize,
        fields: &[&'static str],
        map: &mut M,
    ) -> Result<(), M::Error> {
        let (name, rest) = split_first(fields);
        if index > 0 {
            return T::next_value(&mut slots.1, index - 1, rest, map);
        }
        if slots.0.is_some() {
            return Err(de::Error::duplicate_field(name));
        }
        slots.0 = Some(map.next_value()?);
        Ok(())
    }

    fn finish<E: de::Error>(slots: Self::Slots, fields: &[&'static str]) -> Result<Self, E> {
        let (name, rest) = split_first(fields);
        let head = match slots.0 {
            Some(head) => head,
            None => H::deserialize(MissingField(name, PhantomData))?,
        };
        Ok((head, T::finish(slots.1, rest)?))
    }

    fn from_seq<S: SeqAccess<'de>>(
        seq: &mut S,
        seen: usize,
        shape: &Shape,
    ) -> Result<Self, S::Error> {
        let head = match seq.next_element()? {
            Some(head) => head,
            None if shape.defaults.get(seen).copied().unwrap_or(false) => {
                let name = shape.fields.get(seen).copied().unwrap_or_default();
                H::deserialize(MissingField(name, PhantomData))?
            }
            None => return Err(de::Error::invalid_length(seen, &WithElements(shape))),
        };
        Ok((head, T::from_seq(seq, seen + 1, shape)?))
    }
}

/// The first field's name and the rest. `fields` holds a name per field of the list, so it
/// is never empty where a field is read; the empty name is never used.
fn split_first<'f>(fields: &'f [&'static str]) -> (&'static str, &'f [&'static str]) {
    match fields.split_first() {
        Some((&name, rest)) => (name, rest),
        None => ("", &[]),
    }
}

struct ParamsVisitor<'s, L> {
    shape: &'s Shape,
    list: PhantomData<L>,
}

impl<'de, L: FieldList<'de>> Visitor<'de> for ParamsVisitor<'_, L> {
    type Value = L;

    fn expecting(&self, formatter: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(formatter, "struct {}", self.shape.name)
    }

    fn visit_seq<S: SeqAccess<'de>>(self, mut seq: S) -> Result<L, S::Error> {
        L::from_seq(&mut seq, 0, self.shape)
    }

    fn visit_map<M: MapAccess<'de>>(self, mut map: M) -> Result<L, M::Error> {
        let fields = self.shape.fields;
        let mut slots = L::empty();
        while let Some(key) = map.next_key_seed(Key { shape: self.shape })? {
            match key {
                Some(index) => L::next_value(&mut slots, index, fields, &mut map)?,
                None => {
                    map.next_value::<IgnoredAny>()?;
                }
            }
        }
        L::finish(slots, fields)
    }
}

/// serde's `"struct ReadFileParams with 2 elements"`, for a sequence that is too short.
struct WithElements<'s>(&'s Shape);

impl Expected for WithElements<'_> {
    fn fmt(&self, formatter: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self.0.fields.len() {
            1 => write!(formatter, "struct {} with 1 element", self.0.name),
            count => write!(formatter, "struct {} with {count} elements", self.0.name),
        }
    }
}

/// A map key: the index of the field it names, or `None` for a key an open struct ignores.
struct Key<'s> {
    shape: &'s Shape,
}

impl Key<'_> {
    fn unknown<E: de::Error>(&self, key: &str) -> Result<Option<usize>, E> {
        if self.shape.closed {
            Err(E::unknown_field(key, self.shape.fields))
        } else {
            Ok(None)
        }
    }
}

impl<'de> DeserializeSeed<'de> for Key<'_> {
    type Value = Option<usize>;

    fn deserialize<D: Deserializer<'de>>(self, deserializer: D) -> Result<Self::Value, D::Error> {
        deserializer.deserialize_identifier(self)
    }
}

impl<'de> Visitor<'de> for Key<'_> {
    type Value = Option<usize>;

    fn expecting(&self, formatter: &mut fmt::Formatter<'_>) -> fmt::Result {
        formatter.write_str("field identifier")
    }

    fn visit_u64<E: de::Error>(self, value: u64) -> Result<Self::Value, E> {
        let count = self.shape.fields.len();
        match usize::try_from(value) {
            Ok(index) if index < count => Ok(Some(index)),
            _ if !self.shape.closed => Ok(None),
            _ => Err(E::invalid_value(
                Unexpected::Unsigned(value),
                &FieldIndex(count),
            )),
        }
    }

    fn visit_str<E: de::Error>(self, value: &str) -> Result<Self::Value, E> {
        match self.shape.fields.iter().position(|field| *field == value) {
            Some(index) => Ok(Some(index)),
            None => self.unknown(value),
        }
    }

    fn visit_bytes<E: de::Error>(self, value: &[u8]) -> Result<Self::Value, E> {
        match self
            .shape
            .fields
            .iter()
            .position(|field| field.as_bytes() == value)
        {
            Some(index) => Ok(Some(index)),
            None => self.unknown(&String::from_utf8_lossy(value)),
        }
    }
}

/// serde's `"field index 0 <= i < 2"`.
struct FieldIndex(usize);

impl Expected for FieldIndex {
    fn fmt(&self, formatter: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(formatter, "field index 0 <= i < {}", self.0)
    }
}

/// A field absent from the map: `None` for an `Option`, else serde's `missing field` error
/// (serde's own `__private::de::missing_field`, which is not public API).
struct MissingField<E>(&'static str, PhantomData<E>);

impl<'de, E: de::Error> Deserializer<'de> for MissingField<E> {
    type Error = E;

    fn deserialize_any<V: Visitor<'de>>(self, _visitor: V) -> Result<V::Value, E> {
        Err(E::missing_field(self.0))
    }

    fn deserialize_option<V: Visitor<'de>>(self, visitor: V) -> Result<V::Value, E> {
        visitor.visit_none()
    }

    forward_to_deserialize_any! {
        bool i8 i16 i32 i64 i128 u8 u16 u32 u64 u128 f32 f64 char str string
        bytes byte_buf unit unit_struct newtype_struct seq tuple
        tuple_struct map struct enum identifier ignored_any
    }
}

/// One field of a parameter struct, for its schema.
#[derive(Debug, Clone, Copy)]
pub struct SchemaField {
    /// The property's name.
    pub name: &'static str,
    /// The parameter's doc comment (no `description` when empty).
    pub description: &'static str,
    /// An `Option<T>` under the `Option` rule: never required, and `schema` is `T`'s.
    pub default: bool,
    /// The field's schema and whether its type is an `Option` to schemars: [`field_schema`].
    pub schema: fn(&mut SchemaGenerator) -> (Schema, bool),
}

/// A field's subschema, and whether schemars counts its type as an `Option` (a required
/// field of such a type is not listed as required, as schemars' derive does).
pub fn field_schema<T: JsonSchema>(generator: &mut SchemaGenerator) -> (Schema, bool) {
    // `_schemars_private_is_option` is hidden but public: schemars' derive calls it from the
    // user's crate in the same place, so it moves with schemars' major version as the derive
    // does.
    (
        generator.subschema_for::<T>(),
        T::_schemars_private_is_option(),
    )
}

/// `<Params as JsonSchema>::json_schema`: what schemars' derive builds for the struct.
pub fn params_schema(
    generator: &mut SchemaGenerator,
    closed: bool,
    fields: &[SchemaField],
) -> Schema {
    let mut root = Map::new();
    root.insert("type".to_owned(), Value::from("object"));
    if closed {
        root.insert("additionalProperties".to_owned(), Value::Bool(false));
    }
    let mut schema = Schema::from(root);
    for field in fields {
        let deserialize = generator.contract().is_deserialize();
        let (mut subschema, is_option) = (field.schema)(generator);
        let optional = field.default || (deserialize && is_option);
        if !field.description.is_empty() {
            subschema.insert("description".to_owned(), field.description.into());
        }
        insert_property(&mut schema, field.name, optional, subschema);
    }
    schema
}

/// schemars' `_private::insert_object_property`: the property, and its name in `required`
/// unless optional (both created on first use, in that order).
fn insert_property(schema: &mut Schema, name: &str, optional: bool, subschema: Schema) {
    let object = schema.ensure_object();
    if let Some(properties) = object
        .entry("properties")
        .or_insert(Value::Object(Map::new()))
        .as_object_mut()
    {
        properties.insert(name.to_owned(), subschema.into());
    }
    if !optional
        && let Some(required) = object
            .entry("required")
            .or_insert(Value::Array(Vec::new()))
            .as_array_mut()
    {
        required.push(name.into());
    }
}
