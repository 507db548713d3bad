//! The store call boundary's telemetry (docs/telemetry.md): a span per operation
//! (`store.{op}`) and the `toolhost.store.operation.duration` / `toolhost.store.errors`
//! metrics by backend and operation, made here once for every backend.

use super::{StoreError, StoreInner};
use std::time::Instant;

impl StoreInner {
    /// Runs the store operation `op` (`get`, `set`, …) inside its span, timing it.
    pub(crate) fn observed<T>(
        &self,
        op: &'static str,
        run: impl FnOnce(&Self) -> Result<T, StoreError>,
    ) -> Result<T, StoreError> {
        let span = tracing::info_span!(
            target: crate::telemetry::SPAN_TARGET,
            "store",
            otel.name = %format_args!("store.{op}"),
            db.system.name = self.backend_name(),
            db.operation.name = op,
            error.type = tracing::field::Empty,
        );
        let _entered = span.enter();
        let metrics = crate::telemetry::metric::enabled();
        let started = metrics.then(Instant::now);
        let result = run(self);
        if result.is_err() {
            span.record("error.type", "store_error");
        }
        if let Some(started) = started {
            let backend = self.backend_name();
            metrics::histogram!(
                crate::telemetry::metric::STORE_DURATION,
                "backend" => backend,
                "operation" => op,
            )
            .record(started.elapsed().as_secs_f64());
            if result.is_err() {
                metrics::counter!(
                    crate::telemetry::metric::STORE_ERRORS,
                    "backend" => backend,
                    "operation" => op,
                )
                .increment(1);
            }
        }
        result
    }
}
