//! `ToolHints`: what a tool says about its own behaviour (MCP's `ToolAnnotations` hints), one
//! type for every tool: the tools we serve, the tools we list from an MCP server, and the
//! approval policies that read them ([`ToolSettings::hints`](super::ToolSettings::hints)).

use serde::ser::{Serialize, SerializeMap, Serializer};

/// Behaviour hints of a tool (MCP `ToolAnnotations`): an MCP client may show them, an
/// approval policy may read them. All are hints; `None` leaves a hint out.
///
/// ```
/// use pi_runtime::tool::ToolHints;
///
/// let hints = ToolHints::new().read_only(true).open_world(false);
/// assert_eq!(hints.read_only, Some(true));
/// ```
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
#[non_exhaustive]
pub struct ToolHints {
    /// The tool does not modify its environment.
    pub read_only: Option<bool>,
    /// The tool may destroy data.
    pub destructive: Option<bool>,
    /// Calling it twice with the same arguments does nothing more.
    pub idempotent: Option<bool>,
    /// The tool reaches outside the machine.
    pub open_world: Option<bool>,
}

impl ToolHints {
    /// No hints.
    pub const fn new() -> Self {
        ToolHints {
            read_only: None,
            destructive: None,
            idempotent: None,
            open_world: None,
        }
    }

    /// Set `readOnlyHint`.
    #[must_use]
    pub fn read_only(mut self, value: bool) -> Self {
        self.read_only = Some(value);
        self
    }

    /// Set `destructiveHint`.
    #[must_use]
    pub fn destructive(mut self, value: bool) -> Self {
        self.destructive = Some(value);
        self
    }

    /// Set `idempotentHint`.
    #[must_use]
    pub fn idempotent(mut self, value: bool) -> Self {
        self.idempotent = Some(value);
        self
    }

    /// Set `openWorldHint`.
    #[must_use]
    pub fn open_world(mut self, value: bool) -> Self {
        self.open_world = Some(value);
        self
    }
}

/// As MCP writes them: only the hints that are set.
impl Serialize for ToolHints {
    fn serialize<S: Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        let hints = [
            ("readOnlyHint", self.read_only),
            ("destructiveHint", self.destructive),
            ("idempotentHint", self.idempotent),
            ("openWorldHint", self.open_world),
        ];
        let mut map = serializer.serialize_map(None)?;
        for (key, value) in hints {
            if let Some(value) = value {
                map.serialize_entry(key, &value)?;
            }
        }
        map.end()
    }
}
