//! `call_echo` with telemetry on (`call_echo_us_telemetry`, beside `call_echo_us` of
//! benches/calls.rs): the same echo call through the pipeline while every span is exported
//! over OTLP/HTTP to a local receiver and the metrics go to a Prometheus recorder. Its own
//! process: the subscriber and the recorder are process-wide.

mod common;

use opentelemetry::trace::TracerProvider as _;
use opentelemetry_otlp::WithExportConfig;
use std::io::{BufRead, BufReader, Read, Write};
use std::net::TcpListener;
use toolhost::CallContext;
use tracing_subscriber::layer::SubscriberExt;

fn main() {
    let endpoint = sink();
    // reqwest is built without a crypto provider (as `serve` does: ring).
    let _ = rustls::crypto::ring::default_provider().install_default();
    let exporter = opentelemetry_otlp::SpanExporter::builder()
        .with_http()
        .with_protocol(opentelemetry_otlp::Protocol::HttpBinary)
        .with_endpoint(format!("{endpoint}/v1/traces"))
        .build()
        .expect("exporter");
    let provider = opentelemetry_sdk::trace::SdkTracerProvider::builder()
        .with_batch_exporter(exporter)
        .build();
    let layer = tracing_subscriber::Layer::with_filter(
        tracing_opentelemetry::layer().with_tracer(provider.tracer("bench")),
        tracing_subscriber::filter::Targets::new()
            .with_target("toolhost::span", tracing::Level::TRACE),
    );
    tracing::subscriber::set_global_default(tracing_subscriber::registry().with(layer))
        .expect("subscriber");
    metrics_exporter_prometheus::PrometheusBuilder::new()
        .install_recorder()
        .expect("recorder");
    toolhost::enable_metrics();
    divan::main();
    let _ = provider.shutdown();
}

/// A local OTLP/HTTP receiver that answers every export with 200 (what a collector on the
/// same machine costs the exporter, not what it does with the spans).
fn sink() -> String {
    let listener = TcpListener::bind("127.0.0.1:0").expect("bind");
    let endpoint = format!("http://{}", listener.local_addr().expect("addr"));
    std::thread::spawn(move || {
        for stream in listener.incoming().flatten() {
            std::thread::spawn(move || {
                let mut reader = BufReader::new(stream);
                loop {
                    let mut length = 0usize;
                    let mut line = String::new();
                    if reader.read_line(&mut line).unwrap_or(0) == 0 {
                        return;
                    }
                    loop {
                        line.clear();
                        if reader.read_line(&mut line).unwrap_or(0) == 0 {
                            return;
                        }
                        let header = line.trim_end();
                        if header.is_empty() {
                            break;
                        }
                        if let Some((name, value)) = header.split_once(':')
                            && name.eq_ignore_ascii_case("content-length")
                        {
                            length = value.trim().parse().unwrap_or(0);
                        }
                    }
                    let mut body = vec![0; length];
                    if reader.read_exact(&mut body).is_err() {
                        return;
                    }
                    let answer = "HTTP/1.1 200 OK\r\nContent-Length: 0\r\n\r\n";
                    if reader.get_mut().write_all(answer.as_bytes()).is_err() {
                        return;
                    }
                }
            });
        }
    });
    endpoint
}

#[divan::bench]
fn call_echo_telemetry(bencher: divan::Bencher) {
    let cache = tempfile::tempdir().expect("temp dir");
    let host = common::host(133, cache.path());
    let args = common::bench_calls(133)["plain_args"].clone();
    let runtime = tokio::runtime::Builder::new_current_thread()
        .build()
        .expect("runtime");
    let ctx = CallContext::default();
    bencher.bench_local(|| runtime.block_on(host.handle_function_call("echo", args.clone(), &ctx)));
}
