//! Bounded quotes of what a server sent or a model wrote: an error message shows the start of
//! a malformed event, an error body or a call's arguments and says how much it left out, so
//! a 50 MB payload never becomes a 50 MB `errorMessage` or tool result.

use std::fmt;

/// The most bytes of server text an error message quotes.
#[cfg(feature = "http")]
pub(crate) const EXCERPT_BYTES: usize = 4000;

/// The most bytes of a call's arguments that an error result shows the model back: enough
/// for any call it can correct, bounded for a pathological one.
pub(crate) const ARGUMENTS_EXCERPT_BYTES: usize = 16 * 1024;

/// `text` as an error message quotes it: whole when short, else its first
/// [`EXCERPT_BYTES`] (cut at a character boundary) and `... (N more bytes not shown)`.
#[cfg(feature = "http")]
pub(crate) fn excerpt(text: &str) -> Excerpt<'_> {
    excerpt_within(text, EXCERPT_BYTES)
}

/// [`excerpt`] with another limit.
pub(crate) fn excerpt_within(text: &str, limit: usize) -> Excerpt<'_> {
    Excerpt { text, limit }
}

/// See [`excerpt`].
#[derive(Debug, Clone, Copy)]
pub(crate) struct Excerpt<'a> {
    text: &'a str,
    limit: usize,
}

impl fmt::Display for Excerpt<'_> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let text = self.text;
        if text.len() <= self.limit {
            return f.write_str(text);
        }
        let cut = text.floor_char_boundary(self.limit);
        write!(
            f,
            "{}... ({} more bytes not shown)",
            &text[..cut],
            text.len() - cut
        )
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const LIMIT: usize = 4000;

    #[test]
    fn short_text_is_quoted_whole() {
        assert_eq!(excerpt_within("{\"oops\"", LIMIT).to_string(), "{\"oops\"");
    }

    #[test]
    fn long_text_is_cut_at_a_character_and_counts_the_rest() {
        let text = format!("{}é{}", "a".repeat(LIMIT - 1), "b".repeat(10_000));
        let shown = excerpt_within(&text, LIMIT).to_string();
        // `é` straddles the limit, so the cut comes before it.
        assert_eq!(
            shown,
            format!(
                "{}... ({} more bytes not shown)",
                "a".repeat(LIMIT - 1),
                10_002
            )
        );
    }
}
