//! Discovery plus loading every tool (ready to call) on the shared workloads, with the
//! verdict cache present (warm) and absent (cold).

mod common;

fn main() {
    divan::main();
}

#[divan::bench(args = [133, 1000], sample_count = 30)]
fn warm(bencher: divan::Bencher, n: usize) {
    let cache = tempfile::tempdir().expect("temp dir");
    common::host(n, cache.path());
    bencher.bench_local(|| common::host(n, cache.path()));
}

#[divan::bench(args = [133, 1000], sample_count = 30)]
fn cold(bencher: divan::Bencher, n: usize) {
    common::workload(n);
    bencher
        .with_inputs(|| tempfile::tempdir().expect("temp dir"))
        .bench_local_values(|cache| common::host(n, cache.path()));
}
