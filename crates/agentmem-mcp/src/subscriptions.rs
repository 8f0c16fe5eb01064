//! Who hears that the knowledge graph changed: clients that subscribed to
//! `memory://knowledge-graph` get `notifications/resources/updated` after every graph write made
//! through this server, as from the reference server. One registry serves every connection of
//! the server (each HTTP session, or the one stdio client), for both ways of subscribing:
//! `resources/subscribe` (protocol versions up to 2025-11-25) and `subscriptions/listen`
//! (2026-07-28).
//!
//! The connection that wrote is told before its call returns (the reference's order); the
//! others are told in the background, so a client that stops reading its stream never stalls
//! another's calls. A subscriber still being told of an earlier write is told once more after
//! that, not once per write.

use std::collections::HashMap;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex, MutexGuard};

use rmcp::model::ResourceUpdatedNotificationParam;
use rmcp::service::{Peer, SubscriptionSink};
use rmcp::RoleServer;

/// The URI of the one resource the server offers: the whole knowledge graph as JSON.
pub const GRAPH_URI: &str = "memory://knowledge-graph";

/// Where one subscriber is told.
#[derive(Clone)]
enum Listener {
    /// A connection that sent `resources/subscribe`.
    Legacy(Peer<RoleServer>),
    /// An open `subscriptions/listen` request.
    Listen(SubscriptionSink),
}

impl Listener {
    /// Tells it; `false` when it cannot be reached any more.
    async fn tell(&self) -> bool {
        match self {
            Listener::Legacy(peer) => peer
                .notify_resource_updated(ResourceUpdatedNotificationParam::new(GRAPH_URI))
                .await
                .is_ok(),
            Listener::Listen(sink) => sink.notify_resource_updated(GRAPH_URI).await.is_ok(),
        }
    }
}

/// Whether a background notification is under way, and whether another is due after it.
#[derive(Default)]
struct Telling {
    busy: bool,
    again: bool,
}

/// One subscriber.
#[derive(Clone)]
struct Entry {
    listener: Listener,
    /// The connection it belongs to.
    connection: u64,
    telling: Arc<Mutex<Telling>>,
}

type Registry = Arc<Mutex<HashMap<u64, Entry>>>;

/// A lock that a panic elsewhere does not poison for good.
fn lock<T>(mutex: &Mutex<T>) -> MutexGuard<'_, T> {
    mutex.lock().unwrap_or_else(|e| e.into_inner())
}

/// The subscribers of one server, by a number unique in it.
#[derive(Default)]
pub(crate) struct Subscribers {
    next: AtomicU64,
    registry: Registry,
}

impl std::fmt::Debug for Subscribers {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let count = lock(&self.registry).len();
        f.debug_struct("Subscribers")
            .field("count", &count)
            .finish()
    }
}

impl Subscribers {
    /// A fresh number, for a connection or a listen request.
    pub(crate) fn new_id(&self) -> u64 {
        self.next.fetch_add(1, Ordering::Relaxed)
    }

    fn insert(&self, id: u64, connection: u64, listener: Listener) {
        let entry = Entry {
            listener,
            connection,
            telling: Arc::default(),
        };
        lock(&self.registry).insert(id, entry);
    }

    /// Connection `id` subscribed (again) through `peer`.
    pub(crate) fn subscribe(&self, id: u64, peer: Peer<RoleServer>) {
        self.insert(id, id, Listener::Legacy(peer));
    }

    /// The listen request `id` of `connection` delivers through `sink` until it ends.
    pub(crate) fn listen(&self, id: u64, connection: u64, sink: SubscriptionSink) {
        self.insert(id, connection, Listener::Listen(sink));
    }

    /// `id` no longer listens (unsubscribed, closed, or its listen request ended).
    pub(crate) fn remove(&self, id: u64) {
        lock(&self.registry).remove(&id);
    }

    /// Tells every subscriber that the graph changed through `writer` (a connection): the
    /// writer's own subscriptions now, the others in the background. One that cannot be
    /// reached any more is dropped.
    pub(crate) async fn graph_updated(&self, writer: u64) {
        let entries: Vec<(u64, Entry)> = lock(&self.registry)
            .iter()
            .map(|(id, entry)| (*id, entry.clone()))
            .collect();
        for (id, entry) in entries {
            if entry.connection == writer {
                if !entry.listener.tell().await {
                    self.remove(id);
                }
            } else {
                tell_later(self.registry.clone(), id, entry);
            }
        }
    }
}

/// Tells `entry` in a task of its own, unless one is under way: then that task tells it once
/// more when done.
fn tell_later(registry: Registry, id: u64, entry: Entry) {
    {
        let mut telling = lock(&entry.telling);
        if telling.busy {
            telling.again = true;
            return;
        }
        telling.busy = true;
    }
    tokio::spawn(async move {
        loop {
            if !entry.listener.tell().await {
                lock(&registry).remove(&id);
            }
            let mut telling = lock(&entry.telling);
            if !std::mem::take(&mut telling.again) {
                telling.busy = false;
                return;
            }
        }
    });
}
