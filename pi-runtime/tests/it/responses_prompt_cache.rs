//! The prompt cache fields of an OpenAI Responses request, as the model's compat flags shape
//! them (SPEC §7.7 "Prompt caching"): `prompt_cache_key`, `prompt_cache_retention` and
//! `prompt_cache_options`, for each cache retention.

use crate::provider_support;

use pi_runtime::provider::http::HttpModel;
use pi_runtime::provider::{Api, Compat, PromptCacheKeyMode, request_body};
use pi_runtime::stream::CacheRetention;
use pi_runtime::{LanguageModel, StreamOptions};
use provider_support::{Reply, Server, collect, context, model, options, responses_sse};
use serde_json::{Value, json};

const SESSION: &str = "session-1";

/// The three fields of a request, `null` where absent.
fn cache_fields(body: &Value) -> Value {
    json!([
        body.get("prompt_cache_key"),
        body.get("prompt_cache_retention"),
        body.get("prompt_cache_options"),
    ])
}

fn compat(key: Option<PromptCacheKeyMode>, long: Option<bool>, explicit: Option<bool>) -> Compat {
    let mut compat = Compat::default();
    compat.prompt_cache_key_mode = key;
    compat.supports_long_cache_retention = long;
    compat.supports_explicit_prompt_cache_mode = explicit;
    compat
}

#[test]
fn compat_flags_shape_the_cache_fields() {
    use CacheRetention::{Long, None as Off, Short};
    use PromptCacheKeyMode::{Disabled, Enabled};
    let explicit = Some(true);
    // (key mode, long retention supported, explicit mode, retention) -> the three fields.
    let cases = [
        ((None, None, None, Short), json!([SESSION, null, null])),
        ((None, None, None, Long), json!([SESSION, "24h", null])),
        ((None, None, None, Off), json!([null, null, null])),
        (
            (Some(Enabled), None, None, Short),
            json!([SESSION, null, null]),
        ),
        // `promptCacheKeyMode: "disabled"`: never a key; the retention is unchanged.
        (
            (Some(Disabled), None, None, Short),
            json!([null, null, null]),
        ),
        (
            (Some(Disabled), None, None, Long),
            json!([null, "24h", null]),
        ),
        // `supportsLongCacheRetention: false`: long retention sends no retention field.
        (
            (None, Some(false), None, Long),
            json!([SESSION, null, null]),
        ),
        (
            (Some(Disabled), Some(false), None, Long),
            json!([null, null, null]),
        ),
        // Explicit mode: `prompt_cache_options` instead of `prompt_cache_retention`.
        (
            (None, None, explicit, Off),
            json!([null, null, {"mode": "explicit"}]),
        ),
        ((None, None, explicit, Short), json!([SESSION, null, null])),
        (
            (None, None, explicit, Long),
            json!([SESSION, null, {"ttl": "30m"}]),
        ),
        (
            (None, Some(false), explicit, Long),
            json!([SESSION, null, null]),
        ),
        (
            (Some(Disabled), None, explicit, Off),
            json!([null, null, {"mode": "explicit"}]),
        ),
    ];
    for ((key, long, explicit, retention), expected) in cases {
        let mut m = pi_runtime::provider::Model::new(
            Api::OpenAiResponses,
            "openai",
            "gpt-5",
            "http://127.0.0.1:9",
        );
        m.compat = compat(key, long, explicit);
        let options = StreamOptions::default()
            .with_session_id(SESSION)
            .with_cache_retention(retention);
        let body = request_body(&m, &context(), &options).expect("a body");
        assert_eq!(
            cache_fields(&body),
            expected,
            "{key:?} {long:?} {explicit:?} {retention:?}"
        );
    }
}

#[test]
fn compat_flags_read_as_pi_spells_them() {
    let compat: Compat = serde_json::from_value(json!({
        "promptCacheKeyMode": "disabled",
        "supportsLongCacheRetention": false,
        "supportsExplicitPromptCacheMode": true,
    }))
    .expect("compat");
    assert_eq!(
        compat,
        self::compat(Some(PromptCacheKeyMode::Disabled), Some(false), Some(true))
    );
    let unknown = serde_json::from_value::<Compat>(json!({"promptCacheKeyMode": "sometimes"}));
    assert!(unknown.is_err());
}

#[tokio::test]
async fn the_client_sends_the_fields_its_flags_allow() {
    let completed = json!({"type": "response.completed",
                           "response": {"id": "resp_1", "status": "completed"}});
    let server = Server::start(vec![Reply::Sse(responses_sse(&[completed]))]).await;
    let mut m = model(Api::OpenAiResponses, "openai", "gpt-5", &server);
    m.compat = compat(Some(PromptCacheKeyMode::Disabled), Some(false), None);
    let asked = StreamOptions::default()
        .with_session_id(SESSION)
        .with_cache_retention(CacheRetention::Long);
    collect(HttpModel::new(m, options()).stream(context(), asked)).await;
    let body = server.only_request().body;
    assert_eq!(cache_fields(&body), json!([null, null, null]));
    assert_eq!(body["store"], json!(false));
}
