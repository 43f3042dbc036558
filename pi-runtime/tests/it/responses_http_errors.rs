//! An OpenAI Responses request answered with an error status, over loopback HTTP to the real
//! client: the response ends with a single `error` event and pi's text for the server's
//! answer, `<Name> API error (<status>): <text>` (SPEC §7.7 "HTTP errors"), whatever the body
//! is (a JSON error object, JSON without one, plain text, HTML, nothing). A recorded copy of
//! the same response, replayed with its status and type, reads the same.

use crate::provider_support;

use futures::StreamExt as _;
use pi_runtime::provider::Api;
use pi_runtime::provider::http::HttpModel;
use pi_runtime::{AssistantMessageEvent, LanguageModel, StopReason, StreamOptions};
use provider_support::{
    Reply, Server, collect, context, final_message, model, options, quick_retries, trace,
};

const JSON: &str = "application/json";
const TEXT: &str = "text/plain";
const HTML: &str = "text/html";

/// One error response and the `errorMessage` pi gives it.
struct Case {
    provider: &'static str,
    status: u16,
    content_type: &'static str,
    body: &'static str,
    message: &'static str,
}

const CASES: &[Case] = &[
    // A JSON body with an `error` object: that object, as compact JSON, in its key order.
    Case {
        provider: "openai",
        status: 400,
        content_type: JSON,
        body: r#"{"error": {"message": "Invalid 'input[2].encrypted_content'.", "type": "invalid_request_error", "param": "input", "code": null}}"#,
        message: r#"OpenAI API error (400): {"message":"Invalid 'input[2].encrypted_content'.","type":"invalid_request_error","param":"input","code":null}"#,
    },
    // Another provider is named by its id.
    Case {
        provider: "azure-openai",
        status: 429,
        content_type: JSON,
        body: r#"{"error":{"message":"Rate limit reached","type":"requests"}}"#,
        message: r#"azure-openai API error (429): {"message":"Rate limit reached","type":"requests"}"#,
    },
    // An error object without a message: the SDK's own message already shows it.
    Case {
        provider: "openai",
        status: 401,
        content_type: JSON,
        body: r#"{"error":{"code":"invalid_api_key","type":"auth"}}"#,
        message: r#"OpenAI API error (401): 401 {"code":"invalid_api_key","type":"auth"}"#,
    },
    // JSON without an `error` member is the error itself.
    Case {
        provider: "openai",
        status: 404,
        content_type: JSON,
        body: r#"{"detail":"Not found"}"#,
        message: r#"OpenAI API error (404): 404 {"detail":"Not found"}"#,
    },
    // Plain text: `<status> <body>`, as the server sent it.
    Case {
        provider: "openai",
        status: 500,
        content_type: TEXT,
        body: "Internal failure\n",
        message: "OpenAI API error (500): 500 Internal failure\n",
    },
    Case {
        provider: "openai",
        status: 502,
        content_type: HTML,
        body: "<html><body>Bad gateway</body></html>",
        message: "OpenAI API error (502): 502 <html><body>Bad gateway</body></html>",
    },
    Case {
        provider: "openai",
        status: 503,
        content_type: TEXT,
        body: "",
        message: "OpenAI API error (503): 503 status code (no body)",
    },
    // A ChatGPT plan's usage limit: pi adds where to look.
    Case {
        provider: "openai",
        status: 429,
        content_type: JSON,
        body: r#"{"error":{"code":"subscription_sharing_usage_limit_exceeded","message":"Usage limit reached"}}"#,
        message: "OpenAI API error (429): {\"code\":\"subscription_sharing_usage_limit_exceeded\",\
                  \"message\":\"Usage limit reached\"}\n\
                  Check your ChatGPT usage: https://chatgpt.com/settings/usage",
    },
];

fn client(server: &Server, provider: &str) -> HttpModel {
    HttpModel::new(
        model(Api::OpenAiResponses, provider, "gpt-5", server),
        options(),
    )
}

/// The events of one request to a server that answers `reply`.
async fn answered(provider: &str, reply: Reply) -> (Vec<AssistantMessageEvent>, Server) {
    let server = Server::start(vec![reply]).await;
    let events =
        collect(client(&server, provider).stream(context(), StreamOptions::default())).await;
    (events, server)
}

/// The request failed before any content: one `error`, no `start`, the error text.
fn assert_failed(events: &[AssistantMessageEvent], message: &str) {
    assert_eq!(trace(events), ["error"]);
    let failed = final_message(events);
    assert_eq!(failed.stop_reason, StopReason::Error);
    assert_eq!(failed.error_message.as_deref(), Some(message));
    assert!(failed.content.is_empty());
}

#[tokio::test]
async fn error_statuses_report_the_servers_text_as_pi_words_it() {
    for case in CASES {
        let reply = Reply::Status(
            case.status,
            case.body.into(),
            vec![("content-type", case.content_type)],
        );
        let (events, server) = answered(case.provider, reply).await;
        assert_failed(&events, case.message);
        assert_eq!(server.only_request().path_and_query, "/responses");
    }
}

#[tokio::test]
async fn a_recorded_error_response_reads_as_the_live_one() {
    for case in CASES {
        let server = Server::start(vec![]).await;
        let events: Vec<_> = client(&server, case.provider)
            .replay_response(case.status, case.content_type, case.body)
            .collect()
            .await;
        assert_failed(&events, case.message);
        assert!(server.requests().is_empty(), "a replay sends nothing");
    }
}

#[tokio::test]
async fn retried_statuses_say_how_many_attempts_failed() {
    let replies = vec![Reply::Status(503, "overloaded".into(), vec![]); 2];
    let server = Server::start(replies).await;
    let client = HttpModel::new(
        model(Api::OpenAiResponses, "openai", "gpt-5", &server),
        options().with_retry(quick_retries(1)),
    );
    let events = collect(client.stream(context(), StreamOptions::default())).await;
    assert_failed(
        &events,
        "OpenAI API error (503): 503 overloaded (2 attempts)",
    );
    assert_eq!(server.requests().len(), 2);
}

#[tokio::test]
async fn a_body_encoded_without_being_asked_is_not_quoted() {
    let reply = Reply::Status(
        400,
        "\u{1f}\u{8b}binary".into(),
        vec![("content-type", JSON), ("content-encoding", "gzip")],
    );
    let (events, _server) = answered("openai", reply).await;
    assert_failed(
        &events,
        "OpenAI API error (400): 400 (a gzip-encoded body, which was not asked for)",
    );
}
