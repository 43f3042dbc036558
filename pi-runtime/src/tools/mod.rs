//! Built-in coding tools (read, write, edit, bash, as pi 1.6 has them) and the per-file
//! mutation queue.
//!
//! Each tool is an ordinary `async fn` under [`#[tool]`](macro@crate::tool) — [`read()`],
//! [`write()`], [`edit()`], [`bash()`] — taking the [`WorkingDir`] that relative paths resolve
//! against through [`State`](crate::State) (`bash` takes [`BashOptions`], which holds one).
//! The macro generates the tool types [`Read`],
//! [`Write`], [`Edit`] and [`Bash`] with pi's description, prompt snippet and guidelines, and
//! `constrainedSampling: {type: json_schema, strict: prefer}`:
//!
//! ```
//! use std::sync::Arc;
//! use pi_runtime::ToolDefinition;
//! use pi_runtime::tools::{Bash, Edit, Read, WorkingDir, Write};
//!
//! let cwd = WorkingDir::from(std::env::temp_dir());
//! let tools: Vec<Arc<dyn ToolDefinition>> = vec![
//!     Arc::new(Read::new(cwd.clone())),
//!     Arc::new(Bash::new(cwd.clone().into())),
//!     Arc::new(Edit::new(cwd.clone())),
//!     Arc::new(Write::new(cwd)),
//! ];
//! let prompt = pi_runtime::prompt::tool_section(&tools, &[]);
//! assert!(prompt.contains("- edit: Edit files via targeted text replacements"));
//! ```
//!
//! The schemas equal pi's as JSON values. Two differences in how they serialise: objects are
//! open (`closed = false`: no `additionalProperties`, as in pi), and keys come in schemars'
//! order, `properties` before `required`, where pi's TypeBox writes `required` first. No
//! provider or validator reads key order. `offset`, `limit` and `timeout` are `f64` because
//! pi's schema says `number`: a model may send `1.5`, and the tools decide what that means.
//!
//! `edit` and `write` run their read-modify-write inside the [`FileMutationQueue`], so
//! parallel calls on one file apply one after another. They replace a file without changing
//! what it is: by an unnamed temporary file renamed over it, or in place when a rename would
//! split its hard links or change its owner; `edit` refuses a file that another process
//! changed since the edit read it, and one that is not UTF-8. No tool blocks on a FIFO or a
//! device: `read`, `edit` and `write` refuse anything but a regular file.

mod bash;
mod edit;
mod file;
mod journal;
mod mutation_queue;
mod path;
mod private_dir;
mod read;
mod replace;
pub mod truncate;
mod write;

pub use bash::{Bash, BashOptions, BashParams, bash};
pub use edit::{Edit, EditParams, Replacement, edit, prepare_edit_arguments};
pub use mutation_queue::{FileMutationGuard, FileMutationQueue};
pub use path::{WorkingDir, resolve_to_cwd};
pub use read::{Read, ReadParams, read};
pub use write::{Write, WriteParams, write};

/// The failure text of a tool stopped by the run's cancellation signal.
pub(crate) use crate::aborted::OPERATION_ABORTED as ABORTED;
