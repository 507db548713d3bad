//! SSE polling (SEP-1699, `[serve] sse_poll_after_ms`): on an HTTP session, the SSE stream
//! of a `tools/call` whose answer has not come after the configured time is ended with a
//! priming event (an event id and a `retry` hint); the client resumes with `GET` +
//! `Last-Event-ID` and gets what came since, up to the answer. Each resumed stream is ended
//! the same way while the call runs, so no response stays open longer than the setting —
//! what proxies with idle or total-time cuts need.
//!
//! Why not rmcp's `close_sse_stream`: rmcp drops a request's event cache the moment the
//! answer is sent, so an answer that comes between the close and the client's `GET` would be
//! lost (its resume then gets an empty stream). Here a [`Relay`] keeps draining rmcp's
//! stream for the call and keeps its events (the last [`MAX_EVENTS`]) until
//! [`KEEP_AFTER_DONE`] after the answer, so a resume finds them whenever it comes.
//! Everything else (other requests, the standalone `GET` stream, its resumption, sessions)
//! is rmcp's [`LocalSessionManager`] unchanged; a `Last-Event-ID` that names no event of a
//! relay of this session goes to rmcp, which answers an unknown or malformed one with an
//! empty stream. Relays are per session: another session's event ids are never looked up.

use futures::{Stream, StreamExt};
use rmcp::model::{ClientJsonRpcMessage, ClientRequest};
use rmcp::transport::WorkerTransport;
use rmcp::transport::common::server_side_http::{ServerSseMessage, SessionId};
use rmcp::transport::streamable_http_server::SessionManager;
use rmcp::transport::streamable_http_server::session::local::{
    LocalSessionManager, LocalSessionManagerError, LocalSessionWorker,
};
use std::collections::{HashMap, VecDeque};
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex, PoisonError};
use std::time::{Duration, Instant};
use tokio::sync::watch;

/// Events of one call kept for resumption (older ones are dropped first; the answer is the
/// last event, so it is never the one dropped).
pub(crate) const MAX_EVENTS: usize = 256;
/// How long a finished call's events stay for a late resume (rmcp's own cache keeps a
/// cancelled request's this long).
pub(crate) const KEEP_AFTER_DONE: Duration = Duration::from_secs(60);
/// The `retry` hint of the priming event that ends a stream: the answer is kept, so the
/// client may come back soon without losing anything.
pub(crate) const RETRY_HINT: Duration = Duration::from_millis(500);

/// rmcp's session manager, with the streams of long `tools/call`s ended after `poll_after`.
pub(crate) struct PollingSessions {
    inner: Arc<LocalSessionManager>,
    poll_after: Option<Duration>,
    relays: Mutex<HashMap<SessionId, Vec<Arc<Relay>>>>,
}

impl PollingSessions {
    /// Polling over `inner`'s sessions; `poll_after` `None` is rmcp's behaviour unchanged.
    pub(crate) fn new(inner: Arc<LocalSessionManager>, poll_after: Option<Duration>) -> Self {
        PollingSessions {
            inner,
            poll_after,
            relays: Mutex::default(),
        }
    }

    /// Drops the relays of finished calls past [`KEEP_AFTER_DONE`].
    fn evict(relays: &mut HashMap<SessionId, Vec<Arc<Relay>>>) {
        for list in relays.values_mut() {
            list.retain(|relay| !relay.expired());
        }
        relays.retain(|_, list| !list.is_empty());
    }

    /// The relay of this session holding the event `last_event_id`, and the position after
    /// it.
    fn find(&self, id: &SessionId, last_event_id: &str) -> Option<(Arc<Relay>, usize)> {
        let mut relays = self.relays.lock().unwrap_or_else(PoisonError::into_inner);
        Self::evict(&mut relays);
        relays.get(id)?.iter().find_map(|relay| {
            relay
                .position_after(last_event_id)
                .map(|at| (relay.clone(), at))
        })
    }
}

/// A call's events as rmcp sends them, kept for its streams (the `POST`'s and resumptions).
pub(crate) struct Relay {
    /// Unique in the process: part of the ids of the priming events it adds, so two calls'
    /// ids never collide even before rmcp's first event (with its own unique id) arrives.
    number: u64,
    state: Mutex<RelayState>,
    /// Ticks on every new event and at the end.
    changed: watch::Sender<()>,
}

struct RelayState {
    events: VecDeque<ServerSseMessage>,
    /// Events dropped from the front (positions are absolute).
    dropped: usize,
    /// When rmcp's stream ended (the answer was sent, or the session closed).
    done_at: Option<Instant>,
    /// Priming events this relay added (numbers their ids).
    primings: usize,
}

