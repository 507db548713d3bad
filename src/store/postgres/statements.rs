//! The SQL of the store's operations, written once per store: the table name is the
//! operator's `pg_schema` (quoted), so the text cannot be a constant, but it does not change
//! for the store's life — building it per call was a `format!` on every `store.get`.

/// Every statement [`super::ops`] sends, for one `"schema".kv` table.
pub(super) struct Statements {
    pub(super) get: String,
    pub(super) upsert: String,
    pub(super) delete: String,
    pub(super) list: String,
    /// `update`'s placeholder row for a missing key (so two first writers wait for each
    /// other), its row lock, and its write.
    pub(super) insert_placeholder: String,
    pub(super) select_for_update: String,
    pub(super) overwrite: String,
    /// Export pages: the first one, and the ones after a `(ns, key)`.
    pub(super) rows_first: String,
    pub(super) rows_after: String,
}

impl Statements {
    /// The statements for the quoted table name `kv`.
    pub(super) fn for_table(kv: &str) -> Self {
        Self {
            get: format!("SELECT value FROM {kv} WHERE ns = $1 AND key = $2"),
            upsert: format!(
                "INSERT INTO {kv} (ns, key, value) VALUES ($1, $2, $3) \
                 ON CONFLICT (ns, key) DO UPDATE SET value = EXCLUDED.value"
            ),
            delete: format!("DELETE FROM {kv} WHERE ns = $1 AND key = $2"),
            // Keys >= prefix in byte order: those starting with it come first, together
            // (no LIKE: prefixes may hold % and _).
            list: format!("SELECT key FROM {kv} WHERE ns = $1 AND key >= $2 ORDER BY key LIMIT $3"),
            insert_placeholder: format!(
                "INSERT INTO {kv} (ns, key, value) VALUES ($1, $2, 'null') \
                 ON CONFLICT (ns, key) DO NOTHING"
            ),
            select_for_update: format!(
                "SELECT value FROM {kv} WHERE ns = $1 AND key = $2 FOR UPDATE"
            ),
            overwrite: format!("UPDATE {kv} SET value = $3 WHERE ns = $1 AND key = $2"),
            rows_first: format!("SELECT ns, key, value FROM {kv} ORDER BY ns, key LIMIT $1"),
            rows_after: format!(
                "SELECT ns, key, value FROM {kv} WHERE (ns, key) > ($1, $2) \
                 ORDER BY ns, key LIMIT $3"
            ),
        }
    }
}
