//! Calls that must not overlap, in one place: fair semaphores by key ([`Semaphores`]), of
//! which the named concurrency limits ([`ConcurrencyLimits`], a name per limit) and the file
//! mutation queue ([`FileMutationQueue`](crate::tools::FileMutationQueue), one permit per
//! file) are both made.

use std::borrow::Borrow;
use std::collections::HashMap;
use std::fmt;
use std::hash::Hash;
use std::sync::{Arc, Mutex, MutexGuard, PoisonError};

use tokio::sync::Semaphore;

use super::policy::Concurrency;

/// Fair semaphores by key: a key's semaphore is made with its permits when the key is first
/// used, and every later user of the key shares it (whatever permits it asks for). Waiters
/// get their permits in the order they asked (tokio's semaphore is FIFO).
///
/// A key is kept until [`forget_if_idle`](Self::forget_if_idle) finds nothing holding or
/// awaiting its semaphore: the named limits never call it (the permits a limit was declared
/// with must stay), the file mutation queue calls it as each operation ends (files are
/// unbounded).
pub(crate) struct Semaphores<K> {
    table: Mutex<HashMap<K, Limit>>,
}

/// One key's semaphore, and the permits it was made with.
struct Limit {
    permits: usize,
    semaphore: Arc<Semaphore>,
}

impl<K> Default for Semaphores<K> {
    fn default() -> Self {
        Semaphores {
            table: Mutex::new(HashMap::new()),
        }
    }
}

impl<K: fmt::Debug> fmt::Debug for Semaphores<K> {
    /// The keys with the permits each was made with.
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let table = self.table();
        let mut map = f.debug_map();
        for (key, limit) in table.iter() {
            map.entry(key, &limit.permits);
        }
        map.finish()
    }
}

impl<K> Semaphores<K> {
    fn table(&self) -> MutexGuard<'_, HashMap<K, Limit>> {
        // The map holds no invariant a panic could break halfway; keep using it.
        self.table.lock().unwrap_or_else(PoisonError::into_inner)
    }

    /// How many keys have a semaphore.
    #[cfg_attr(
        not(feature = "tools"),
        allow(
            dead_code,
            reason = "only the file mutation queue (feature tools) counts keys"
        )
    )]
    pub(crate) fn len(&self) -> usize {
        self.table().len()
    }
}

impl<K: Eq + Hash> Semaphores<K> {
    /// The semaphore of `key`, made with `permits` if the key has none, and the permits it
    /// was made with.
    pub(crate) fn get<Q>(&self, key: &Q, permits: usize) -> (usize, Arc<Semaphore>)
    where
        K: Borrow<Q>,
        Q: Hash + Eq + ToOwned<Owned = K> + ?Sized,
    {
        let mut table = self.table();
        // Looked up before it is inserted: a key in use costs no allocation.
        if let Some(limit) = table.get(key) {
            return (limit.permits, Arc::clone(&limit.semaphore));
        }
        let limit = table.entry(key.to_owned()).or_insert_with(|| Limit {
            permits,
            semaphore: Arc::new(Semaphore::new(permits)),
        });
        (limit.permits, Arc::clone(&limit.semaphore))
    }

    /// Forget `key` if nothing holds or awaits a permit of its semaphore any more. The
    /// caller drops its own permit (and clone) first.
    #[cfg_attr(
        not(feature = "tools"),
        allow(
            dead_code,
            reason = "only the file mutation queue (feature tools) forgets keys"
        )
    )]
    pub(crate) fn forget_if_idle<Q>(&self, key: &Q)
    where
        K: Borrow<Q>,
        Q: Hash + Eq + ?Sized,
    {
        let mut table = self.table();
        // Clones are made only under this lock, and every holder or waiter owns one (a
        // permit, an `acquire_owned` future), so a count of one (the table's own) means no
        // operation holds or awaits this key.
        if table
            .get(key)
            .is_some_and(|limit| Arc::strong_count(&limit.semaphore) == 1)
        {
            table.remove(key);
        }
    }
}

/// The named concurrency limits of an agent definition (and all its conversations): one
/// semaphore per name, made with the permits of the first tool that names it.
///
/// The [file mutation queue](crate::tools::FileMutationQueue) is the same machinery with
/// one permit per file path; a named limit caps any kind of call: database connections, a
/// rate-limited API. Give one value to several builders
/// ([`AgentBuilder::concurrency_limits`](crate::agent::AgentBuilder::concurrency_limits)) to
/// share the limits between agents.
#[derive(Clone, Default)]
pub struct ConcurrencyLimits {
    limits: Arc<Semaphores<String>>,
}

impl fmt::Debug for ConcurrencyLimits {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        fmt::Debug::fmt(&self.limits, f)
    }
}

/// Two tools name one concurrency limit with different permits.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error(
    "tool \"{tool}\" declares concurrency \"{name}:{permits}\", but the limit \"{name}\" already has {existing} permits: give every tool naming a limit the same permits"
)]
#[non_exhaustive]
pub struct ConcurrencyConflict {
    /// The tool that disagrees.
    pub tool: String,
    /// The limit's name.
    pub name: String,
    /// The permits the tool declares.
    pub permits: usize,
    /// The permits the limit has.
    pub existing: usize,
}

impl ConcurrencyLimits {
    /// No limits yet.
    pub fn new() -> Self {
        ConcurrencyLimits::default()
    }

    /// Make the limit `tool`'s policy names, or check it agrees with the one there.
    ///
    /// # Errors
    /// The limit exists with other permits.
    pub(crate) fn declare(
        &self,
        tool: &str,
        limit: &Concurrency,
    ) -> Result<(), ConcurrencyConflict> {
        let (existing, _) = self.limits.get(&*limit.name, limit.permits);
        if existing == limit.permits {
            Ok(())
        } else {
            Err(ConcurrencyConflict {
                tool: tool.to_owned(),
                name: limit.name.clone().into_owned(),
                permits: limit.permits,
                existing,
            })
        }
    }

    /// The semaphore of `limit` (made on first use: a tool registered after `build()` may
    /// name a new limit).
    pub(crate) fn semaphore(&self, limit: &Concurrency) -> Arc<Semaphore> {
        self.limits.get(&*limit.name, limit.permits).1
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[tokio::test]
    async fn a_key_is_forgotten_only_once_nothing_holds_or_awaits_it() {
        let semaphores = Semaphores::<String>::default();
        let (permits, semaphore) = semaphores.get("a", 1);
        let held = Arc::clone(&semaphore)
            .acquire_owned()
            .await
            .expect("never closed");
        let (again, _) = semaphores.get("a", 5);
        assert_eq!((permits, again), (1, 1), "the first permits stay");
        drop(semaphore);
        semaphores.forget_if_idle("a");
        assert_eq!(semaphores.len(), 1, "a permit is held");
        drop(held);
        semaphores.forget_if_idle("a");
        assert_eq!(semaphores.len(), 0);
    }
}