impl Relay {
    /// Starts draining `stream` into a new relay.
    fn start(stream: impl Stream<Item = ServerSseMessage> + Send + 'static) -> Arc<Relay> {
        static NUMBERS: AtomicU64 = AtomicU64::new(0);
        let (changed, _) = watch::channel(());
        let relay = Arc::new(Relay {
            number: NUMBERS.fetch_add(1, Ordering::Relaxed),
            state: Mutex::new(RelayState {
                events: VecDeque::new(),
                dropped: 0,
                done_at: None,
                primings: 0,
            }),
            changed,
        });
        let pump = relay.clone();
        tokio::spawn(async move {
            let mut stream = std::pin::pin!(stream);
            while let Some(event) = stream.next().await {
                pump.with_state(|state| {
                    if state.events.len() >= MAX_EVENTS {
                        state.events.pop_front();
                        state.dropped += 1;
                    }
                    state.events.push_back(event);
                });
                pump.changed.send_replace(());
            }
            pump.with_state(|state| state.done_at = Some(Instant::now()));
            pump.changed.send_replace(());
        });
        relay
    }

    fn with_state<T>(&self, f: impl FnOnce(&mut RelayState) -> T) -> T {
        f(&mut self.state.lock().unwrap_or_else(PoisonError::into_inner))
    }

    fn expired(&self) -> bool {
        self.with_state(|s| s.done_at.is_some_and(|at| at.elapsed() >= KEEP_AFTER_DONE))
    }

    /// The absolute position after the kept event whose id is `event_id`.
    fn position_after(&self, event_id: &str) -> Option<usize> {
        self.with_state(|state| {
            state
                .events
                .iter()
                .position(|e| e.event_id.as_deref() == Some(event_id))
                .map(|i| state.dropped + i + 1)
        })
    }

    /// A stream of this relay's events from position `from`, ended by a priming event when
    /// the call has not finished `poll_after` after it starts.
    fn reader(
        self: Arc<Self>,
        from: usize,
        poll_after: Duration,
    ) -> impl Stream<Item = ServerSseMessage> + Send + Sync + 'static {
        let reader = Reader {
            changed: self.changed.subscribe(),
            relay: self,
            next: from,
            deadline: tokio::time::Instant::now() + poll_after,
            ended: false,
        };
        futures::stream::unfold(reader, |mut reader| async move {
            let event = reader.next_event().await?;
            Some((event, reader))
        })
    }
}

/// One stream's place in a relay.
struct Reader {
    relay: Arc<Relay>,
    changed: watch::Receiver<()>,
    next: usize,
    deadline: tokio::time::Instant,
    /// The priming event that ends this stream was added.
    ended: bool,
}

enum Step {
    Event(ServerSseMessage),
    End,
    Wait,
}

impl Reader {
    async fn next_event(&mut self) -> Option<ServerSseMessage> {
        loop {
            self.changed.borrow_and_update();
            let number = self.relay.number;
            let step = self.relay.with_state(|state| {
                // Events dropped before this reader got to them are skipped.
                let at = self.next.max(state.dropped);
                if let Some(event) = state.events.get(at - state.dropped) {
                    self.next = at + 1;
                    return Step::Event(event.clone());
                }
                if state.done_at.is_some() || self.ended {
                    return Step::End;
                }
                if tokio::time::Instant::now() >= self.deadline {
                    // The stream ends here; the client resumes after this event.
                    state.primings += 1;
                    let id = format!("poll-{number}-{}", state.primings);
                    let last = state.events.back().and_then(|e| e.event_id.clone());
                    let id = last.map_or(id.clone(), |last| format!("{last}+{id}"));
                    if state.events.len() >= MAX_EVENTS {
                        state.events.pop_front();
                        state.dropped += 1;
                    }
                    state
                        .events
                        .push_back(ServerSseMessage::priming(id, RETRY_HINT));
                    self.ended = true;
                    return Step::Wait;
                }
                Step::Wait
            });
            match step {
                Step::Event(event) => return Some(event),
                Step::End => return None,
                Step::Wait if self.ended => continue,
                Step::Wait => {
                    tokio::select! {
                        changed = self.changed.changed() => {
                            if changed.is_err() {
                                // The relay is gone with its pump: nothing more comes.
                                return None;
                            }
                        }
                        () = tokio::time::sleep_until(self.deadline) => {}
                    }
                }
            }
        }
    }
}

/// Whether `message` is a `tools/call` (the requests whose answer may take long).
fn is_tool_call(message: &ClientJsonRpcMessage) -> bool {
    matches!(
        message,
        ClientJsonRpcMessage::Request(request)
            if matches!(request.request, ClientRequest::CallToolRequest(_))
    )
}

impl SessionManager for PollingSessions {
    type Error = LocalSessionManagerError;
    type Transport = WorkerTransport<LocalSessionWorker>;

    async fn create_session(&self) -> Result<(SessionId, Self::Transport), Self::Error> {
        self.inner.create_session().await
    }

    async fn initialize_session(
        &self,
        id: &SessionId,
        message: ClientJsonRpcMessage,
    ) -> Result<rmcp::model::ServerJsonRpcMessage, Self::Error> {
        self.inner.initialize_session(id, message).await
    }

    async fn has_session(&self, id: &SessionId) -> Result<bool, Self::Error> {
        self.inner.has_session(id).await
    }

