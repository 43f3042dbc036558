//! An error with its causes, for texts a user or a model reads: reqwest's own text
//! (`error sending request`) hides the reason, which is in its sources.

/// `error: its source: …`, leaving out a cause whose text the ones before already show.
pub(crate) fn chain(error: &dyn std::error::Error) -> String {
    let mut text = error.to_string();
    let mut source = error.source();
    while let Some(cause) = source {
        let cause_text = cause.to_string();
        if !text.contains(&cause_text) {
            text.push_str(": ");
            text.push_str(&cause_text);
        }
        source = cause.source();
    }
    text
}
