//! What the model sees of code mode: the codemode tool's description with the listed tools
//! within a token budget, and the script-call note on the other declared tools (pi's
//! `prepareCodemodeLoadout`).

use std::cmp::Ordering;

use indexmap::{IndexMap, IndexSet};
use serde_json::{Value, json};

use super::declarations::{Declaration, output_type, render_tool_sample, resolve_schema_ref};
use super::identifier::to_codemode_identifier;
use crate::js::{js_json, js_trim, utf16_len};
use crate::tool::Exposure;

/// The codemode tool's name.
pub const CODEMODE_TOOL_NAME: &str = "codemode";
/// The default of [`CodemodeSettings::inline_budget`], in estimated tokens.
pub const DEFAULT_INLINE_BUDGET: f64 = 3000.0;
const CHARS_PER_TOKEN: usize = 4;

const DESCRIPTION_INTRO: &str = "Run JavaScript that calls other tools. The input is raw JavaScript (not JSON, no code fence), run as an async function body in a QuickJS sandbox: top-level `await` and `return` work. No Node, file system, network, or timers.
- `await tools.<name>({ ...args })` resolves to a string, or an object if the tool's declaration says so, and rejects with an Error on failure. A tool whose declaration returns an object resolves on failure too when it returned that object; check its fields. Calls still running when the script ends are cancelled.
- Optional first line: `// @options: {\"max_output_tokens\": 10000, \"timeout_ms\": 60000}`";

const GLOBALS: &str = "Globals:
- `text(value)`, `image(dataUrlOrImageBlock)`, `console.log(...)`, and top-level `return` add output; `exit()` ends the script. With several text items, each starts with a `==> text N/M <==` line, and `console` lines follow the other output in one `<console_output>` block. `image()` also saves the image to a temp file and the result names its path.
- `store(key, value)` and `load(key)` keep JSON values across codemode calls.
- `ALL_TOOLS`, `await searchTools(query, { limit?, namespace? })`, `await describeTool(name)`, `await describeNamespace(name)`: find unlisted tools, such as MCP tools.";

/// The codemode tool's prompt snippet.
pub const PROMPT_SNIPPET: &str = "Run JavaScript that calls other tools";
/// The codemode tool's prompt guideline.
pub const PROMPT_GUIDELINE: &str = "Use codemode to batch independent tool calls (Promise.allSettled), chain them, or filter large output, instead of many separate calls.";

/// How code mode presents tools that are both declared and callable from scripts.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
#[non_exhaustive]
pub enum CodemodeMode {
    /// Their descriptions say how scripts call them; the codemode description lists only
    /// the callable tools that are not `direct` (pi's default).
    #[default]
    On,
    /// The codemode description lists every callable tool, and requests leave out the
    /// declarations of active `direct` tools.
    Only,
}

/// Code mode settings.
#[derive(Debug, Clone, PartialEq)]
pub struct CodemodeSettings {
    /// [`CodemodeMode::On`] by default.
    pub mode: CodemodeMode,
    /// The token budget of the tool sections in the codemode description.
    pub inline_budget: f64,
    /// When a `models` API exists, the folder of its documentation: the description points at
    /// `<folder>/codemode.md`.
    pub models_docs: Option<String>,
}

impl Default for CodemodeSettings {
    fn default() -> Self {
        CodemodeSettings {
            mode: CodemodeMode::On,
            inline_budget: DEFAULT_INLINE_BUDGET,
            models_docs: None,
        }
    }
}

/// A group of tools, such as one MCP server's: tools of a namespace are listed under its
/// heading, and scripts find them with `searchTools(query, { namespace })` and
/// `describeNamespace(name)`.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct Namespace {
    /// The heading.
    pub name: String,
    /// Shown under the heading when not blank.
    pub description: String,
    /// How to use its tools (`describeNamespace`, tool search).
    pub instructions: String,
    /// Other names scripts may use for it.
    pub aliases: Vec<String>,
}

impl Namespace {
    /// A namespace with a name only.
    pub fn new(name: impl Into<String>) -> Self {
        Namespace {
            name: name.into(),
            ..Namespace::default()
        }
    }

    /// Whether `query` names it: its name or an alias, as is or as a script identifier.
    pub(crate) fn is_named(&self, query: &str) -> bool {
        let wanted = to_codemode_identifier(query);
        std::iter::once(&self.name)
            .chain(&self.aliases)
            .any(|name| name == query || to_codemode_identifier(name) == wanted)
    }
}

