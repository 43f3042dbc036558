//! Fixed bearer tokens for service-to-service use, compared in constant time.

use std::fmt;
use std::io;
use std::path::Path;

use futures::future::BoxFuture;
use sha2::{Digest, Sha256};
use subtle::ConstantTimeEq;

use super::{Principal, TokenError, TokenVerifier};

/// The shortest token [`StaticTokens::from_file`] takes: 16 characters, some 96 bits of a
/// random base64 string.
pub const MIN_TOKEN_LENGTH: usize = 16;

/// A fixed set of bearer tokens, each standing for a [`Principal`].
///
/// Tokens are kept as SHA-256 digests, and a presented token is compared with every one of
/// them in constant time, so neither the answer's timing nor a memory dump gives a token away.
///
/// ```
/// use pi_runtime::mcp::auth::{Principal, StaticTokens, TokenVerifier};
///
/// # #[tokio::main(flavor = "current_thread")]
/// # async fn main() {
/// let tokens = StaticTokens::new()
///     .with_token("4f9c2d7e1b8a6053", Principal::new("reports").with_scopes(["read"]));
/// let principal = tokens.verify("4f9c2d7e1b8a6053").await.expect("a known token");
/// assert_eq!(principal.subject, "reports");
/// assert!(tokens.verify("guess").await.is_err());
/// # }
/// ```
#[derive(Clone, Default)]
pub struct StaticTokens {
    tokens: Vec<([u8; 32], Principal)>,
}

impl fmt::Debug for StaticTokens {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        // The digests stay out of logs too.
        f.debug_struct("StaticTokens")
            .field("tokens", &self.tokens.len())
            .finish()
    }
}

impl StaticTokens {
    /// No tokens: every request is refused.
    pub fn new() -> Self {
        StaticTokens::default()
    }

    /// `token` added, standing for `principal`.
    #[must_use]
    pub fn with_token(mut self, token: impl AsRef<str>, principal: Principal) -> Self {
        self.tokens.push((digest(token.as_ref()), principal));
        self
    }

    /// The tokens of a file, one a line: the token, then optionally the scopes it grants,
    /// separated by spaces. Blank lines and lines starting with `#` are skipped. The token on
    /// line `n` stands for the subject `token-<n>`.
    ///
    /// # Errors
    /// The file cannot be read, has no token, or has a token shorter than
    /// [`MIN_TOKEN_LENGTH`] (named by its line, never shown).
    pub fn from_file(path: impl AsRef<Path>) -> io::Result<Self> {
        let path = path.as_ref();
        let text = std::fs::read_to_string(path)?;
        let mut tokens = StaticTokens::new();
        for (index, line) in text.lines().enumerate() {
            let line = line.trim();
            if line.is_empty() || line.starts_with('#') {
                continue;
            }
            let mut words = line.split_whitespace();
            let Some(token) = words.next() else { continue };
            let number = index + 1;
            if token.chars().count() < MIN_TOKEN_LENGTH {
                return Err(io::Error::new(
                    io::ErrorKind::InvalidData,
                    format!(
                        "{}:{number}: the token is shorter than {MIN_TOKEN_LENGTH} characters",
                        path.display()
                    ),
                ));
            }
            let principal = Principal::new(format!("token-{number}")).with_scopes(words);
            tokens = tokens.with_token(token, principal);
        }
        if tokens.tokens.is_empty() {
            return Err(io::Error::new(
                io::ErrorKind::InvalidData,
                format!("{} has no token", path.display()),
            ));
        }
        Ok(tokens)
    }

    fn find(&self, token: &str) -> Option<&Principal> {
        let presented = digest(token);
        // Every entry is compared, whichever matches.
        let mut found = None;
        for (known, principal) in &self.tokens {
            if bool::from(known.ct_eq(&presented)) {
                found = Some(principal);
            }
        }
        found
    }
}

impl TokenVerifier for StaticTokens {
    fn verify<'a>(&'a self, token: &'a str) -> BoxFuture<'a, Result<Principal, TokenError>> {
        let found = self.find(token).cloned().ok_or(TokenError::Unknown);
        Box::pin(std::future::ready(found))
    }
}

fn digest(token: &str) -> [u8; 32] {
    Sha256::digest(token.as_bytes()).into()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_file_gives_each_token_its_line_and_scopes() {
        let dir = tempfile::tempdir().expect("a temp dir");
        let path = dir.path().join("tokens");
        std::fs::write(
            &path,
            "# service tokens\n\n0123456789abcdef read write\nfedcba9876543210\n",
        )
        .expect("written");
        let tokens = StaticTokens::from_file(&path).expect("tokens");
        assert_eq!(
            tokens.find("0123456789abcdef"),
            Some(&Principal::new("token-3").with_scopes(["read", "write"]))
        );
        assert_eq!(
            tokens.find("fedcba9876543210"),
            Some(&Principal::new("token-4"))
        );
        assert_eq!(tokens.find("0123456789abcde"), None);
        assert_eq!(format!("{tokens:?}"), "StaticTokens { tokens: 2 }");
    }

    #[test]
    fn a_file_with_a_short_token_or_none_is_refused() {
        let dir = tempfile::tempdir().expect("a temp dir");
        let path = dir.path().join("tokens");
        std::fs::write(&path, "0123456789abcdef\nshort read\n").expect("written");
        let error = StaticTokens::from_file(&path).expect_err("refused");
        assert_eq!(
            error.to_string(),
            format!(
                "{}:2: the token is shorter than 16 characters",
                path.display()
            )
        );
        std::fs::write(&path, "# nothing\n").expect("written");
        let error = StaticTokens::from_file(&path).expect_err("refused");
        assert_eq!(
            error.to_string(),
            format!("{} has no token", path.display())
        );
    }
}
