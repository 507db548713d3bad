//! The store's operations as SQL, on the backend's runtime. Writes run in a transaction
//! whose `statement_timeout` and `lock_timeout` end where the call's wait ends, so a wait
//! for another transaction's row lock (another replica's `update`) ends on the server with
//! a precise error; reads never wait for row locks in PostgreSQL and are bounded by the
//! client side.

use super::super::backend::Row;
use super::Db;
use super::call::Checkout;
use super::errors::Failure;
use std::sync::Arc;
use std::time::Instant;
use tokio::sync::oneshot;

/// `SET LOCAL` statements bounding the transaction's statements and lock waits by `until`
/// (at least 1 ms: 0 would mean "no limit"). Rounded up, plus a millisecond: a server
/// timeout must not end the wait before the caller's deadline, or the caller, not yet out
/// of time, would take it for the 5 s cap (`Locked`) instead of its deadline (`OutOfTime`).
pub(super) fn timeouts(until: Instant) -> String {
    let ms = until
        .saturating_duration_since(Instant::now())
        .as_micros()
        .div_ceil(1000)
        .saturating_add(1)
        .clamp(1, i32::MAX as u128);
    format!(
        "SET LOCAL statement_timeout = {ms}; SET LOCAL lock_timeout = {ms}; \
         SET LOCAL idle_in_transaction_session_timeout = {}",
        ms + super::call::SERVER_FIRST.as_millis() * 4
    )
}

/// Runs `body` on a checked-out connection; a normal end (either way) returns the
/// connection to the pool, an abandoned one is discarded (see [`Checkout`]).
macro_rules! with_client {
    ($db:expr, $until:expr, |$client:ident| $body:expr) => {{
        super::ensure_migrated($db, $until).await?;
        let mut checkout = Checkout::get($db, $until).await?;
        // An async block, so `?` and `return` in the body end the body, not the function.
        let result = async {
            let $client = checkout.client();
            $body
        }
        .await;
        checkout.finish();
        result
    }};
}

/// Opens a transaction on `client` whose statements and lock waits end at `until` (the
/// call's deadline, as [`timeouts`] sets it): every writing operation starts here.
async fn begin<'a>(
    client: &'a mut deadpool_postgres::Object,
    db: &Db,
    until: Instant,
) -> Result<deadpool_postgres::Transaction<'a>, Failure> {
    let failed = |e: tokio_postgres::Error| db.server.failed(&e);
    let transaction = client.transaction().await.map_err(failed)?;
    transaction
        .batch_execute(&timeouts(until))
        .await
        .map_err(failed)?;
    Ok(transaction)
}

pub(super) async fn get(
    db: Arc<Db>,
    ns: String,
    key: String,
    until: Instant,
) -> Result<Option<String>, Failure> {
    with_client!(&db, until, |client| {
        let statement = client
            .prepare_cached(&db.sql.get)
            .await
            .map_err(|e| db.server.failed(&e))?;
        client
            .query_opt(&statement, &[&ns, &key])
            .await
            .map(|row| row.map(|row| row.get::<_, String>(0)))
            .map_err(|e| db.server.failed(&e))
    })
}

pub(super) async fn set(
    db: Arc<Db>,
    ns: String,
    key: String,
    text: String,
    until: Instant,
) -> Result<(), Failure> {
    with_client!(&db, until, |client| {
        let failed = |e: tokio_postgres::Error| db.server.failed(&e);
        let transaction = begin(client, &db, until).await?;
        let statement = transaction
            .prepare_cached(&db.sql.upsert)
            .await
            .map_err(failed)?;
        transaction
            .execute(&statement, &[&ns, &key, &text])
            .await
            .map_err(failed)?;
        transaction.commit().await.map_err(failed)
    })
}

pub(super) async fn delete(
    db: Arc<Db>,
    ns: String,
    key: String,
    until: Instant,
) -> Result<bool, Failure> {
    with_client!(&db, until, |client| {
        let failed = |e: tokio_postgres::Error| db.server.failed(&e);
        let transaction = begin(client, &db, until).await?;
        let statement = transaction
            .prepare_cached(&db.sql.delete)
            .await
            .map_err(failed)?;
        let removed = transaction
            .execute(&statement, &[&ns, &key])
            .await
            .map_err(failed)?;
        transaction.commit().await.map_err(failed)?;
        Ok(removed > 0)
    })
}