/// A registered tool as the loadout sees it.
#[derive(Debug, Clone, PartialEq)]
pub struct LoadoutTool {
    /// The tool's name.
    pub name: String,
    /// Its description.
    pub description: String,
    /// Its parameter schema.
    pub parameters: Value,
    /// Its output schema, when it has one.
    pub output_schema: Option<Value>,
    /// Its exposure.
    pub exposure: Exposure,
    /// Whether it is active (declared to the model).
    pub active: bool,
    /// Its namespace.
    pub namespace: Option<Namespace>,
    /// Its prompt guidelines.
    pub guidelines: Vec<String>,
}

/// What the loadout hook makes of the tools.
#[derive(Debug, Clone, PartialEq, Default)]
pub struct Loadout {
    /// The codemode tool's description.
    pub description: String,
    /// New descriptions of other declared tools, by name.
    pub descriptions: IndexMap<String, String>,
    /// Declared tools whose declarations requests leave out.
    pub hidden_declarations: Vec<String>,
}

/// Whether scripts can call a tool: `codemode` and `deferred` tools always, `direct` ones
/// while active; never the codemode tool itself.
pub fn is_callable(name: &str, exposure: Exposure, active: bool) -> bool {
    name != CODEMODE_TOOL_NAME
        && match exposure {
            Exposure::Codemode | Exposure::Deferred => true,
            Exposure::Direct => active,
            _ => false,
        }
}

/// A tool's code mode declaration: its description followed by its guidelines as bullets,
/// its parameters, and its output schema (`{"type":"string"}` without one).
pub fn codemode_declaration(
    name: &str,
    description: &str,
    parameters: &Value,
    output_schema: Option<&Value>,
    guidelines: &[String],
) -> Declaration {
    let bullets: Vec<String> = guidelines
        .iter()
        .map(|guideline| js_trim(guideline))
        .filter(|guideline| !guideline.is_empty())
        .collect::<IndexSet<&str>>()
        .into_iter()
        .map(|guideline| format!("- {guideline}"))
        .collect();
    let description = if bullets.is_empty() {
        description.to_owned()
    } else {
        format!("{}\n\n{}", js_trim(description), bullets.join("\n"))
    };
    Declaration {
        name: name.to_owned(),
        description,
        input_schema: Some(parameters.clone()),
        output_schema: Some(
            output_schema
                .cloned()
                .unwrap_or_else(|| json!({"type": "string"})),
        ),
    }
}

/// The codemode tool's description with no tools listed: the intro and the globals.
pub fn base_description(settings: &CodemodeSettings) -> String {
    let mut text = format!("{DESCRIPTION_INTRO}\n\n{GLOBALS}");
    if let Some(docs) = &settings.models_docs {
        text.push_str(&format!(
            "\n- `models`: classifiers and image generation. Read {docs}/codemode.md first."
        ));
    }
    text
}

/// pi's loadout hook for the registered `tools` (in registration order; `declared` are the
/// active ones, in activation order).
///
/// ```
/// use pi_runtime::__conformance::{LoadoutTool, prepare_loadout};
/// use pi_runtime::codemode::CodemodeSettings;
/// use pi_runtime::tool::Exposure;
/// use serde_json::json;
///
/// let tool = |name: &str, exposure, active| LoadoutTool {
///     name: name.into(),
///     description: format!("The {name} tool"),
///     parameters: json!({"type": "object"}),
///     output_schema: None,
///     exposure,
///     active,
///     namespace: None,
///     guidelines: Vec::new(),
/// };
/// let tools = [tool("read", Exposure::Direct, true), tool("grep", Exposure::Codemode, false)];
/// let loadout = prepare_loadout(&tools, &["read"], &CodemodeSettings::default());
/// assert!(loadout.description.ends_with("### `grep`\nThe grep tool\n\ncodemode tool declaration:\n\
///     ```ts\ndeclare const tools: { grep(args: { [key: string]: unknown; }): Promise<string>; };\n```"));
/// assert_eq!(
///     loadout.descriptions["read"],
///     "The read tool\n\nCodemode: `tools.read(args)` resolves to a string."
/// );
/// ```
pub fn prepare_loadout<S: AsRef<str>>(
    tools: &[LoadoutTool],
    declared: &[S],
    settings: &CodemodeSettings,
) -> Loadout {
    let callable: Vec<&LoadoutTool> = tools
        .iter()
        .filter(|tool| is_callable(&tool.name, tool.exposure, tool.active))
        .collect();
    let mut descriptions = IndexMap::new();
    if settings.mode == CodemodeMode::On {
        for name in declared {
            if let Some(tool) = callable.iter().find(|tool| tool.name == name.as_ref()) {
                descriptions.insert(tool.name.clone(), describe_script_call(tool));
            }
        }
    }
    let listed: Vec<&LoadoutTool> = callable
        .iter()
        .copied()
        .filter(|tool| settings.mode == CodemodeMode::Only || tool.exposure != Exposure::Direct)
        .filter(|tool| tool.exposure != Exposure::Deferred)
        .collect();
    let hidden_declarations = match settings.mode {
        CodemodeMode::On => Vec::new(),
        CodemodeMode::Only => callable
            .iter()
            .filter(|tool| {
                tool.exposure == Exposure::Direct
                    && declared.iter().any(|name| name.as_ref() == tool.name)
            })
            .map(|tool| tool.name.clone())
            .collect(),
    };
    Loadout {
        description: codemode_description(&listed, settings),
        descriptions,
        hidden_declarations,
    }
}

