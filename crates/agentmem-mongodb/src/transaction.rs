//! Transactions: starting, committing and retrying them (write conflicts with concurrent
//! writers; briefly, an unreachable server), for the operations that need all-or-nothing
//! writes across documents.

use std::time::Instant;

use agentmem_core::{Error, Result};
use mongodb::ClientSession;

use crate::error::{
    from_driver, is_transient, is_unreachable, server_code, ResultExt, DUPLICATE_KEY,
};
use crate::retry::{Retries, MAX_RETRIES};
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
        &self, session: &mut ClientSession, started: Instant,
    ) -> std::result::Result<(), mongodb::error::Error> {
        let mut retries = Retries::new(MAX_COMMIT_RETRIES);
        loop {
            let unknown = match session.commit_transaction().await {
                Err(e)
                    if e.contains_label(mongodb::error::UNKNOWN_TRANSACTION_COMMIT_RESULT)
                        && (!is_unreachable(&e) || started.elapsed() < self.retry_budget()) =>
                {
                    e
                }
                other => return other,
            };
            if !retries.again(false).await {
                return Err(unknown);
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
        &self, failure: &mongodb::error::Error, attempt: u32, started: Instant,
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
        session: &mut ClientSession, failure: Option<&mongodb::error::Error>,
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

/// How many more times a transaction is run after the server could not be reached (see
/// [`MongoStore::retry_transaction`]): one retry rides out a dropped connection.
pub(crate) const MAX_UNREACHABLE_RETRIES: u32 = 1;

/// How many times a commit whose outcome is unknown is sent again.
pub(crate) const MAX_COMMIT_RETRIES: u32 = 3;

/// The tries of one transaction (see [`in_transaction`]): when it first started, and the
/// retries made.
pub(crate) struct TxTries<'a> {
    store: &'a MongoStore,
    started: Instant,
    retries: Retries,
}

impl<'a> TxTries<'a> {
    /// The first try of a transaction on `store`, starting now.
    pub(crate) fn new(store: &'a MongoStore) -> Self {
        TxTries {
            store,
            started: Instant::now(),
            retries: Retries::new(MAX_RETRIES),
        }
    }

    /// Ends a try whose body came to `outcome`: commits it, or aborts it when it failed. The
    /// operation's result, or `None` when the transaction is to run again (after a backoff),
    /// as [`MongoStore::retry_transaction`] decides.
    pub(crate) async fn finish<T>(
        &mut self, session: &mut ClientSession, outcome: std::result::Result<T, TxError>,
    ) -> Option<Result<T>> {
        let failure = match outcome {
            Ok(value) => match self.store.commit(session, self.started).await {
                Ok(()) => return Some(Ok(value)),
                Err(e) => e,
            },
            Err(TxError::Driver(e)) => {
                MongoStore::abandon(session, Some(&e)).await;
                e
            }
            Err(TxError::Other(e)) => {
                MongoStore::abandon(session, None).await;
                return Some(Err(e));
            }
        };
        // `retry_transaction` never allows more than `MAX_RETRIES` retries.
        let retry = self
            .store
            .retry_transaction(&failure, self.retries.done(), self.started);
        if retry && self.retries.again(true).await {
            return None;
        }
        Some(Err(from_driver(failure)))
    }
}

/// Runs `$body` (an expression using the `ClientSession` bound to `$s`) in a transaction,
/// retrying the whole transaction as [`TxTries::finish`] decides (write conflicts with
/// concurrent writers; briefly, an unreachable server), and maps driver errors. A macro
/// rather than a function taking a closure: the body borrows the session mutably, which a
/// closure cannot hand to the future it returns.
macro_rules! in_transaction {
    ($store:expr, |$s:ident| $body:expr) => {{
        let mut tries = $crate::transaction::TxTries::new($store);
        loop {
            let mut session = $store.start_transaction().await?;
            let outcome: std::result::Result<_, $crate::transaction::TxError> = {
                let $s = &mut session;
                $body
            };
            if let Some(done) = tries.finish(&mut session, outcome).await {
                break done;
            }
        }
    }};
}
pub(crate) use in_transaction;