pub(super) async fn list(
    db: Arc<Db>,
    ns: String,
    prefix: String,
    limit: usize,
    until: Instant,
) -> Result<Vec<String>, Failure> {
    with_client!(&db, until, |client| {
        let statement = client
            .prepare_cached(&db.sql.list)
            .await
            .map_err(|e| db.server.failed(&e))?;
        let rows = client
            .query(&statement, &[&ns, &prefix, &(limit as i64)])
            .await
            .map_err(|e| db.server.failed(&e))?;
        Ok(rows
            .iter()
            .map(|row| row.get::<_, String>(0))
            .take_while(|key| key.starts_with(&prefix))
            .collect())
    })
}

/// The transaction of an `update`: holds the row (inserting a placeholder for a missing key,
/// so that two first writers of one key also wait for each other), hands the old text to
/// the caller's thread over `old`, waits for the new text over `new` (dropped: roll back)
/// and writes it.
pub(super) async fn update(
    db: Arc<Db>,
    ns: String,
    key: String,
    until: Instant,
    old: std::sync::mpsc::SyncSender<Option<String>>,
    new: oneshot::Receiver<Option<String>>,
) -> Result<(), Failure> {
    with_client!(&db, until, |client| {
        let failed = |e: tokio_postgres::Error| db.server.failed(&e);
        let transaction = begin(client, &db, until).await?;
        let insert = transaction
            .prepare_cached(&db.sql.insert_placeholder)
            .await
            .map_err(failed)?;
        let select = transaction
            .prepare_cached(&db.sql.select_for_update)
            .await
            .map_err(failed)?;
        // Inserted: the key was missing and this transaction holds the new row. Not
        // inserted: the row exists; lock it. It may be deleted (and committed) between the
        // two statements: then try again.
        let current = loop {
            let inserted = transaction
                .execute(&insert, &[&ns, &key])
                .await
                .map_err(failed)?;
            if inserted == 1 {
                break None;
            }
            if let Some(row) = transaction
                .query_opt(&select, &[&ns, &key])
                .await
                .map_err(failed)?
            {
                break Some(row.get::<_, String>(0));
            }
        };
        if old.try_send(current).is_err() {
            // The caller stopped waiting: roll back (dropping the transaction).
            return Err(Failure::TimedOut);
        }
        let Ok(text) = new.await else {
            // The update function failed, or the caller gave up: nothing is written.
            return Ok(());
        };
        // A new text overwrites the row; none (the function returned nil) deletes it.
        let (statement, text) = match &text {
            Some(text) => (&db.sql.overwrite, Some(text)),
            None => (&db.sql.delete, None),
        };
        let statement = transaction
            .prepare_cached(statement)
            .await
            .map_err(failed)?;
        match text {
            Some(text) => transaction.execute(&statement, &[&ns, &key, text]).await,
            None => transaction.execute(&statement, &[&ns, &key]).await,
        }
        .map_err(failed)?;
        transaction.commit().await.map_err(failed)
    })
}

pub(super) async fn rows(
    db: Arc<Db>,
    after: Option<(String, String)>,
    page: usize,
    until: Instant,
) -> Result<Vec<Row>, Failure> {
    with_client!(&db, until, |client| {
        let page = page as i64;
        let result = match &after {
            Some((ns, key)) => client.query(&db.sql.rows_after, &[ns, key, &page]).await,
            None => client.query(&db.sql.rows_first, &[&page]).await,
        };
        let rows = result.map_err(|e| db.server.failed(&e))?;
        Ok(rows
            .iter()
            .map(|row| Row {
                ns: row.get(0),
                key: row.get(1),
                value: row.get(2),
            })
            .collect())
    })
}

pub(super) async fn load(db: Arc<Db>, rows: Vec<Row>, until: Instant) -> Result<(), Failure> {
    with_client!(&db, until, |client| {
        let failed = |e: tokio_postgres::Error| db.server.failed(&e);
        let transaction = begin(client, &db, until).await?;
        let statement = transaction.prepare(&db.sql.upsert).await.map_err(failed)?;
        for row in &rows {
            transaction
                .execute(&statement, &[&row.ns, &row.key, &row.value])
                .await
                .map_err(failed)?;
        }
        transaction.commit().await.map_err(failed)
    })
}

/// `SELECT 1` on a pooled connection (no migration: health is reachability).
pub(super) async fn ping(db: Arc<Db>, until: Instant) -> Result<(), Failure> {
    let mut checkout = Checkout::get(&db, until).await?;
    let result = checkout
        .client()
        .simple_query("SELECT 1")
        .await
        .map(drop)
        .map_err(|e| db.server.failed(&e));
    checkout.finish();
    result
}
