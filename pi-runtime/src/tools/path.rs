//! Where a tool's `path` argument points, and the directory it is relative to.

use std::ops::Deref;
use std::path::{Component, Path, PathBuf};
use std::sync::Arc;

/// The directory the built-in tools resolve relative paths against, and `bash` runs in.
///
/// Every call of a tool gets a clone of its state, so this is a shared, cheap-to-clone path.
///
/// ```
/// use std::path::Path;
/// use pi_runtime::tools::{Read, WorkingDir};
///
/// let cwd = WorkingDir::from("/work/project");
/// assert_eq!(cwd.join("src"), Path::new("/work/project/src"));
/// let read = Read::new(cwd);
/// # let _ = read;
/// ```
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub struct WorkingDir(Arc<Path>);

impl Deref for WorkingDir {
    type Target = Path;

    fn deref(&self) -> &Path {
        &self.0
    }
}

impl AsRef<Path> for WorkingDir {
    fn as_ref(&self) -> &Path {
        &self.0
    }
}

impl From<&Path> for WorkingDir {
    fn from(path: &Path) -> Self {
        WorkingDir(path.into())
    }
}

impl From<PathBuf> for WorkingDir {
    fn from(path: PathBuf) -> Self {
        WorkingDir(path.into())
    }
}

impl From<&PathBuf> for WorkingDir {
    fn from(path: &PathBuf) -> Self {
        WorkingDir(path.as_path().into())
    }
}

impl From<&str> for WorkingDir {
    fn from(path: &str) -> Self {
        WorkingDir(Path::new(path).into())
    }
}

/// Resolve a model-given path against the working directory: a leading `@` is stripped,
/// Unicode space characters become ASCII spaces, `~` and `~/…` expand to the home directory,
/// and a relative path joins `cwd`. `.` and `..` are resolved lexically, as Node's
/// `path.resolve` does; symlinks are left alone.
///
/// ```
/// use std::path::Path;
/// use pi_runtime::tools::resolve_to_cwd;
///
/// assert_eq!(resolve_to_cwd("@src/../lib.rs", Path::new("/work")), Path::new("/work/lib.rs"));
/// assert_eq!(resolve_to_cwd("my\u{A0}notes.md", Path::new("/w")), Path::new("/w/my notes.md"));
/// assert_eq!(resolve_to_cwd("/etc/hosts", Path::new("/w")), Path::new("/etc/hosts"));
/// ```
pub fn resolve_to_cwd(path: &str, cwd: &Path) -> PathBuf {
    let spaced: String = path
        .chars()
        .map(|c| if is_unicode_space(c) { ' ' } else { c })
        .collect();
    let stripped = spaced.strip_prefix('@').unwrap_or(&spaced);
    let expanded = expand_home(stripped);
    normalize(&cwd.join(expanded))
}

/// U+00A0, U+2000–U+200A, U+202F, U+205F and U+3000: spaces a model copies from rendered
/// text (macOS screenshot names use U+202F) that the file system spells as ASCII spaces.
fn is_unicode_space(c: char) -> bool {
    matches!(
        c,
        '\u{A0}' | '\u{2000}'..='\u{200A}' | '\u{202F}' | '\u{205F}' | '\u{3000}'
    )
}

fn expand_home(path: &str) -> PathBuf {
    let home = || std::env::home_dir().unwrap_or_else(|| PathBuf::from("/"));
    if path == "~" {
        home()
    } else if let Some(rest) = path.strip_prefix("~/") {
        home().join(rest)
    } else {
        PathBuf::from(path)
    }
}

/// Lexical `.`/`..` resolution; `..` at the root stays at the root.
fn normalize(path: &Path) -> PathBuf {
    let mut out = PathBuf::new();
    for component in path.components() {
        match component {
            Component::CurDir => {}
            Component::ParentDir => {
                out.pop();
            }
            other => out.push(other),
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn home_and_parent_segments() {
        let home = std::env::home_dir().unwrap_or_else(|| PathBuf::from("/"));
        assert_eq!(resolve_to_cwd("~", Path::new("/w")), home);
        assert_eq!(resolve_to_cwd("~/a/./b", Path::new("/w")), home.join("a/b"));
        assert_eq!(resolve_to_cwd("~x", Path::new("/w")), Path::new("/w/~x"));
        assert_eq!(
            resolve_to_cwd("../../../x", Path::new("/w/a")),
            Path::new("/x")
        );
        assert_eq!(
            resolve_to_cwd("a\u{3000}b", Path::new("/w")),
            Path::new("/w/a b")
        );
    }
}
