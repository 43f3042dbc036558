//! `tool_search` under queries and tool sets built to make it slow or its result large: a
//! query of many distinct words, a query past the length limit, descriptions of megabytes.
//! Each case runs under a time bound and, where it is about cost, a peak-memory bound.

use std::time::{Duration, Instant};

use pi_runtime::tool::Exposure;
use pi_runtime::tool_search::{MAX_QUERY_CHARS, MAX_SUMMARY_CHARS, ToolSearch};
use serde_json::{Value, json};

use crate::memory_support::{measured, peak_rss};

/// The most a test here may grow the peak memory of the process: an index of a few hundred
/// tools and a query of a megabyte or two, with their words.
const SMALL_PEAK: u64 = 64 << 20;

fn schema() -> Value {
    json!({"type": "object", "properties": {}})
}

/// `count` deferred tools `svc__w<i>`, described as `Does w<i> things.`.
fn tools(count: usize) -> ToolSearch {
    let schema = schema();
    let tools: Vec<(String, String)> = (0..count)
        .map(|i| (format!("svc__w{i}"), format!("Does w{i} things.")))
        .collect();
    ToolSearch::new(tools.iter().map(|(name, description)| {
        (
            name.as_str(),
            description.as_str(),
            &schema,
            Exposure::Deferred,
            None,
        )
    }))
}

/// Seen before the fix: each word of a query was compared with every distinct word before
/// it, so 100,000 distinct words took 19 s of a thread (50,000: 3.9 s); and each scoring
/// tool compared its name's words with every query word.
#[tokio::test]
async fn a_query_of_many_distinct_words_ranks_in_linear_time() {
    let _alone = measured().await;
    let search = tools(500);
    let query: String = (0..100_000).map(|i| format!("w{i} ")).collect();
    let peak = peak_rss();
    let started = Instant::now();
    let found = search.search(&query, 3, &[""; 0]);
    let took = started.elapsed();
    let grown = peak_rss().saturating_sub(peak);
    eprintln!("100,000 words: {took:?}; peak +{} KB", grown >> 10);
    // Every tool matches one word with its name and text; ties keep the tools' order.
    let names: Vec<&str> = found.iter().map(|m| m.name.as_str()).collect();
    assert_eq!(names, ["svc__w0", "svc__w1", "svc__w2"]);
    assert!(took < Duration::from_secs(5), "{took:?}");
    assert!(grown < SMALL_PEAK, "peak memory grew by {grown} bytes");
}

#[test]
fn a_call_with_a_query_past_the_limit_fails_with_a_clear_error() {
    let search = tools(3);
    let at_limit = "w1 ".repeat(MAX_QUERY_CHARS / 3) + "w";
    assert_eq!(at_limit.chars().count(), MAX_QUERY_CHARS);
    let output = search
        .call(&json!({"query": at_limit}), &[""; 0])
        .expect("a query at the limit is searched");
    assert_eq!(output.loaded().collect::<Vec<_>>(), ["svc__w1"]);
    // Counted in characters, not bytes: 1,000 of `é` are 2,000 bytes and still allowed.
    let accented = "é".repeat(MAX_QUERY_CHARS);
    assert!(search.call(&json!({"query": accented}), &[""; 0]).is_ok());

    let started = Instant::now();
    let long: String = (0..100_000).map(|i| format!("w{i} ")).collect();
    let error = search
        .call(&json!({ "query": long }), &[""; 0])
        .expect_err("too long");
    assert_eq!(
        error.to_string(),
        "query must be at most 1000 characters; this one has 688890"
    );
    assert!(started.elapsed() < Duration::from_secs(2));
}

/// Seen before the fix: the result repeated the whole first line of each loaded tool's
/// description (8.4 MB in one result).
#[tokio::test]
async fn a_result_cuts_long_summaries_and_bounds_its_text() {
    let _alone = measured().await;
    let peak = peak_rss();
    let schema = schema();
    let huge = format!("Huge {}", "x".repeat(2 << 20));
    let long: String = "y".repeat(2_000);
    let mut tools = vec![("huge_tool".to_owned(), huge.clone())];
    tools.extend((0..1_000).map(|i| (format!("many_tool_{i}"), format!("Many {long}"))));
    let started = Instant::now();
    let search = ToolSearch::new(tools.iter().map(|(name, description)| {
        (
            name.as_str(),
            description.as_str(),
            &schema,
            Exposure::Deferred,
            None,
        )
    }));

    let output = search
        .call(&json!({"query": "huge"}), &[""; 0])
        .expect("a valid call");
    let cut = format!("Huge {}…", "x".repeat(MAX_SUMMARY_CHARS - 5));
    assert_eq!(
        output.text,
        format!("Loaded 1 tool. They are available from your next call:\n- huge_tool: {cut}")
    );

    // Every tool loaded at once: summaries until the text reaches 32 KiB, names after.
    let output = search
        .call(&json!({"query": "many", "limit": 10_000}), &[""; 0])
        .expect("a valid call");
    assert_eq!(output.matches.len(), 1_000);
    let lines: Vec<&str> = output.text.lines().collect();
    assert_eq!(
        lines[0],
        "Loaded 1000 tools. They are available from your next call:"
    );
    let summary = format!("Many {}…", "y".repeat(MAX_SUMMARY_CHARS - 5));
    assert_eq!(lines[1], format!("- many_tool_0: {summary}"));
    let with_summary = lines.iter().filter(|line| line.contains(": Many")).count();
    assert_eq!(with_summary, 63, "32 KiB of lines of about 520 bytes");
    assert_eq!(lines[1_000], "- many_tool_999");
    assert!(output.text.len() < 64 * 1024, "{}", output.text.len());
    drop((search, tools, huge));
    let took = started.elapsed();
    let grown = peak_rss().saturating_sub(peak);
    eprintln!("summaries: {took:?}; peak +{} KB", grown >> 10);
    assert!(took < Duration::from_secs(10), "{took:?}");
    // The 2 MB description and the 2 MB of others, with their words, while indexing.
    assert!(grown < 4 * SMALL_PEAK, "peak memory grew by {grown} bytes");
}