struct Section {
    name: String,
    text: String,
    cost: f64,
}

struct Group<'a> {
    namespace: Option<&'a Namespace>,
    sections: Vec<Section>,
}

fn codemode_description(listed: &[&LoadoutTool], settings: &CodemodeSettings) -> String {
    let base = base_description(settings);
    if listed.is_empty() {
        return base;
    }
    let mut groups: Vec<Group<'_>> = vec![Group {
        namespace: None,
        sections: Vec::new(),
    }];
    for tool in listed {
        let declaration = codemode_declaration(
            &tool.name,
            &tool.description,
            &tool.parameters,
            tool.output_schema.as_ref(),
            &tool.guidelines,
        );
        let text = tool_section(&declaration);
        let section = Section {
            name: tool.name.clone(),
            cost: utf16_len(&text).div_ceil(CHARS_PER_TOKEN) as f64,
            text,
        };
        let index = match &tool.namespace {
            None => Some(0),
            Some(namespace) => groups.iter().position(|group| {
                group
                    .namespace
                    .is_some_and(|known| known.name == namespace.name)
            }),
        };
        match index {
            Some(index) => groups[index].sections.push(section),
            None => groups.push(Group {
                namespace: tool.namespace.as_ref(),
                sections: vec![section],
            }),
        }
    }
    groups.sort_by(|a, b| match (a.namespace, b.namespace) {
        (None, _) => Ordering::Less,
        (_, None) => Ordering::Greater,
        (Some(a), Some(b)) => locale_compare(&a.name, &b.name),
    });
    let shown = select_catalog(&groups, settings.inline_budget);
    let mut pieces = vec!["Nested tools:".to_owned()];
    for group in &groups {
        let visible: Vec<&Section> = group
            .sections
            .iter()
            .filter(|section| shown.contains(section.name.as_str()))
            .collect();
        if let Some(namespace) = group.namespace {
            let listing = if visible.len() == group.sections.len() {
                ""
            } else if visible.is_empty() {
                " (tools not listed)"
            } else {
                " (some tools not listed)"
            };
            let description = js_trim(&namespace.description);
            let description = if description.is_empty() {
                String::new()
            } else {
                format!("\n{description}")
            };
            pieces.push(format!("## {}{listing}{description}", namespace.name));
        }
        pieces.extend(visible.iter().map(|section| section.text.clone()));
    }
    format!("{base}\n\n{}", pieces.join("\n\n"))
}

/// ``### `id` (`raw name`)`` and the tool's sample.
fn tool_section(declaration: &Declaration) -> String {
    let id = to_codemode_identifier(&declaration.name);
    let heading = if id == declaration.name {
        format!("### `{id}`")
    } else {
        format!("### `{id}` (`{}`)", declaration.name)
    };
    format!("{heading}\n{}", js_trim(&render_tool_sample(declaration)))
}

