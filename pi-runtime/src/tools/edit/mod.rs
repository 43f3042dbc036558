//! The built-in `edit` tool: targeted replacements in one file, all or nothing,
//! inside the file's mutation queue.

mod diff;
mod engine;

use std::borrow::Cow;
use std::fs::Metadata;
use std::io;
use std::path::Path;

use serde_json::{Map, Value, json};
use tokio::fs::OpenOptions;
use tokio::io::AsyncReadExt;

pub use engine::Replacement;

use super::file::{SpecialKind, nonblocking_async, special_at, special_kind};
use super::journal;
use super::replace::{Original, ReplaceError, replace};
use super::{ABORTED, FileMutationQueue, WorkingDir, path::resolve_to_cwd};
use crate::tool;
use crate::tool::{State, ToolContext, ToolError, ToolResult};

const BOM: char = '\u{FEFF}';

/// The shape shim of `edit` (pi's), for models that send the edits in another
/// shape: `edits` as a JSON string (an array, or one `{oldText,newText}` object), `edits` as
/// one object, and the legacy top-level `oldText`/`newText` pair, appended as one more edit.
/// Anything else is returned unchanged (borrowed), for validation to report.
///
/// ```
/// use pi_runtime::tools::prepare_edit_arguments;
/// use serde_json::json;
///
/// let raw = json!({"path": "a", "oldText": "x", "newText": "y"});
/// assert_eq!(
///     *prepare_edit_arguments(&raw),
///     json!({"path": "a", "edits": [{"oldText": "x", "newText": "y"}]})
/// );
/// ```
pub fn prepare_edit_arguments(raw: &Value) -> Cow<'_, Value> {
    let Some(args) = raw.as_object() else {
        return Cow::Borrowed(raw);
    };
    let edits = match args.get("edits") {
        Some(Value::String(text)) => match serde_json::from_str::<Value>(text) {
            Ok(Value::Array(items)) => Some(Value::Array(items)),
            Ok(single) if is_single_edit(&single) => Some(Value::Array(vec![single])),
            _ => None,
        },
        Some(single) if is_single_edit(single) => Some(Value::Array(vec![single.clone()])),
        _ => None,
    };
    let legacy = match (args.get("oldText"), args.get("newText")) {
        (Some(Value::String(old)), Some(Value::String(new))) => Some((old, new)),
        _ => None,
    };
    if edits.is_none() && legacy.is_none() {
        return Cow::Borrowed(raw);
    }
    let mut out: Map<String, Value> = args.clone();
    if let Some(edits) = edits {
        out.insert("edits".into(), edits);
    }
    if let Some((old, new)) = legacy {
        let mut edits = match out.get("edits") {
            Some(Value::Array(items)) => items.clone(),
            _ => Vec::new(),
        };
        edits.push(json!({"oldText": old, "newText": new}));
        out.shift_remove("oldText");
        out.shift_remove("newText");
        out.insert("edits".into(), Value::Array(edits));
    }
    Cow::Owned(Value::Object(out))
}

/// [`prepare_edit_arguments`] in the shape `#[tool(prepare = ...)]` takes.
#[allow(
    clippy::unnecessary_wraps,
    reason = "the `prepare` hook may fail in general; this one never does"
)]
fn prepare(raw: &Value) -> Result<Cow<'_, Value>, ToolError> {
    Ok(prepare_edit_arguments(raw))
}

fn is_single_edit(value: &Value) -> bool {
    value.get("oldText").is_some_and(Value::is_string)
        && value.get("newText").is_some_and(Value::is_string)
        && value.is_object()
}

