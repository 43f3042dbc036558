//! Bounded quotes of what a server sent: an error message shows the start of a malformed
//! event or an error body and says how much it left out, so a 50 MB payload never becomes a
//! 50 MB `errorMessage`.

use std::fmt;

/// The most bytes of server text an error message quotes.
pub(crate) const EXCERPT_BYTES: usize = 4000;

/// `text` as an error message quotes it: whole when short, else its first
/// [`EXCERPT_BYTES`] (cut at a character boundary) and `... (N more bytes not shown)`.
pub(crate) fn excerpt(text: &str) -> Excerpt<'_> {
    Excerpt(text)
}

/// See [`excerpt`].
#[derive(Debug, Clone, Copy)]
pub(crate) struct Excerpt<'a>(&'a str);

impl fmt::Display for Excerpt<'_> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let text = self.0;
        if text.len() <= EXCERPT_BYTES {
            return f.write_str(text);
        }
        let cut = text.floor_char_boundary(EXCERPT_BYTES);
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

    #[test]
    fn short_text_is_quoted_whole() {
        assert_eq!(excerpt("{\"oops\"").to_string(), "{\"oops\"");
    }

    #[test]
    fn long_text_is_cut_at_a_character_and_counts_the_rest() {
        let text = format!("{}é{}", "a".repeat(EXCERPT_BYTES - 1), "b".repeat(10_000));
        let shown = excerpt(&text).to_string();
        // `é` straddles the limit, so the cut comes before it.
        assert_eq!(
            shown,
            format!(
                "{}... ({} more bytes not shown)",
                "a".repeat(EXCERPT_BYTES - 1),
                10_002
            )
        );
    }
}
