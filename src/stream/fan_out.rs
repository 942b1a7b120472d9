//! Frame fan-out: the publisher hands each new frame to every client's socket itself,
//! without waking the client's task, whenever the socket takes it at once. A client
//! whose socket is busy, full or failed is left to its own task, which sends what is
//! queued when the socket drains and then the newest frame: a slow client still loses
//! frames rather than queueing them, and never delays anyone.
//!
//! Written by hand because no crate fans one message out to many WebSockets, and one
//! task per client woken for every frame costs about twice the CPU (docs/benchmarks.md,
//! "fan-out").

use std::collections::VecDeque;
use std::sync::{Arc, Mutex};
use std::task::{Context, Poll, Waker};
use std::time::Duration;

use axum::extract::ws::{Message, WebSocket};
use bytes::Bytes;
use futures_util::stream::SplitSink;
use futures_util::SinkExt;
use tokio::sync::{MutexGuard, Notify};

use super::columns::ClientColumns;
use super::config::CLIENT_CAPACITY;

/// One encoded frame and the residual columns (mesh node, encoded `ResidualColumn`) a
/// client must hold before it.
#[derive(Clone, Debug, Default)]
pub struct PublishedFrame {
    /// The encoded `Frame`.
    pub frame: Bytes,
    /// The columns its loads name, in load order.
    pub columns: Arc<[(u32, Bytes)]>,
}

/// Every client the publisher delivers frames to.
#[derive(Default)]
pub(crate) struct Audience {
    links: Mutex<Vec<Arc<ClientLink>>>,
}

impl Audience {
    /// Adds `link`: it gets every frame published from now on.
    pub fn join(&self, link: &Arc<ClientLink>) {
        self.members().push(link.clone());
    }

    /// Removes `link`.
    pub fn leave(&self, link: &Arc<ClientLink>) {
        self.members().retain(|l| !Arc::ptr_eq(l, link));
    }

    /// Offers `frame` to every member; `scratch` holds the members meanwhile, so the
    /// list is locked only to copy it (no allocation once `scratch` has grown).
    pub fn deliver(&self, frame: &PublishedFrame, scratch: &mut Vec<Arc<ClientLink>>) {
        scratch.extend(self.members().iter().cloned());
        for link in scratch.drain(..) {
            link.offer(frame);
        }
    }

    fn members(&self) -> std::sync::MutexGuard<'_, Vec<Arc<ClientLink>>> {
        // The list stays consistent whatever panicked while it was held.
        self.links
            .lock()
            .unwrap_or_else(|poisoned| poisoned.into_inner())
    }
}

/// One client as the fan-out and the client's own task share it.
pub(crate) struct ClientLink {
    outbox: tokio::sync::Mutex<Outbox>,
    /// Signalled when the fan-out left something for the client's task to send.
    behind: Notify,
}

impl ClientLink {
    /// A client writing to `sink` that holds no residual columns yet.
    pub fn new(sink: SplitSink<WebSocket, Message>) -> Self {
        Self {
            outbox: tokio::sync::Mutex::new(Outbox {
                sink,
                columns: ClientColumns::new(CLIENT_CAPACITY),
                queue: VecDeque::new(),
                unflushed: false,
                failed: false,
                last_frame: Bytes::new(),
            }),
            behind: Notify::new(),
        }
    }

    /// The client's outbox, once nobody else sends to it.
    pub async fn outbox(&self) -> MutexGuard<'_, Outbox> {
        self.outbox.lock().await
    }

    /// Resolves when the fan-out left work for the client's task (at once if it did
    /// since the last call).
    pub async fn behind(&self) {
        self.behind.notified().await
    }

    /// Asks the client's task to catch up with the newest frame.
    pub fn fall_behind(&self) {
        self.behind.notify_one();
    }

    /// Sends `frame` (after the columns it needs) if the socket takes all of it without
    /// waiting; otherwise leaves the rest to the client's task.
    fn offer(&self, frame: &PublishedFrame) {
        let Ok(mut outbox) = self.outbox.try_lock() else {
            return self.fall_behind();
        };
        if !outbox.is_idle() {
            return self.fall_behind();
        }
        outbox.queue_frame(frame);
        if !outbox.try_drain() {
            self.fall_behind();
        }
    }
}

