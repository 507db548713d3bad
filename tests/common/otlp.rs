//! A real OTLP/HTTP trace receiver for the tests: a small HTTP/1.1 server on a free
//! loopback port that decodes each `POST /v1/traces` body as an `ExportTraceServiceRequest`
//! (the `opentelemetry-proto` types) and keeps the spans, so a test can wait for the spans
//! it expects (an event: the condition variable wakes on every export).

use opentelemetry_proto::tonic::collector::trace::v1::ExportTraceServiceRequest;
use opentelemetry_proto::tonic::common::v1::any_value::Value as Any;
use prost::Message;
use std::collections::HashMap;
use std::io::{BufRead, BufReader, Read, Write};
use std::net::{TcpListener, TcpStream};
use std::sync::{Arc, Condvar, Mutex};
use std::time::{Duration, Instant};

/// One received span, flattened.
#[derive(Debug, Clone)]
pub struct Span {
    pub name: String,
    /// The resource's `service.name`.
    pub service: String,
    pub trace_id: String,
    pub span_id: String,
    /// Empty for a root span.
    pub parent_span_id: String,
    /// OTLP's `SpanKind`: 2 server, 3 client, 1 internal.
    pub kind: i32,
    pub attributes: HashMap<String, String>,
    /// Every attribute key as the span carried it, in order (a key recorded twice is here
    /// twice; `attributes` keeps one).
    pub attribute_keys: Vec<String>,
}

impl Span {
    /// The attribute `key`, as text.
    pub fn attr(&self, key: &str) -> Option<&str> {
        self.attributes.get(key).map(String::as_str)
    }
}

type Received = Arc<(Mutex<Vec<Span>>, Condvar)>;

/// The receiver; it serves until the test process ends.
pub struct Receiver {
    addr: String,
    received: Received,
}

impl Receiver {
    pub fn start() -> Self {
        let listener = TcpListener::bind("127.0.0.1:0").unwrap();
        let addr = listener.local_addr().unwrap().to_string();
        let received: Received = Arc::default();
        let shared = received.clone();
        std::thread::spawn(move || {
            for stream in listener.incoming().flatten() {
                let shared = shared.clone();
                std::thread::spawn(move || serve(stream, &shared));
            }
        });
        Self { addr, received }
    }

    /// The base URL (`http://127.0.0.1:PORT`), as `[telemetry] otlp_endpoint` takes it.
    pub fn endpoint(&self) -> String {
        format!("http://{}", self.addr)
    }

    /// The spans once `done` holds for them (at most 60 s: a liveness bound, not a timing).
    pub fn wait_for(&self, mut done: impl FnMut(&[Span]) -> bool) -> Vec<Span> {
        let (spans, changed) = &*self.received;
        let deadline = Instant::now() + Duration::from_secs(60);
        let mut guard = spans.lock().unwrap();
        while !done(&guard) {
            let left = deadline.saturating_duration_since(Instant::now());
            assert!(
                !left.is_zero(),
                "the expected spans never came: {:#?}",
                *guard
            );
            guard = changed.wait_timeout(guard, left).unwrap().0;
        }
        guard.clone()
    }
}

fn serve(stream: TcpStream, received: &Received) {
    let mut reader = BufReader::new(stream);
    loop {
        let mut line = String::new();
        if reader.read_line(&mut line).unwrap_or(0) == 0 {
            return;
        }
        let mut length = 0;
        loop {
            let mut header = String::new();
            if reader.read_line(&mut header).unwrap_or(0) == 0 {
                return;
            }
            let header = header.trim_end();
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
        let spans = ExportTraceServiceRequest::decode(body.as_slice())
            .map(flatten)
            .unwrap_or_default();
        {
            let (all, changed) = &**received;
            all.lock().unwrap().extend(spans);
            changed.notify_all();
        }
        let answer =
            "HTTP/1.1 200 OK\r\nContent-Type: application/x-protobuf\r\nContent-Length: 0\r\n\r\n";
        if reader.get_mut().write_all(answer.as_bytes()).is_err() {
            return;
        }
    }
}

fn flatten(request: ExportTraceServiceRequest) -> Vec<Span> {
    let mut out = Vec::new();
    for resource_spans in request.resource_spans {
        let service = resource_spans
            .resource
            .iter()
            .flat_map(|r| &r.attributes)
            .find(|kv| kv.key == "service.name")
            .and_then(|kv| text(kv.value.as_ref()?.value.as_ref()?))
            .unwrap_or_default();
        for scope in resource_spans.scope_spans {
            for span in scope.spans {
                out.push(Span {
                    name: span.name,
                    service: service.clone(),
                    trace_id: hex(&span.trace_id),
                    span_id: hex(&span.span_id),
                    parent_span_id: hex(&span.parent_span_id),
                    kind: span.kind,
                    attribute_keys: span.attributes.iter().map(|kv| kv.key.clone()).collect(),
                    attributes: span
                        .attributes
                        .iter()
                        .filter_map(|kv| {
                            Some((kv.key.clone(), text(kv.value.as_ref()?.value.as_ref()?)?))
                        })
                        .collect(),
                });
            }
        }
    }
    out
}

fn text(value: &Any) -> Option<String> {
    match value {
        Any::StringValue(s) => Some(s.clone()),
        Any::IntValue(i) => Some(i.to_string()),
        Any::BoolValue(b) => Some(b.to_string()),
        Any::DoubleValue(d) => Some(d.to_string()),
        _ => None,
    }
}

fn hex(bytes: &[u8]) -> String {
    bytes.iter().map(|b| format!("{b:02x}")).collect()
}
