//! Retrying an operation that lost a race with another writer: a transaction that hit a
//! write conflict, an epoch switch that found the session changed, a compare-and-set that
//! found a newer revision. [`retry`] runs a try until it is done; each try says whether it is
//! done, worth another try (after a backoff or at once), and what the operation returns once
//! the tries are spent. [`Retries`] is the count and the wait behind it, for a loop that
//! cannot be a closure (one that borrows a driver session mutably on every try).

use std::future::Future;
use std::time::Duration;

use agentmem_core::Error;

/// How many times an operation that lost a race is retried.
pub(crate) const MAX_RETRIES: u32 = 30;

/// What one try of a retried operation came to.
pub(crate) enum Step<T, E = Error> {
    /// Finished with this value.
    Done(T),
    /// Lost a race: tried again after a [`backoff`] while tries are left; the outcome once
    /// they are spent.
    Retry(Result<T, E>),
    /// Lost a race, but another try can start at once (the try already waited, or repaired
    /// what it found); the outcome once the tries are spent.
    RetryNow(Result<T, E>),
}

/// Runs `attempt` (given the number of the try, from 0) until it is done or has been retried
/// [`MAX_RETRIES`] times. An error of a try ends the operation with that error.
pub(crate) async fn retry<T, E, F, Fut>(mut attempt: F) -> Result<T, E>
where
    F: FnMut(u32) -> Fut,
    Fut: Future<Output = Result<Step<T, E>, E>>,
{
    let mut retries = Retries::new(MAX_RETRIES);
    loop {
        let (spent, wait) = match attempt(retries.done()).await? {
            Step::Done(value) => return Ok(value),
            Step::Retry(spent) => (spent, true),
            Step::RetryNow(spent) => (spent, false),
        };
        if !retries.again(wait).await {
            return spent;
        }
    }
}

/// The retries of one operation: how many were made, and the wait before the next.
pub(crate) struct Retries {
    done: u32,
    max: u32,
}

impl Retries {
    /// No retry made yet, at most `max` allowed.
    pub(crate) fn new(max: u32) -> Self {
        Retries { done: 0, max }
    }

    /// How many retries were made.
    pub(crate) fn done(&self) -> u32 {
        self.done
    }

    /// Whether another try is allowed; when it is, waits first (a [`backoff`], when `wait`)
    /// and counts it.
    pub(crate) async fn again(&mut self, wait: bool) -> bool {
        if self.done >= self.max {
            return false;
        }
        if wait {
            backoff(self.done).await;
        }
        self.done += 1;
        true
    }
}

/// Waits before retry number `attempt`: exponential from 2 ms, capped at 200 ms, with jitter
/// so that writers that collided do not collide again in lockstep.
async fn backoff(attempt: u32) {
    let base = (2u64 << attempt.min(7)).min(200);
    let jitter = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map(|d| u64::from(d.subsec_nanos()) % (base + 1))
        .unwrap_or(0);
    tokio::time::sleep(Duration::from_millis(base / 2 + jitter / 2)).await;
}
