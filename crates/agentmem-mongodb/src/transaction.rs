//! Transactions: starting, committing and retrying them (write conflicts with concurrent
//! writers; briefly, an unreachable server), for the operations that need all-or-nothing
//! writes across documents.

use std::time::{Duration, Instant};

use agentmem_core::{Error, Result};
use mongodb::ClientSession;

use crate::error::{is_transient, is_unreachable, server_code, ResultExt, DUPLICATE_KEY};
use crate::store::MongoStore;

impl MongoStore {
    pub(crate) async fn start_transaction(&self) -> Result<ClientSession> {
        let mut session = self.client().start_session().await.mapped()?;
        session.start_transaction().await.mapped()?;
        Ok(session)
    }

    /// Commits, retrying while the outcome is unknown (as the driver documents), but only a
    /// few times and, when the server cannot be reached, only within the transaction's
    /// [`retry_budget`](Self::retry_budget) measured from `started`.
    pub(crate) async fn commit(
        &self,
        session: &mut ClientSession,
        started: Instant,
    ) -> std::result::Result<(), mongodb::error::Error> {
        let mut tries = 0;
        loop {
            match session.commit_transaction().await {
                Err(e)
                    if e.contains_label(mongodb::error::UNKNOWN_TRANSACTION_COMMIT_RESULT)
                        && tries < MAX_COMMIT_RETRIES
                        && (!is_unreachable(&e) || started.elapsed() < self.retry_budget()) =>
                {
                    tries += 1;
                }
                other => return other,
            }
        }
    }

    /// Whether a transaction that failed with `failure` on try number `attempt` (from 0),
    /// first started at `started`, is run again.
    ///
    /// Write conflicts and duplicate head keys (two transactions creating the same head) are
    /// races with other writers and retried up to [`MAX_RETRIES`] times, each quickly. An
    /// unreachable server is different: the driver labels those failures
    /// `TransientTransactionError` too, but each further try waits out server selection
    /// again, so a dead server would hold the caller for [`MAX_RETRIES`] timeouts. They get
    /// at most [`MAX_UNREACHABLE_RETRIES`] more tries, and none once the retry budget is
    /// spent, so the caller hears `Unavailable` within about two selection timeouts.
    pub(crate) fn retry_transaction(
        &self,
        failure: &mongodb::error::Error,
        attempt: u32,
        started: Instant,
    ) -> bool {
        if is_unreachable(failure) {
            return attempt < MAX_UNREACHABLE_RETRIES && started.elapsed() < self.retry_budget();
        }
        let raced = is_transient(failure) || server_code(failure) == Some(DUPLICATE_KEY);
        raced && attempt < MAX_RETRIES
    }

    /// Aborts a transaction whose body failed with `failure`. When the server cannot be
    /// reached the abort is left to the driver, which aborts a dropped session's transaction
    /// in the background: awaiting it here would wait out server selection once more.
    pub(crate) async fn abandon(
        session: &mut ClientSession,
        failure: Option<&mongodb::error::Error>,
    ) {
        if failure.is_some_and(is_unreachable) {
            return;
        }
        // The transaction's outcome is already decided (it failed); a failed abort only
        // leaves it to the server's transaction timeout.
        let _ = session.abort_transaction().await;
    }
}

/// A failure inside a transaction body: a driver error (which may be transient, so the whole
/// transaction is retried) or an agentmem error (returned as it is).
pub(crate) enum TxError {
    Driver(mongodb::error::Error),
    Other(Error),
}

impl From<mongodb::error::Error> for TxError {
    fn from(e: mongodb::error::Error) -> Self {
        TxError::Driver(e)
    }
}

impl From<Error> for TxError {
    fn from(e: Error) -> Self {
        TxError::Other(e)
    }
}

/// How many times an operation that lost a race with a transaction is retried.
pub(crate) const MAX_RETRIES: u32 = 30;

/// How many more times a transaction is run after the server could not be reached (see
/// [`MongoStore::retry_transaction`]): one retry rides out a dropped connection.
pub(crate) const MAX_UNREACHABLE_RETRIES: u32 = 1;

/// How many times a commit whose outcome is unknown is sent again.
pub(crate) const MAX_COMMIT_RETRIES: u32 = 3;

/// Waits before retry number `attempt`: exponential from 2 ms, capped at 200 ms, with jitter
/// so that writers that collided do not collide again in lockstep.
pub(crate) async fn backoff(attempt: u32) {
    let base = (2u64 << attempt.min(7)).min(200);
    let jitter = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map(|d| u64::from(d.subsec_nanos()) % (base + 1))
        .unwrap_or(0);
    tokio::time::sleep(Duration::from_millis(base / 2 + jitter / 2)).await;
}

/// Runs `$body` (an expression using the `ClientSession` bound to `$s`) in a transaction,
/// retrying the whole transaction as [`MongoStore::retry_transaction`] decides (write
/// conflicts with concurrent writers; briefly, an unreachable server), and maps driver errors.
macro_rules! in_transaction {
    ($store:expr, |$s:ident| $body:expr) => {{
        let started = std::time::Instant::now();
        let mut attempt = 0u32;
        loop {
            let mut session = $store.start_transaction().await?;
            let outcome: std::result::Result<_, $crate::transaction::TxError> = {
                let $s = &mut session;
                $body
            };
            let failure = match outcome {
                Ok(value) => match $store.commit(&mut session, started).await {
                    Ok(()) => break Ok(value),
                    Err(e) => e,
                },
                Err($crate::transaction::TxError::Driver(e)) => {
                    $crate::store::MongoStore::abandon(&mut session, Some(&e)).await;
                    e
                }
                Err($crate::transaction::TxError::Other(e)) => {
                    $crate::store::MongoStore::abandon(&mut session, None).await;
                    break Err(e);
                }
            };
            if $store.retry_transaction(&failure, attempt, started) {
                $crate::transaction::backoff(attempt).await;
                attempt += 1;
                continue;
            }
            break Err($crate::error::from_driver(failure));
        }
    }};
}
pub(crate) use in_transaction;