    async fn close_session(&self, id: &SessionId) -> Result<(), Self::Error> {
        self.relays
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .remove(id);
        self.inner.close_session(id).await
    }

    async fn create_stream(
        &self,
        id: &SessionId,
        message: ClientJsonRpcMessage,
    ) -> Result<impl Stream<Item = ServerSseMessage> + Send + Sync + 'static, Self::Error> {
        let poll_after = match self.poll_after {
            Some(after) if is_tool_call(&message) => after,
            _ => return Ok(self.inner.create_stream(id, message).await?.left_stream()),
        };
        let relay = Relay::start(self.inner.create_stream(id, message).await?);
        {
            let mut relays = self.relays.lock().unwrap_or_else(PoisonError::into_inner);
            Self::evict(&mut relays);
            relays.entry(id.clone()).or_default().push(relay.clone());
        }
        Ok(relay.reader(0, poll_after).right_stream())
    }

    async fn accept_message(
        &self,
        id: &SessionId,
        message: ClientJsonRpcMessage,
    ) -> Result<(), Self::Error> {
        self.inner.accept_message(id, message).await
    }

    async fn create_standalone_stream(
        &self,
        id: &SessionId,
    ) -> Result<impl Stream<Item = ServerSseMessage> + Send + Sync + 'static, Self::Error> {
        self.inner.create_standalone_stream(id).await
    }

    async fn resume(
        &self,
        id: &SessionId,
        last_event_id: String,
    ) -> Result<impl Stream<Item = ServerSseMessage> + Send + Sync + 'static, Self::Error> {
        if let (Some(poll_after), Some((relay, from))) =
            (self.poll_after, self.find(id, &last_event_id))
        {
            return Ok(relay.reader(from, poll_after).left_stream());
        }
        Ok(self.inner.resume(id, last_event_id).await?.right_stream())
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use tokio::sync::mpsc;

    /// rmcp's side of a call: what is sent on the channel, until it is dropped.
    fn rmcp_stream(
        mut rx: mpsc::Receiver<ServerSseMessage>,
    ) -> impl Stream<Item = ServerSseMessage> + Send + 'static {
        futures::stream::poll_fn(move |cx| rx.poll_recv(cx))
    }

    /// A stand-in for rmcp's event of id `id` (its payload does not matter here).
    fn event(id: &str) -> ServerSseMessage {
        ServerSseMessage::priming(id, Duration::from_secs(3))
    }

    fn ids(events: &[ServerSseMessage]) -> Vec<String> {
        events
            .iter()
            .map(|e| e.event_id.clone().unwrap_or_default())
            .collect()
    }

    #[tokio::test]
    async fn a_stream_past_its_time_ends_with_a_priming_event_after_the_last_one() {
        let (tx, rx) = mpsc::channel(4);
        let relay = Relay::start(rmcp_stream(rx));
        tx.send(event("0/3")).await.unwrap();
        let got: Vec<_> = relay
            .clone()
            .reader(0, Duration::from_millis(50))
            .collect()
            .await;
        assert_eq!(got.len(), 2, "{:?}", ids(&got));
        assert_eq!(ids(&got)[0], "0/3");
        assert_eq!(ids(&got)[1], format!("0/3+poll-{}-1", relay.number));
        assert_eq!(got[1].retry, Some(RETRY_HINT));
        assert!(got[1].message.is_none());
        drop(tx);
    }

    #[tokio::test]
    async fn a_resumed_stream_starts_after_the_named_event_and_ends_with_the_call() {
        let (tx, rx) = mpsc::channel(4);
        let relay = Relay::start(rmcp_stream(rx));
        tx.send(event("0/1")).await.unwrap();
        let first: Vec<_> = relay
            .clone()
            .reader(0, Duration::from_millis(20))
            .collect()
            .await;
        let last = first.last().and_then(|e| e.event_id.clone()).unwrap();
        tx.send(event("1/1")).await.unwrap();
        drop(tx);
        let from = relay.position_after(&last).expect("a kept event");
        // The call has ended: the stream ends after its events, long before its time.
        let rest: Vec<_> = relay
            .reader(from, Duration::from_secs(3600))
            .collect()
            .await;
        assert_eq!(ids(&rest), ["1/1"]);
    }

    #[tokio::test]
    async fn only_the_last_events_are_kept() {
        let (tx, rx) = mpsc::channel(4);
        let relay = Relay::start(rmcp_stream(rx));
        for i in 0..MAX_EVENTS + 2 {
            tx.send(event(&format!("{i}/0"))).await.unwrap();
        }
        drop(tx);
        // Read once everything is in: a reader running alongside would get every event.
        let mut changed = relay.changed.subscribe();
        while relay.with_state(|s| s.done_at.is_none()) {
            changed.changed().await.unwrap();
        }
        let got: Vec<_> = relay
            .clone()
            .reader(0, Duration::from_secs(3600))
            .collect()
            .await;
        assert_eq!(got.len(), MAX_EVENTS);
        assert_eq!(ids(&got[..1]), ["2/0"]);
        assert!(relay.position_after("1/0").is_none());
    }
}