/// Targeted replacements in one file, all or nothing: the `edit` tool. Returns
/// `Successfully replaced <N> block(s) in <path>.` with `details: {diff, patch,
/// firstChangedLine}`; nothing is written on any error.
///
/// Every replacement is matched against the original file. The tool's
/// `prepare_arguments` is [`prepare_edit_arguments`], which folds the shapes models send
/// besides `edits: [...]` (such as a top-level `oldText`/`newText`) into it. Runs inside the
/// file's [`FileMutationQueue`] slot, checking the signal after each file-system step.
///
/// The file is written back only if it is still what the edit read (same inode, same
/// bytes), so a write by another process in the meantime is never lost; it keeps its hard
/// links, owner and mode, as with [`write`](super::write()). A file that is not UTF-8, or not
/// a regular file, is refused without being changed.
///
/// The prompt snippet, `Edit files via targeted text replacements`, is shorter on purpose
/// than pi 1.6.0's `Make precise file edits with exact text replacement, including multiple
/// disjoint edits in one call`.
///
/// # Errors
/// pi's model-facing texts (no edits; an empty, missing, ambiguous, overlapping or no-op
/// `oldText`; an unreadable file), `Operation aborted`, and `Could not edit file:
/// <path>. <why>.` for a file that changed meanwhile, is not UTF-8, or is not a regular file.
///
/// ```
/// use pi_runtime::tools::{Replacement, WorkingDir, edit};
/// use pi_runtime::{State, ToolContext};
///
/// # tokio::runtime::Builder::new_current_thread().enable_all().build().unwrap().block_on(async {
/// let dir = tempfile::tempdir().unwrap();
/// std::fs::write(dir.path().join("a.txt"), "alpha\nbeta\n").unwrap();
/// let edits = vec![Replacement { old_text: "beta".into(), new_text: "BETA".into() }];
/// let cwd = State(WorkingDir::from(dir.path()));
/// let result = edit(cwd, "a.txt".into(), edits, ToolContext::detached("c1")).await.unwrap();
/// assert_eq!(result.text_content(), "Successfully replaced 1 block(s) in a.txt.");
/// assert_eq!(std::fs::read_to_string(dir.path().join("a.txt")).unwrap(), "alpha\nBETA\n");
/// # });
/// ```
#[tool(
    description = "Edit a single file using exact text replacement. Every edits[].oldText must match a unique, non-overlapping region of the original file. If two changes affect the same block or nearby lines, merge them into one edit instead of emitting overlapping edits. Do not include large unchanged regions just to connect distant changes.",
    snippet = "Edit files via targeted text replacements",
    guidelines = [
        "Use edit for targeted changes. Batch changes to one file in a single call.",
        "Each edits[].oldText must exactly and uniquely match the original file. Keep matches short and non-overlapping; merge nearby changes without including large unchanged regions.",
    ],
    strict = "prefer",
    closed = false,
    prepare = prepare
)]
pub async fn edit(
    State(cwd): State<WorkingDir>,
    /// Path to the file to edit (relative or absolute)
    path: String,
    /// One or more targeted replacements. Each edit is matched against the original file, not incrementally. Do not include overlapping or nested edits. If two changes touch the same block or nearby lines, merge them into one edit instead.
    edits: Vec<Replacement>,
    ctx: ToolContext,
) -> Result<ToolResult, ToolError> {
    let signal = ctx.signal();
    if edits.is_empty() {
        return Err(ToolError::new(
            "Edit tool input is invalid. edits must contain at least one replacement.",
        ));
    }
    let absolute = resolve_to_cwd(&path, &cwd);
    let _turn = FileMutationQueue::global().lock(&absolute).await?;
    let check = || {
        if signal.is_cancelled() {
            Err(ToolError::new(ABORTED))
        } else {
            Ok(())
        }
    };
    check()?;
    let read = read_target(&absolute, &path).await;
    check()?;
    let (bytes, meta) = read?;
    let text = decode(bytes, &path)?;
    check()?;

    let count = edits.len();
    let shown = path.clone();
    let (text, applied) = tokio::task::spawn_blocking(move || {
        let applied = apply(&text, &edits, &shown);
        (text, applied)
    })
    .await
    .map_err(|error| ToolError::new(format!("edit failed: {error}")))?;
    let (contents, details) = applied?;
    check()?;
    let original = Original::new(&meta, text.into_bytes());
    replace(&absolute, contents.into_bytes(), Some(original))
        .await
        .map_err(|error| edit_error(&error, &path))?;
    check()?;
    Ok(
        ToolResult::text(format!("Successfully replaced {count} block(s) in {path}."))
            .with_details(details),
    )
}

