//! `Exposure`: where a registered tool shows up: declared to the model, callable from code
//! mode scripts, found by `tool_search`.

use serde::{Deserialize, Serialize};

/// Where a registered tool shows up. pi 1.6 names five exposures:
///
/// | exposure | declared to the model | callable from scripts | found by `tool_search` |
/// |---|---|---|---|
/// | [`Direct`](Exposure::Direct) | while active | while active | no |
/// | [`ModelOnly`](Exposure::ModelOnly) | while active | never | no |
/// | [`Codemode`](Exposure::Codemode) | only once activated | always | while not active |
/// | [`Deferred`](Exposure::Deferred) | only once activated | always | while not active |
/// | [`Hidden`](Exposure::Hidden) | never | never | no |
///
/// `Direct` and `ModelOnly` tools are active once registered; the others wait until they
/// are activated, for example by a `tool_search` match.
///
/// ```
/// use pi_runtime::tool::Exposure;
///
/// assert_eq!(Exposure::default(), Exposure::Direct);
/// assert!(Exposure::Deferred.is_searchable());
/// assert!(!Exposure::Deferred.is_active_when_registered());
/// assert_eq!(serde_json::to_string(&Exposure::ModelOnly).unwrap(), "\"model-only\"");
/// ```
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Default, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
#[non_exhaustive]
pub enum Exposure {
    /// Declared while active (active once registered), callable from scripts while active.
    #[default]
    Direct,
    /// Declared while active (active once registered), never callable from scripts.
    ModelOnly,
    /// Declared only once activated, always callable from scripts, searchable until active.
    Codemode,
    /// Declared only once activated, callable from scripts, searchable until active.
    Deferred,
    /// Registered, never declared and never callable from scripts.
    Hidden,
}

impl Exposure {
    /// Whether a tool with this exposure is active as soon as it is registered.
    pub fn is_active_when_registered(self) -> bool {
        matches!(self, Exposure::Direct | Exposure::ModelOnly)
    }

    /// Whether `tool_search` looks at a tool with this exposure (while it is not active).
    pub fn is_searchable(self) -> bool {
        matches!(self, Exposure::Codemode | Exposure::Deferred)
    }

    /// Whether activating the tool declares it to the model.
    pub fn can_be_declared(self) -> bool {
        !matches!(self, Exposure::Hidden)
    }

    /// The name pi gives this exposure: `direct`, `model-only`, `codemode`, `deferred`,
    /// `hidden`.
    pub fn as_str(self) -> &'static str {
        match self {
            Exposure::Direct => "direct",
            Exposure::ModelOnly => "model-only",
            Exposure::Codemode => "codemode",
            Exposure::Deferred => "deferred",
            Exposure::Hidden => "hidden",
        }
    }
}
