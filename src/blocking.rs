//! Work that may block for a while (availability probes run while computing definitions)
//! called from async code must not hold up the other tasks of the caller's runtime.

/// Runs `work`; on a worker thread of a multi-threaded tokio runtime it runs under
/// `block_in_place`, which hands the worker's other tasks to another thread first. Elsewhere
/// (plain threads, the blocking pool, current-thread runtimes such as the VMs') it just runs.
pub(crate) fn off_async_worker<R>(work: impl FnOnce() -> R) -> R {
    match tokio::runtime::Handle::try_current() {
        Ok(handle) if handle.runtime_flavor() == tokio::runtime::RuntimeFlavor::MultiThread => {
            tokio::task::block_in_place(work)
        }
        _ => work(),
    }
}
