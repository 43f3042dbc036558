//! Subscribers and event streams of a conversation's events.

use std::future::Future;
use std::sync::Arc;

use futures::future::BoxFuture;

use crate::agent::AgentEvent;
use crate::agent::sink::{EventStream, Listener, SubscriptionId};

use super::Agent;

impl Agent {
    /// Call `listener` for every event, in order, before the run goes on. For listeners that
    /// print, log or collect; see [`subscribe`](Self::subscribe) for one that awaits.
    ///
    /// ```
    /// use std::sync::{Arc, Mutex};
    ///
    /// use pi_runtime::agent::{Agent, AgentEvent};
    /// use pi_runtime::provider::faux::{FauxModel, FauxResponse};
    ///
    /// # #[tokio::main(flavor = "current_thread")] async fn main() -> Result<(), Box<dyn std::error::Error>> {
    /// let agent = Agent::builder().model(FauxModel::new().respond(FauxResponse::text("hi"))).build()?;
    /// let kinds = Arc::new(Mutex::new(Vec::new()));
    /// let seen = Arc::clone(&kinds);
    /// agent.on_event(move |event: &AgentEvent| {
    ///     if !matches!(event, AgentEvent::MessageUpdate { .. }) {
    ///         seen.lock().unwrap().push(serde_json::to_value(event).unwrap()["type"].clone());
    ///     }
    /// });
    /// agent.prompt("hello").await?;
    /// let kinds = kinds.lock().unwrap();
    /// assert_eq!((kinds.len(), &kinds[0], &kinds[7]), (8, &"agent_start".into(), &"agent_end".into()));
    /// # Ok(()) }
    /// ```
    pub fn on_event<F>(&self, listener: F) -> SubscriptionId
    where
        F: Fn(&AgentEvent) + Send + Sync + 'static,
    {
        self.shared
            .bus
            .subscribe(Listener::Sync(Arc::new(listener)))
    }

    /// Call `listener` for every event, in order, and await each call's future before the
    /// run goes on (so a listener may apply back-pressure). The event is shared, so the
    /// obvious closure works:
    ///
    /// ```
    /// use pi_runtime::agent::Agent;
    /// use pi_runtime::provider::faux::{FauxModel, FauxResponse};
    ///
    /// # #[tokio::main(flavor = "current_thread")] async fn main() -> Result<(), Box<dyn std::error::Error>> {
    /// let agent = Agent::builder().model(FauxModel::new().respond(FauxResponse::text("hi"))).build()?;
    /// agent.subscribe(|event| async move {
    ///     tokio::task::yield_now().await; // a slow consumer: the run waits for it
    ///     println!("{}", serde_json::to_string(&*event).unwrap_or_default());
    /// });
    /// agent.prompt("hello").await?;
    /// # Ok(()) }
    /// ```
    pub fn subscribe<F, Fut>(&self, listener: F) -> SubscriptionId
    where
        F: Fn(Arc<AgentEvent>) -> Fut + Send + Sync + 'static,
        Fut: Future<Output = ()> + Send + 'static,
    {
        let listener = move |event| -> BoxFuture<'static, ()> { Box::pin(listener(event)) };
        self.shared
            .bus
            .subscribe(Listener::Async(Arc::new(listener)))
    }

    /// Remove a subscription; `false` if it was already gone.
    pub fn unsubscribe(&self, id: SubscriptionId) -> bool {
        self.shared.bus.unsubscribe(id)
    }

    /// Every event from now on, as a stream. The run never waits for it; a reader that
    /// falls far behind misses only `message_update` events, whose changes the next one's
    /// live message shows (see [`EventStream`]).
    pub fn events(&self) -> EventStream {
        self.shared.bus.stream()
    }
}