/// Open the file for reading and writing, which checks both permissions like pi's
/// `access(R_OK | W_OK)`, without blocking on a FIFO, and read it whole.
async fn read_target(absolute: &Path, path: &str) -> Result<(Vec<u8>, Metadata), ToolError> {
    // A directory is left to the open, which reports EISDIR as pi does.
    if let Some(kind) = special_at(absolute).await
        && kind != SpecialKind::Directory
    {
        return Err(not_regular(path, kind));
    }
    journal::recover_async(absolute).await;
    let could_not = |error: io::Error| {
        ToolError::new(format!(
            "Could not edit file: {path}. {}.",
            describe_io_error(&error)
        ))
    };
    let mut file = nonblocking_async(OpenOptions::new().read(true).write(true))
        .open(absolute)
        .await
        .map_err(could_not)?;
    let meta = file.metadata().await.map_err(could_not)?;
    if let Some(kind) = special_kind(&meta) {
        return Err(not_regular(path, kind));
    }
    let mut bytes = Vec::with_capacity(usize::try_from(meta.len()).unwrap_or(0));
    file.read_to_end(&mut bytes).await.map_err(could_not)?;
    Ok((bytes, meta))
}

/// The file as text. A file that is not UTF-8 is refused: decoding it lossily would rewrite
/// every invalid byte as U+FFFD, also where no edit touched it.
fn decode(bytes: Vec<u8>, path: &str) -> Result<String, ToolError> {
    String::from_utf8(bytes).map_err(|error| {
        let at = error.utf8_error().valid_up_to();
        let byte = error.as_bytes().get(at).copied().unwrap_or_default();
        ToolError::new(format!(
            "Could not edit file: {path}. It is not valid UTF-8 (byte 0x{byte:02X} at offset {at}), and edit only rewrites UTF-8 text, so nothing was changed. Convert it to UTF-8 first (for example with iconv), or change it with bash."
        ))
    })
}

fn not_regular(path: &str, kind: SpecialKind) -> ToolError {
    ToolError::new(format!(
        "Could not edit file: {path}. It is {}, not a regular file.",
        kind.describe()
    ))
}

fn edit_error(error: &ReplaceError, path: &str) -> ToolError {
    match error {
        ReplaceError::NotRegular(kind) => not_regular(path, *kind),
        ReplaceError::Changed => ToolError::new(format!(
            "Could not edit file: {path}. It changed on disk while the edit was being made (another process wrote to it), so nothing was written. Read it again, then redo the edit."
        )),
        ReplaceError::Io { source, .. } => ToolError::new(format!(
            "Could not edit file: {path}. {}.",
            describe_io_error(source)
        )),
    }
}

/// Match, apply and diff: the new file contents and the result details.
fn apply(text: &str, edits: &[Replacement], path: &str) -> Result<(String, Value), ToolError> {
    // The model never includes the invisible BOM in oldText; it is put back on write.
    let (bom, text) = match text.strip_prefix(BOM) {
        Some(text) => (Some(BOM), text),
        None => (None, text),
    };
    let normalized = engine::normalize_to_lf(text);
    let applied = engine::apply_edits(&normalized, edits, path).map_err(ToolError::new)?;
    let details = diff::edit_diff(path, &normalized, &applied.after);
    let body = match normalized {
        Cow::Borrowed(_) => applied.after,
        Cow::Owned(_) => engine::splice_into_original(text, &applied.splices),
    };
    let contents = match bom {
        Some(bom) => format!("{bom}{body}"),
        None => body,
    };
    let details = serde_json::to_value(details).map_err(|e| ToolError::new(e.to_string()))?;
    Ok((contents, details))
}

/// `Error code: ENOENT` for an OS error, `Error: <message>` otherwise (pi's wording).
fn describe_io_error(error: &io::Error) -> String {
    match error.raw_os_error() {
        Some(code) => format!("Error code: {:?}", nix::errno::Errno::from_raw(code)),
        None => format!("Error: {error}"),
    }
}
