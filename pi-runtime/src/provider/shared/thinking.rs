//! Reasoning levels a model supports, clamping a requested level to one of them, and the
//! token budgets of budget-based thinking (pi's `clampThinkingLevel` and `simple-options`).

use serde_json::Value;

use crate::provider::Model;
use crate::stream::{StreamOptions, ThinkingLevel};

/// Every level, weakest first: clamping walks this order.
const LEVELS: [ThinkingLevel; 7] = [
    ThinkingLevel::Off,
    ThinkingLevel::Minimal,
    ThinkingLevel::Low,
    ThinkingLevel::Medium,
    ThinkingLevel::High,
    ThinkingLevel::Xhigh,
    ThinkingLevel::Max,
];

/// Tokens always left for the answer when a thinking budget shares the output ceiling.
pub(crate) const MIN_ANSWER_TOKENS: u32 = 1024;

/// The wire name of a level (`xhigh`, ...).
pub(crate) fn name(level: ThinkingLevel) -> &'static str {
    match level {
        ThinkingLevel::Off => "off",
        ThinkingLevel::Minimal => "minimal",
        ThinkingLevel::Low => "low",
        ThinkingLevel::Medium => "medium",
        ThinkingLevel::High => "high",
        ThinkingLevel::Xhigh => "xhigh",
        ThinkingLevel::Max => "max",
    }
}

/// What a model's `thinkingLevelMap` says about one level.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Mapped<'a> {
    /// No entry: the level keeps its own name.
    Unset,
    /// `null`: the model does not support the level.
    Unsupported,
    /// The provider's name for the level.
    To(&'a str),
}

/// Look `level` up in the model's `thinkingLevelMap`.
pub(crate) fn mapped(model: &Model, level: ThinkingLevel) -> Mapped<'_> {
    let entry = model
        .compat
        .thinking_level_map
        .as_ref()
        .and_then(|map| map.get(name(level)));
    match entry {
        None => Mapped::Unset,
        Some(Value::Null) => Mapped::Unsupported,
        Some(Value::String(to)) => Mapped::To(to),
        // Not a name pi could send either; the level keeps its own name.
        Some(_) => Mapped::Unset,
    }
}

/// The provider's name for `level`: the map's entry, else the level's own name.
pub(crate) fn provider_name(model: &Model, level: ThinkingLevel) -> &str {
    match mapped(model, level) {
        Mapped::To(to) => to,
        Mapped::Unset | Mapped::Unsupported => name(level),
    }
}

/// Whether the model offers `level`. `xhigh` and `max` exist only where the map names them.
fn supports(model: &Model, level: ThinkingLevel) -> bool {
    if !model.reasoning {
        return level == ThinkingLevel::Off;
    }
    match mapped(model, level) {
        Mapped::Unsupported => false,
        Mapped::Unset => !matches!(level, ThinkingLevel::Xhigh | ThinkingLevel::Max),
        Mapped::To(_) => true,
    }
}

/// Clamp a requested level to one the model supports: the level itself, else the next
/// stronger supported level, else the next weaker one (as pi does for DeepSeek).
pub(crate) fn clamp(model: &Model, level: ThinkingLevel) -> ThinkingLevel {
    if supports(model, level) {
        return level;
    }
    let index = LEVELS.iter().position(|&l| l == level).unwrap_or(0);
    let stronger = LEVELS[index..].iter();
    let weaker = LEVELS[..index].iter().rev();
    stronger
        .chain(weaker)
        .copied()
        .find(|&l| supports(model, l))
        .unwrap_or(ThinkingLevel::Off)
}

/// The requested level, clamped, or `None` when the request does not reason.
pub(crate) fn effort(model: &Model, options: &StreamOptions) -> Option<ThinkingLevel> {
    let requested = options.reasoning.filter(|&l| l != ThinkingLevel::Off)?;
    Some(clamp(model, requested)).filter(|&l| l != ThinkingLevel::Off)
}

/// The requested level, unclamped (`Off` counts as none).
pub(crate) fn requested(options: &StreamOptions) -> Option<ThinkingLevel> {
    options.reasoning.filter(|&l| l != ThinkingLevel::Off)
}

/// The default thinking budget of a level (`xhigh` and `max` count as `high`).
pub(crate) fn default_budget(level: ThinkingLevel) -> u32 {
    match level {
        ThinkingLevel::Off | ThinkingLevel::Minimal => 1024,
        ThinkingLevel::Low => 2048,
        ThinkingLevel::Medium => 8192,
        ThinkingLevel::High | ThinkingLevel::Xhigh | ThinkingLevel::Max => 16384,
    }
}

/// Output limit and thinking budget when both share one ceiling: the budget is added to the
/// requested limit (capped by the model's), and cut so that [`MIN_ANSWER_TOKENS`] remain.
pub(crate) fn max_tokens_with_thinking(
    requested_max: u32,
    model_max: u32,
    level: ThinkingLevel,
) -> (u32, u32) {
    let budget = default_budget(level);
    let max_tokens = requested_max.saturating_add(budget).min(model_max);
    let budget = if max_tokens <= budget {
        budget.min(max_tokens.saturating_sub(MIN_ANSWER_TOKENS))
    } else {
        budget
    };
    (max_tokens, budget)
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;
    use crate::provider::{Api, Compat};

    fn model(reasoning: bool, map: Option<Value>) -> Model {
        Model {
            id: "m".into(),
            provider: "p".into(),
            api: Api::OpenAiCompletions,
            base_url: String::new(),
            reasoning,
            supports_images: false,
            max_tokens: 8192,
            context_window: 128_000,
            compat: Compat {
                thinking_level_map: map.and_then(|m| m.as_object().cloned()),
                ..Compat::default()
            },
        }
    }

    #[test]
    fn v4_pro_map_clamps_up_then_down() {
        let m = model(
            true,
            Some(json!({"minimal":null,"low":null,"medium":null,"high":"high","max":"max"})),
        );
        for (from, to) in [
            (ThinkingLevel::Minimal, ThinkingLevel::High),
            (ThinkingLevel::Low, ThinkingLevel::High),
            (ThinkingLevel::Medium, ThinkingLevel::High),
            (ThinkingLevel::High, ThinkingLevel::High),
            (ThinkingLevel::Xhigh, ThinkingLevel::Max),
            (ThinkingLevel::Max, ThinkingLevel::Max),
        ] {
            assert_eq!(clamp(&m, from), to, "{from:?}");
        }
    }

    #[test]
    fn without_map_xhigh_falls_back_to_high() {
        let m = model(true, None);
        assert_eq!(clamp(&m, ThinkingLevel::Xhigh), ThinkingLevel::High);
        assert_eq!(clamp(&m, ThinkingLevel::Minimal), ThinkingLevel::Minimal);
    }

    #[test]
    fn a_model_that_does_not_reason_never_reasons() {
        let m = model(false, None);
        let options = StreamOptions {
            reasoning: Some(ThinkingLevel::High),
            ..StreamOptions::default()
        };
        assert_eq!(effort(&m, &options), None);
    }

    #[test]
    fn budget_is_cut_to_leave_room_for_the_answer() {
        assert_eq!(
            max_tokens_with_thinking(4096, 8192, ThinkingLevel::Medium),
            (8192, 7168)
        );
        assert_eq!(
            max_tokens_with_thinking(1000, 64000, ThinkingLevel::Low),
            (3048, 2048)
        );
    }
}
