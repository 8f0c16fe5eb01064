//! Running the store's statements named (prepared once per connection, through deadpool's
//! statement cache) or unnamed (parsed on every execution, for poolers in transaction mode),
//! and detecting such a pooler.

use std::future::Future;
use std::io;

use deadpool_postgres::{ClientWrapper, Transaction};
use tokio::io::{AsyncReadExt, AsyncWriteExt, DuplexStream};
use tokio_postgres::tls::{ChannelBinding, TlsConnect, TlsStream};
use tokio_postgres::types::{FromSql, ToSql, Type};
use tokio_postgres::{Client, Error as PgError, Row, SimpleQueryMessage};

use crate::tls::DriverStream;

/// One statement of a store: its text, the types of its parameters (`$1`, `$2`, … in order),
/// and whether it is prepared once per connection and reused (`named`) or sent unnamed.
///
/// Both ways send the same parameter types, so a statement means the same either way.
#[derive(Debug)]
pub(crate) struct Stmt {
    sql: String,
    types: &'static [Type],
    named: bool,
}

impl Stmt {
    /// `sql` with parameters of `types`, named or not.
    pub(crate) fn new(sql: String, types: &'static [Type], named: bool) -> Self {
        Stmt { sql, types, named }
    }

    /// The statement's text.
    #[cfg(test)]
    pub(crate) fn text(&self) -> &str {
        &self.sql
    }

    /// The parameters paired with their types, for the unnamed statement.
    fn typed<'a>(&self, params: &[&'a (dyn ToSql + Sync)]) -> Vec<(&'a (dyn ToSql + Sync), Type)> {
        debug_assert_eq!(params.len(), self.types.len(), "parameters of {}", self.sql);
        params
            .iter()
            .copied()
            .zip(self.types.iter().cloned())
            .collect()
    }
}

/// Runs [`Stmt`]s on a pooled connection or in a transaction.
pub(crate) trait Exec {
    /// The rows `st` returns.
    fn query_st(
        &self, st: &Stmt, params: &[&(dyn ToSql + Sync)],
    ) -> impl Future<Output = Result<Vec<Row>, PgError>> + Send;

    /// The one row `st` returns, if any (an error for more than one).
    fn query_opt_st(
        &self, st: &Stmt, params: &[&(dyn ToSql + Sync)],
    ) -> impl Future<Output = Result<Option<Row>, PgError>> + Send;

    /// The one row `st` returns (an error for none or more).
    fn query_one_st(
        &self, st: &Stmt, params: &[&(dyn ToSql + Sync)],
    ) -> impl Future<Output = Result<Row, PgError>> + Send;

    /// How many rows `st` changed.
    fn execute_st(
        &self, st: &Stmt, params: &[&(dyn ToSql + Sync)],
    ) -> impl Future<Output = Result<u64, PgError>> + Send;

    /// Whether `st` returns a row (an error for more than one).
    fn exists_st(
        &self, st: &Stmt, params: &[&(dyn ToSql + Sync)],
    ) -> impl Future<Output = Result<bool, PgError>> + Send
    where
        Self: Sync,
    {
        async move { Ok(self.query_opt_st(st, params).await?.is_some()) }
    }

    /// The first column of every row `st` returns.
    fn column_st<T>(
        &self, st: &Stmt, params: &[&(dyn ToSql + Sync)],
    ) -> impl Future<Output = Result<Vec<T>, PgError>> + Send
    where
        Self: Sync,
        T: for<'r> FromSql<'r> + Send,
    {
        async move {
            let rows = self.query_st(st, params).await?;
            rows.iter().map(|row| row.try_get(0)).collect()
        }
    }
}

