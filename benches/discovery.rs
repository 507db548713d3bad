//! Discovery plus loading every tool (ready to call) on the generated workloads, with the
//! verdict cache present (warm) and absent (cold).

mod common;

fn main() {
    divan::main();
}

#[divan::bench(args = [133, 1000], sample_count = 30)]
fn warm(bencher: divan::Bencher, n: usize) {
    let cache = tempfile::tempdir().expect("temp dir");
    let config = common::config(n, cache.path(), "off");
    let baseline = common::threads();
    common::build(n, cache.path(), &config);
    // Each start begins once the last one's host is gone: as a process start, with no
    // predecessor tearing down its VM on the other core.
    bencher
        .with_inputs(|| common::settle(baseline))
        .bench_local_values(|()| common::build(n, cache.path(), &config));
}

#[divan::bench(args = [133, 1000], sample_count = 30)]
fn cold(bencher: divan::Bencher, n: usize) {
    common::workload(n);
    let baseline = common::threads();
    bencher
        .with_inputs(|| {
            common::settle(baseline);
            let cache = tempfile::tempdir().expect("temp dir");
            let config = common::config(n, cache.path(), "off");
            (cache, config)
        })
        .bench_local_values(|(cache, config)| common::build(n, cache.path(), &config));
}

/// A reload after one tool file changed (what the watcher runs after its debounce): the
/// time until the new definitions are visible is this plus the debounce.
#[divan::bench(args = [133], sample_count = 30)]
fn reload(bencher: divan::Bencher, n: usize) {
    let cache = tempfile::tempdir().expect("temp dir");
    let host = common::host(n, cache.path());
    let dir = common::workload(n).join("tools-lua");
    let file = std::fs::read_dir(&dir)
        .expect("workload dir")
        .filter_map(|e| e.ok())
        .map(|e| e.path())
        .find(|p| {
            p.file_name()
                .is_some_and(|f| f.to_string_lossy().starts_with("syn_0000"))
        })
        .expect("a tool file");
    let original = std::fs::read_to_string(&file).expect("read");
    let mut flip = false;
    bencher.bench_local(|| {
        flip = !flip;
        let text = if flip {
            format!("{original}\n-- edited\n")
        } else {
            original.clone()
        };
        std::fs::write(&file, text).expect("write");
        host.reload()
    });
    std::fs::write(&file, original).expect("restore");
}