/// Why a client's messages could not be sent.
pub(crate) enum SendFailure {
    /// The socket failed or the peer went away.
    Gone,
    /// The socket accepted nothing for this long.
    Stalled(Duration),
}

/// A client's socket and what has been planned for it.
pub(crate) struct Outbox {
    sink: SplitSink<WebSocket, Message>,
    /// The residual columns the client holds (or will, once `queue` is sent).
    columns: ClientColumns,
    /// Messages planned for the client and not yet handed to the socket.
    queue: VecDeque<Message>,
    /// The socket holds bytes not flushed yet.
    unflushed: bool,
    /// A send failed; nothing more can go out.
    failed: bool,
    /// The newest frame planned for the client.
    last_frame: Bytes,
}

impl Outbox {
    /// Plans `message` after what is planned already.
    pub fn queue(&mut self, message: Message) {
        self.queue.push_back(message);
    }

    /// Plans `frame` unless it is the last frame planned: first the `ForgetColumns`
    /// and residual columns it needs that the client lacks, then the frame.
    pub fn queue_frame(&mut self, frame: &PublishedFrame) {
        if frame.frame == self.last_frame {
            return;
        }
        let (forget, missing) = self.columns.plan(&frame.columns);
        for bytes in forget.into_iter().chain(missing) {
            self.queue.push_back(Message::Binary(bytes));
        }
        self.queue.push_back(Message::Binary(frame.frame.clone()));
        self.last_frame = frame.frame.clone();
    }

    /// Sends everything planned and flushes it, giving up after `stall` without
    /// progress.
    pub async fn drain(&mut self, stall: Duration) -> Result<(), SendFailure> {
        if self.failed {
            return Err(SendFailure::Gone);
        }
        let sent = tokio::time::timeout(stall, async {
            while let Some(message) = self.queue.pop_front() {
                self.sink.feed(message).await?;
            }
            self.sink.flush().await
        })
        .await;
        match sent {
            Ok(Ok(())) => {
                self.unflushed = false;
                Ok(())
            }
            Ok(Err(_)) => {
                self.failed = true;
                Err(SendFailure::Gone)
            }
            Err(_) => Err(SendFailure::Stalled(stall)),
        }
    }

    /// The socket, for the goodbye once the client leaves the audience.
    pub fn sink(&mut self) -> &mut SplitSink<WebSocket, Message> {
        &mut self.sink
    }

    /// Nothing planned, unflushed or failed: the fan-out may send directly.
    fn is_idle(&self) -> bool {
        self.queue.is_empty() && !self.unflushed && !self.failed
    }

    /// Hands the queue to the socket and flushes it without waiting; true when all of it
    /// went out. Whatever a would-block leaves stays planned, in order, for
    /// [`Self::drain`] (a message the sink accepted is sent by its next flush).
    fn try_drain(&mut self) -> bool {
        let mut cx = Context::from_waker(Waker::noop());
        while !self.queue.is_empty() {
            match self.sink.poll_ready_unpin(&mut cx) {
                Poll::Ready(Ok(())) => {}
                Poll::Ready(Err(_)) => {
                    self.failed = true;
                    return false;
                }
                Poll::Pending => return false,
            }
            let Some(message) = self.queue.pop_front() else {
                break;
            };
            self.unflushed = true;
            if self.sink.start_send_unpin(message).is_err() {
                self.failed = true;
                return false;
            }
        }
        match self.sink.poll_flush_unpin(&mut cx) {
            Poll::Ready(Ok(())) => {
                self.unflushed = false;
                true
            }
            Poll::Ready(Err(_)) => {
                self.failed = true;
                false
            }
            Poll::Pending => false,
        }
    }
}