/// One `Exec` method: prepares a named statement through deadpool's cache and runs it with
/// the driver's `$named`, or sends it unnamed with its types through `$typed`.
macro_rules! exec_method {
    ($method:ident -> $out:ty, $named:ident, $typed:ident) => {
        async fn $method(
            &self, st: &Stmt, params: &[&(dyn ToSql + Sync)],
        ) -> Result<$out, PgError> {
            if st.named {
                let prepared = self.prepare_typed_cached(&st.sql, st.types).await?;
                self.$named(&prepared, params).await
            } else {
                self.$typed(&st.sql, &st.typed(params)).await
            }
        }
    };
}

/// `Exec` for deadpool's connection and transaction, which have the same methods.
macro_rules! exec {
    ($ty:ty) => {
        impl Exec for $ty {
            exec_method!(query_st -> Vec<Row>, query, query_typed);
            exec_method!(query_opt_st -> Option<Row>, query_opt, query_typed_opt);
            exec_method!(query_one_st -> Row, query_one, query_typed_one);
            exec_method!(execute_st -> u64, execute, execute_typed);
        }
    };
}

exec!(ClientWrapper);
exec!(Transaction<'_>);

/// The first bytes of a `SSLRequest` and a `CancelRequest` after their length (protocol
/// version 1234.5679 and 1234.5678).
const SSL_REQUEST: [u8; 4] = 80_877_103i32.to_be_bytes();
const CANCEL_REQUEST: [u8; 4] = 80_877_102i32.to_be_bytes();

/// Whether `client`'s connection goes through a pooler that multiplexes server connections
/// (PgBouncer, …), where named prepared statements do not survive from one transaction to
/// the next.
///
/// At connect, PostgreSQL sends the client a cancel key holding its server process id;
/// poolers hand out keys of their own. The driver keeps the key private, but writes it into
/// the `CancelRequest` it sends on a stream we give it: it is given an in-memory pipe (no
/// request reaches any server), and the process id read there is compared with
/// `pg_backend_pid()`.
pub(crate) async fn behind_pooler(client: &Client) -> Result<bool, PgError> {
    let (mut ours, theirs) = tokio::io::duplex(64);
    let read_key = async move {
        let mut head = [0u8; 8];
        ours.read_exact(&mut head).await?;
        if head[4..] == SSL_REQUEST {
            // The driver asks for TLS first (sslmode prefer or require): accept, and the
            // pass-through "TLS" below hands it the same pipe.
            ours.write_all(b"S").await?;
            ours.read_exact(&mut head).await?;
        }
        if head[4..] != CANCEL_REQUEST {
            return Err(io::Error::other("not a cancel request"));
        }
        let mut key = [0u8; 8];
        ours.read_exact(&mut key).await?;
        Ok(i32::from_be_bytes([key[0], key[1], key[2], key[3]]))
    };
    let token = client.cancel_token();
    let (_, key_pid) = tokio::join!(token.cancel_query_raw(theirs, PassThrough), read_key);
    let Ok(key_pid) = key_pid else {
        // Cannot tell: assume a pooler, where unnamed statements are needed (and elsewhere
        // only cost a parse per statement).
        return Ok(true);
    };
    let backend_pid = client
        .simple_query("SELECT pg_backend_pid()")
        .await?
        .iter()
        .find_map(|message| match message {
            SimpleQueryMessage::Row(row) => row.get(0).and_then(|pid| pid.parse::<i32>().ok()),
            _ => None,
        });
    Ok(backend_pid != Some(key_pid))
}

/// A "TLS" connector that leaves the in-memory pipe as it is, so the cancel request
/// [`behind_pooler`] reads is plain.
struct PassThrough;

impl TlsConnect<DuplexStream> for PassThrough {
    type Stream = DriverStream<DuplexStream>;
    type Error = io::Error;
    type Future = std::future::Ready<io::Result<Self::Stream>>;

    fn connect(self, stream: DuplexStream) -> Self::Future {
        std::future::ready(Ok(DriverStream(stream)))
    }
}

/// The pipe, as the driver's TLS stream: no channel binding.
impl TlsStream for DriverStream<DuplexStream> {
    fn channel_binding(&self) -> ChannelBinding {
        ChannelBinding::none()
    }
}
