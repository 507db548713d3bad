//! The floor of `serve`'s CPU per MCP call: what one round trip between two threads costs
//! when both have parked in between, as they do between an MCP client's calls (each comes
//! ≈0.5 ms after the last answer). A call goes from the runtime's thread to its VM's thread
//! and back (Lua never runs on the async threads), so `mcp_server_cpu_us_per_call` cannot
//! go below this hop, measured in the same run on the same machine.
//!
//! Not a divan bench: divan measures wall time in a tight loop, where neither thread ever
//! parks. This one sleeps between round trips and reads the process's CPU time (all threads,
//! `/proc/self/task/*/schedstat`, nanoseconds), subtracting what the sleeps alone cost.
//! Prints one JSON line:
//! - `thread_hop_cpu_us`: std channels (a futex each way), the bare floor;
//! - `thread_hop_tokio_cpu_us`: the pool's own shape without Lua — a current-thread runtime
//!   sends a job through a tokio channel to a thread running its own current-thread
//!   runtime (IO and timers enabled, as a VM's thread has), which answers on a oneshot.

use std::time::Duration;

/// Round trips measured (after as many again to warm up).
const ROUND_TRIPS: u32 = 2_000;
/// The pause before each round trip: long enough for both threads to park.
const GAP: Duration = Duration::from_micros(500);

fn main() {
    let Some(std_hop) = per_round_trip(std_round_trips) else {
        eprintln!("thread_hop: /proc/self/task/*/schedstat is not readable here");
        return;
    };
    let tokio_hop = per_round_trip(tokio_round_trips);
    let mut figures = serde_json::json!({ "thread_hop_cpu_us": round(std_hop) });
    if let Some(tokio_hop) = tokio_hop {
        figures["thread_hop_tokio_cpu_us"] = serde_json::json!(round(tokio_hop));
    }
    println!("{figures}");
}

fn round(us: f64) -> f64 {
    (us * 10.0).round() / 10.0
}

/// CPU µs per round trip of `run(hops)` (which returns the CPU ns its loop took), less the
/// same loop's cost without hops. The first run warms up.
fn per_round_trip(run: fn(bool) -> Option<u64>) -> Option<f64> {
    run(true)?;
    let with_hops = run(true)?;
    let sleeps_only = run(false)?;
    Some(with_hops.saturating_sub(sleeps_only) as f64 / f64::from(ROUND_TRIPS) / 1_000.0)
}

/// CPU time of every live thread of this process so far, in nanoseconds (a thread that has
/// ended is not counted: each run reads it before its peer ends).
fn process_cpu_ns() -> Option<u64> {
    let mut total = 0;
    for task in std::fs::read_dir("/proc/self/task").ok()? {
        let stat = std::fs::read_to_string(task.ok()?.path().join("schedstat")).ok()?;
        total += stat.split_whitespace().next()?.parse::<u64>().ok()?;
    }
    Some(total)
}

/// Sleeps and, with `hops`, sends a number to a parked thread and waits for it back; the
/// CPU ns of the loop.
fn std_round_trips(hops: bool) -> Option<u64> {
    let (to_peer, inbox) = std::sync::mpsc::channel::<u32>();
    let (to_caller, answers) = std::sync::mpsc::channel::<u32>();
    let peer = std::thread::spawn(move || {
        for value in inbox {
            if to_caller.send(value + 1).is_err() {
                break;
            }
        }
    });
    let start = process_cpu_ns();
    for value in 0..ROUND_TRIPS {
        std::thread::sleep(GAP);
        if hops {
            to_peer.send(value).expect("the peer is alive");
            answers.recv().expect("the peer answers");
        }
    }
    let spent = Some(process_cpu_ns()? - start?);
    drop(to_peer);
    peer.join().expect("the peer ends");
    spent
}

/// A job for the peer: a value and where to send its answer.
type Job = (u32, tokio::sync::oneshot::Sender<u32>);

/// As [`std_round_trips`], with the VM pool's shape: runtimes on both sides.
fn tokio_round_trips(hops: bool) -> Option<u64> {
    let (to_peer, mut inbox) = tokio::sync::mpsc::unbounded_channel::<Job>();
    let peer_runtime = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .expect("a runtime");
    let peer = std::thread::spawn(move || {
        let local = tokio::task::LocalSet::new();
        local.block_on(&peer_runtime, async move {
            while let Some((value, answer)) = inbox.recv().await {
                tokio::task::spawn_local(async move {
                    let _ = answer.send(value + 1);
                });
            }
        });
    });
    let runtime = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .expect("a runtime");
    let start = process_cpu_ns();
    runtime.block_on(async {
        for value in 0..ROUND_TRIPS {
            tokio::time::sleep(GAP).await;
            if hops {
                let (answer, answered) = tokio::sync::oneshot::channel();
                to_peer.send((value, answer)).expect("the peer is alive");
                answered.await.expect("the peer answers");
            }
        }
    });
    let spent = Some(process_cpu_ns()? - start?);
    drop(to_peer);
    peer.join().expect("the peer ends");
    spent
}