/// The sections that fit the budget: each round every group places its cheapest remaining
/// section, and a group whose next section does not fit drops out.
fn select_catalog<'a>(groups: &'a [Group<'_>], budget: f64) -> IndexSet<&'a str> {
    let mut queues: Vec<Vec<&Section>> = groups
        .iter()
        .map(|group| {
            let mut queue: Vec<&Section> = group.sections.iter().collect();
            queue.sort_by(|a, b| a.cost.total_cmp(&b.cost));
            queue.reverse();
            queue
        })
        .filter(|queue| !queue.is_empty())
        .collect();
    let mut shown = IndexSet::new();
    let mut remaining = budget;
    while !queues.is_empty() {
        queues.retain_mut(|queue| {
            let Some(next) = queue.last() else {
                return false;
            };
            if next.cost > remaining {
                return false;
            }
            remaining -= next.cost;
            shown.insert(next.name.as_str());
            queue.pop();
            !queue.is_empty()
        });
    }
    shown
}

/// `localeCompare` in `en-US` as far as tool names need it: letters compare without case
/// first, punctuation before digits before letters; then lower case before upper case.
fn locale_compare(a: &str, b: &str) -> Ordering {
    let primary = |c: char| {
        if c.is_alphabetic() {
            (2, c.to_lowercase().next().unwrap_or(c))
        } else if c.is_ascii_digit() {
            (1, c)
        } else {
            (0, c)
        }
    };
    let tertiary = |c: char| (c.is_uppercase(), c);
    a.chars()
        .map(primary)
        .cmp(b.chars().map(primary))
        .then_with(|| a.chars().map(tertiary).cmp(b.chars().map(tertiary)))
}

/// A declared tool's description followed by how scripts call it.
fn describe_script_call(tool: &LoadoutTool) -> String {
    let default = json!({"type": "string"});
    let schema = tool.output_schema.as_ref().unwrap_or(&default);
    format!(
        "{}\n\nCodemode: `tools.{}(args)` resolves to {}.",
        js_trim(&tool.description),
        to_codemode_identifier(&tool.name),
        describe_output(&tool.name, schema)
    )
}

/// What a call resolves to, in one line.
fn describe_output(name: &str, schema: &Value) -> String {
    let rendered = output_type(Some(schema));
    if rendered == "string" {
        return "a string".to_owned();
    }
    if let Some(fields) =
        describe_fields(schema, schema, 1).or_else(|| describe_union_fields(schema, schema))
    {
        return format!("`{fields}`");
    }
    if !rendered.contains('\n') {
        return format!("`{rendered}`");
    }
    format!(
        "a value; `await describeTool({})` shows its type",
        js_json(&Value::String(name.to_owned()))
    )
}

/// `{ a, b?: { c }, kind: "x" }`: the field names of an object schema, `depth` levels deep.
fn describe_fields(schema: &Value, root: &Value, depth: u32) -> Option<String> {
    let resolved = follow_ref(schema, root);
    let object = resolved.as_object()?;
    if object.get("type") != Some(&Value::from("object")) {
        return None;
    }
    let properties = object.get("properties")?.as_object()?;
    let required: Vec<&str> = match object.get("required") {
        Some(Value::Array(names)) => names.iter().filter_map(Value::as_str).collect(),
        _ => Vec::new(),
    };
    let fields: Vec<String> = properties
        .iter()
        .map(|(name, field)| {
            let nested = match follow_ref(field, root).get("const") {
                Some(value) => Some(js_json(value)),
                None if depth > 0 => describe_fields(field, root, depth - 1),
                None => None,
            };
            let optional = if required.contains(&name.as_str()) {
                ""
            } else {
                "?"
            };
            match nested {
                Some(nested) => format!("{name}{optional}: {nested}"),
                None => format!("{name}{optional}"),
            }
        })
        .collect();
    Some(format!("{{ {} }}", fields.join(", ")))
}

/// The fields of each object variant of an `anyOf` / `oneOf`, joined with ` | `.
fn describe_union_fields(schema: &Value, root: &Value) -> Option<String> {
    let resolved = follow_ref(schema, root).as_object()?;
    let variants = match resolved.get("anyOf") {
        Some(Value::Null) | None => resolved.get("oneOf")?,
        Some(variants) => variants,
    };
    let variants = variants
        .as_array()
        .filter(|variants| !variants.is_empty())?;
    let described: Option<Vec<String>> = variants
        .iter()
        .map(|variant| describe_fields(variant, root, 0))
        .collect();
    described.map(|fields| fields.join(" | "))
}

/// The end of a chain of local `$ref`s, stopping at a cycle or a reference to nothing.
fn follow_ref<'a>(schema: &'a Value, root: &'a Value) -> &'a Value {
    let mut seen: Vec<*const Value> = Vec::new();
    let mut current = schema;
    while current.is_object() && !seen.contains(&std::ptr::from_ref(current)) {
        let Some(Value::String(reference)) = current.get("$ref") else {
            break;
        };
        let Some(target) = resolve_schema_ref(reference, root) else {
            break;
        };
        seen.push(std::ptr::from_ref(current));
        current = target;
    }
    current
}
