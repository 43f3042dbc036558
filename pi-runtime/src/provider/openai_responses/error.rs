//! The `errorMessage` of a response with an error status, as pi 1.6 words it for this API:
//! the OpenAI SDK's error for the status and body, shown by pi's
//! `formatProviderError` as `<Name> API error (<status>): <text>`.

use serde_json::Value;

use super::stream::is_truthy;
use crate::provider::Model;
use crate::provider::wire::{CUT_REMARK, ErrorBody};

/// The most UTF-16 code units of an error object pi shows (`MAX_PROVIDER_ERROR_BODY_CHARS`).
const MAX_BODY_UNITS: usize = 4000;

/// Texts in an error that pi follows with a hint: the usage limits of a ChatGPT plan.
const HINTS: [(&str, &str); 2] = [
    (
        "subscription_sharing_usage_limit_exceeded",
        "Check your ChatGPT usage: https://chatgpt.com/settings/usage",
    ),
    (
        "subscription_sharing_workplace_individual_usage_limit_exceeded",
        "You've reached your ChatGPT workspace's usage limit. Ask your workspace admin to \
         increase it at admin.openai.com \u{2192} Workspace \u{2192} Usage limits.",
    ),
];

/// `<Name> API error (<status>): <text>`, `<Name>` being `OpenAI` for the provider `openai`
/// and the provider id otherwise.
pub(super) fn status_error(model: &Model, status: u16, body: &ErrorBody) -> String {
    let name = match model.provider.as_str() {
        "openai" => "OpenAI",
        other => other,
    };
    let text = match body {
        ErrorBody::Text { text, cut } => {
            // The body is read as `Response.text()` reads it: without a byte order mark.
            let mut shown = shown(status, text.strip_prefix('\u{feff}').unwrap_or(text));
            if *cut {
                shown.push_str(CUT_REMARK);
            }
            shown
        }
        ErrorBody::Encoded(_) | ErrorBody::Missing => format!("{status} {}", body.quoted()),
    };
    let mut message = format!("{name} API error ({status}): {text}");
    if let Some((_, hint)) = HINTS.iter().find(|(code, _)| message.contains(code)) {
        message.push('\n');
        message.push_str(hint);
    }
    message
}

/// What pi shows of an error body: the error object's compact JSON, or else the SDK's message
/// `<status> <detail>`.
fn shown(status: u16, text: &str) -> String {
    // The SDK parses the body as JSON; a body that is not JSON, or is a falsy value
    // (`null`, `0`, `false`, `""`), is kept as text.
    let json = serde_json::from_str::<Value>(text).ok().filter(is_truthy);
    // The SDK's `error`: the body's `error` member, or the whole body when it is an object or
    // an array without one (`makeStatusError`); nothing for any other JSON value.
    let error = json.as_ref().and_then(|json| match json {
        Value::Object(_) | Value::Array(_) => match json.get("error") {
            Some(error) if !error.is_null() => Some(error),
            _ => Some(json),
        },
        _ => None,
    });
    // `APIError.makeMessage`: the error's `message`, else the error as JSON, else the text.
    let detail = match error {
        Some(error) if error.get("message").is_some_and(is_truthy) => match &error["message"] {
            Value::String(message) => Some(message.clone()),
            message => Some(compact(message)),
        },
        Some(error) if is_truthy(error) => Some(compact(error)),
        _ => Some(text)
            .filter(|_| json.is_none())
            .filter(|text| !text.is_empty())
            .map(str::to_owned),
    };
    let message = match detail {
        Some(detail) => format!("{status} {detail}"),
        None => format!("{status} status code (no body)"),
    };
    // `normalizeProviderError`: a non-empty error object is shown as its JSON, unless the
    // message already carries it.
    match error {
        Some(error @ Value::Object(object)) if !object.is_empty() => {
            let body = truncate(compact(error));
            if message.contains(&body) {
                message
            } else {
                body
            }
        }
        _ => message,
    }
}

/// `JSON.stringify(value)`.
fn compact(value: &Value) -> String {
    // Serializing a `Value` cannot fail: its keys are strings and there is no I/O.
    serde_json::to_string(value).unwrap_or_default()
}

/// pi's `truncateErrorText`: the first 4000 UTF-16 code units and how many were left out.
fn truncate(text: String) -> String {
    let units = text.encode_utf16().count();
    if units <= MAX_BODY_UNITS {
        return text;
    }
    let mut kept = 0;
    // A character that would straddle the limit is left out whole.
    let cut = text
        .char_indices()
        .find(|(_, c)| {
            kept += c.len_utf16();
            kept > MAX_BODY_UNITS
        })
        .map_or(text.len(), |(at, _)| at);
    format!(
        "{}... [truncated {} chars]",
        &text[..cut],
        units - MAX_BODY_UNITS
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn bodies_are_shown_as_the_sdk_and_pi_show_them() {
        let cases = [
            (
                r#"{"error":{"message":"bad","type":"x"}}"#,
                r#"{"message":"bad","type":"x"}"#,
            ),
            (r#"{"error":{"code":"c"}}"#, r#"400 {"code":"c"}"#),
            (r#"{"error":{}}"#, "400 {}"),
            (r#"{"error":"quota"}"#, r#"400 "quota""#),
            (r#"{"error":null,"x":1}"#, r#"400 {"error":null,"x":1}"#),
            (r#"{"error":false}"#, "400 status code (no body)"),
            (r#"{"detail":"Not found"}"#, r#"400 {"detail":"Not found"}"#),
            (
                r#"[{"error":{"message":"a"}}]"#,
                r#"400 [{"error":{"message":"a"}}]"#,
            ),
            ("null", "400 null"),
            ("0", "400 0"),
            ("5", "400 status code (no body)"),
            ("", "400 status code (no body)"),
            ("Bad gateway\n", "400 Bad gateway\n"),
        ];
        for (body, shown_as) in cases {
            assert_eq!(shown(400, body), shown_as, "{body}");
        }
    }

    #[test]
    fn long_error_objects_are_cut_at_4000_code_units() {
        let body = format!(
            r#"{{"error":{{"message":"m","detail":"{}"}}}}"#,
            "x".repeat(5000)
        );
        let shown = shown(400, &body);
        assert!(shown.ends_with("xxx... [truncated 1027 chars]"), "{shown}");
        assert_eq!(
            shown.encode_utf16().count(),
            4000 + "... [truncated 1027 chars]".len()
        );
        // A character outside the BMP is two code units and is not split.
        assert_eq!(
            truncate(format!("{}\u{1F600}", "a".repeat(3999))),
            format!("{}... [truncated 1 chars]", "a".repeat(3999))
        );
    }
}
