//! The tables, created and upgraded by the host: `<pg_schema>.schema_version` records every
//! migration applied; `<pg_schema>.kv` holds the rows. Migrations run at the first use of
//! the store (or ahead of a deploy: `toolhost store migrate`) in one transaction under an
//! advisory lock, so replicas starting together apply each migration once, and a database
//! migrated by a newer toolhost is refused instead of misread.

use super::Db;
use super::call::Checkout;
use super::errors::Failure;
use std::sync::Arc;
use std::time::Instant;

/// The migrations, in order: migration `n` (1-based) brings the schema to version `n`.
/// `{schema}` is the quoted schema name. Never edit one that shipped: add a new one.
const MIGRATIONS: &[&str] = &[
    // 1: the rows. Keys sort by bytes (COLLATE "C"), as in SQLite and in memory, so
    // `list` and export see the same order on every backend.
    "CREATE TABLE {schema}.kv (
         ns text COLLATE \"C\" NOT NULL,
         key text COLLATE \"C\" NOT NULL,
         value text NOT NULL,
         PRIMARY KEY (ns, key)
     )",
];

/// The schema version this toolhost writes.
pub(super) const VERSION: i32 = MIGRATIONS.len() as i32;

/// The first argument of the advisory lock (`'toolhost'` in ASCII, trimmed to 32 bits); the
/// second is the schema's hash, so two schemas in one database migrate independently.
const LOCK_CLASS: i32 = 0x746f_6f6c;

/// Brings the schema to [`VERSION`] (bounded by `until`).
pub(super) async fn migrate(db: &Arc<Db>, until: Instant) -> Result<(), Failure> {
    let mut checkout = Checkout::get(db, until).await?;
    let result = apply(db, checkout.client(), until).await;
    checkout.finish();
    result
}

async fn apply(
    db: &Db,
    client: &mut deadpool_postgres::Object,
    until: Instant,
) -> Result<(), Failure> {
    let failed = |e: tokio_postgres::Error| db.server.failed(&e);
    let schema = quote(&db.schema);
    let transaction = client.transaction().await.map_err(failed)?;
    transaction
        .batch_execute(&super::ops::timeouts(until))
        .await
        .map_err(failed)?;
    transaction
        .execute(
            "SELECT pg_advisory_xact_lock($1, hashtext($2))",
            &[&LOCK_CLASS, &db.schema],
        )
        .await
        .map_err(failed)?;
    // A schema an administrator made beforehand is used as it is: CREATE SCHEMA (even
    // IF NOT EXISTS) needs the CREATE privilege on the database, which a deploy role may
    // lack.
    let exists = transaction
        .query_opt(
            "SELECT 1 FROM pg_namespace WHERE nspname = $1",
            &[&db.schema],
        )
        .await
        .map_err(failed)?
        .is_some();
    if !exists {
        transaction
            .batch_execute(&format!("CREATE SCHEMA IF NOT EXISTS {schema}"))
            .await
            .map_err(failed)?;
    }
    transaction
        .batch_execute(&format!(
            "CREATE TABLE IF NOT EXISTS {schema}.schema_version (
                 version integer PRIMARY KEY,
                 applied_at timestamptz NOT NULL DEFAULT now()
             );"
        ))
        .await
        .map_err(failed)?;
    let row = transaction
        .query_one(
            &format!("SELECT coalesce(max(version), 0) FROM {schema}.schema_version"),
            &[],
        )
        .await
        .map_err(failed)?;
    let current: i32 = row.get(0);
    if current > VERSION {
        return Err(Failure::Store(db.server.error(format!(
            "schema {} is at version {current}, newer than this toolhost knows ({VERSION}): \
             upgrade toolhost",
            db.schema
        ))));
    }
    for (index, migration) in MIGRATIONS.iter().enumerate().skip(current as usize) {
        let version = index as i32 + 1;
        transaction
            .batch_execute(&migration.replace("{schema}", &schema))
            .await
            .map_err(failed)?;
        transaction
            .execute(
                &format!("INSERT INTO {schema}.schema_version (version) VALUES ($1)"),
                &[&version],
            )
            .await
            .map_err(failed)?;
    }
    transaction.commit().await.map_err(failed)?;
    if current < VERSION {
        tracing::info!(
            "store: PostgreSQL at {}: schema {} migrated from version {current} to {VERSION}",
            db.server.label,
            db.schema
        );
    }
    Ok(())
}

/// `name` as a quoted SQL identifier (names are checked to be plain identifiers too).
pub(super) fn quote(name: &str) -> String {
    format!("\"{}\"", name.replace('"', "\"\""))
}
