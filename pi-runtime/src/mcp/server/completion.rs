//! `completion/complete`: candidates for a prompt's argument or a resource template's
//! variable as a client types it.

use std::fmt;
use std::sync::Arc;

use rmcp::model::{CompleteResult, CompletionInfo};

/// At most this many values go in one answer (the protocol's limit); `hasMore` says there
/// were more.
const MAX_VALUES: usize = CompletionInfo::MAX_VALUES;

/// Candidates for what was typed so far, best first.
type Complete = dyn Fn(&str) -> Vec<String> + Send + Sync;

/// Suggests values for one argument from what was typed so far.
#[derive(Clone)]
pub(crate) struct Completer(Arc<Complete>);

impl fmt::Debug for Completer {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("Completer")
    }
}

impl Completer {
    pub(crate) fn new(complete: impl Fn(&str) -> Vec<String> + Send + Sync + 'static) -> Self {
        Completer(Arc::new(complete))
    }

    /// The answer for `typed`: the first values, how many there were, whether more.
    pub(crate) fn complete(&self, typed: &str) -> CompleteResult {
        let mut values = (self.0)(typed);
        let total = values.len();
        values.truncate(MAX_VALUES);
        let mut info = CompletionInfo::default();
        info.has_more = Some(total > values.len());
        info.total = u32::try_from(total).ok();
        info.values = values;
        CompleteResult::new(info)
    }
}
