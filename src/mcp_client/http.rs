//! The streamable-HTTP client: rmcp's reqwest client, with every SSE event screened before
//! rmcp parses it, as a stdio server's messages are ([`super::stdio`]): rmcp drops an event
//! it cannot parse, and its request waited for its timeout. Here
//! - a `tools/list` answer is screened tool by tool ([`super::screen`]);
//! - an answer nested deeper than rmcp can parse becomes an error answer to its request.
//!
//! (A plain JSON answer rmcp cannot parse is already an error of its own.)

use super::error::{Unreachable, Unreadable};
use super::screen;
use super::stdio::Notes;
use futures::StreamExt;
use futures::stream::BoxStream;
use parking_lot::Mutex;
use reqwest::header::{HeaderName, HeaderValue};
use rmcp::model::{
    ClientJsonRpcMessage, ClientRequest, JsonRpcMessage, RequestId, ServerJsonRpcMessage,
};
use rmcp::transport::streamable_http_client::{
    StreamableHttpClient, StreamableHttpError, StreamableHttpPostResponse,
    StreamableHttpResponseLimits,
};
use sse_stream::{Error as SseError, Sse};
use std::collections::{HashMap, HashSet};
use std::sync::Arc;

/// Below this nesting an answer is left to rmcp unread (serde_json's limit is 128, the
/// envelope included): the common case costs one scan, not a second parse.
const SURELY_READABLE_DEPTH: usize = 120;

/// Most `tools/list` requests remembered as unanswered.
const MAX_OPEN_LISTINGS: usize = 64;

type Events = BoxStream<'static, Result<Sse, SseError>>;

/// rmcp's reqwest client with the events screened.
#[derive(Clone)]
pub(super) struct ScreeningClient {
    inner: reqwest::Client,
    screen: Arc<Screen>,
}

/// What screening needs to know.
struct Screen {
    /// Ids of our `tools/list` requests not answered yet.
    listings: Mutex<HashSet<RequestId>>,
    notes: Arc<Notes>,
}

impl ScreeningClient {
    /// A client like rmcp's default one (no idle pooling), without redirects (rmcp's
    /// same-origin policy is its own; a redirect is returned as the answer instead).
    pub(super) fn new(notes: Arc<Notes>) -> Result<Self, Unreachable> {
        let inner = reqwest::Client::builder()
            .pool_max_idle_per_host(0)
            .redirect(reqwest::redirect::Policy::none())
            .build()
            .map_err(Unreachable::HttpClient)?;
        Ok(Self {
            inner,
            screen: Arc::new(Screen {
                listings: Mutex::new(HashSet::new()),
                notes,
            }),
        })
    }
}

impl Screen {
    /// Notes a `tools/list` request going out.
    fn sent(&self, message: &ClientJsonRpcMessage) {
        if let JsonRpcMessage::Request(request) = message
            && let ClientRequest::ListToolsRequest(_) = &request.request
        {
            let mut listings = self.listings.lock();
            if listings.len() >= MAX_OPEN_LISTINGS {
                listings.clear();
            }
            listings.insert(request.id.clone());
        }
    }

    /// The events of `stream`, screened.
    fn events(self: &Arc<Self>, stream: Events) -> Events {
        let screen = self.clone();
        stream
            .map(move |event| {
                event.map(|mut sse| {
                    if let Some(data) = sse.data.take() {
                        sse.data = Some(screen.event(data));
                    }
                    sse
                })
            })
            .boxed()
    }

    /// One event's data, as rmcp is to see it.
    fn event(&self, data: String) -> String {
        if self.listings.lock().is_empty() && screen::depth(&data) < SURELY_READABLE_DEPTH {
            return data;
        }
        let Ok(head) = serde_json::from_str::<screen::Head<'_>>(&data) else {
            return data;
        };
        let answer_to = head.answer_to();
        let is_listing = answer_to
            .as_ref()
            .is_some_and(|id| self.listings.lock().remove(id));
        if is_listing && let (Some(result), Some(id)) = (head.result, &answer_to) {
            let screened = screen::listing_answer(id, result.get())
                .and_then(|(text, left_out)| readable(&text).map(|()| (text, left_out)));
            return match screened {
                Ok((text, left_out)) => {
                    self.notes.add_left_out(left_out);
                    text
                }
                Err(reason) => screen::error_answer(id, &reason.to_string()),
            };
        }
        match (readable(&data), answer_to) {
            (Err(reason), Some(id)) => {
                tracing::warn!(target: "toolhost::mcp_client", "{reason}");
                screen::error_answer(&id, &reason.to_string())
            }
            _ => data,
        }
    }
}

/// Whether rmcp can parse `text`; otherwise why not.
fn readable(text: &str) -> Result<(), Unreadable> {
    serde_json::from_str::<ServerJsonRpcMessage>(text)
        .map(|_| ())
        .map_err(Unreadable::Answer)
}

type PostResult = Result<StreamableHttpPostResponse, StreamableHttpError<reqwest::Error>>;

impl ScreeningClient {
    fn screened(&self, response: PostResult) -> PostResult {
        match response {
            Ok(StreamableHttpPostResponse::Sse(events, session)) => Ok(
                StreamableHttpPostResponse::Sse(self.screen.events(events), session),
            ),
            other => other,
        }
    }
}

impl StreamableHttpClient for ScreeningClient {
    type Error = reqwest::Error;

    async fn post_message(
        &self,
        uri: Arc<str>,
        message: ClientJsonRpcMessage,
        session_id: Option<Arc<str>>,
        auth_header: Option<String>,
        custom_headers: HashMap<HeaderName, HeaderValue>,
    ) -> PostResult {
        self.screen.sent(&message);
        let response = self
            .inner
            .post_message(uri, message, session_id, auth_header, custom_headers)
            .await;
        self.screened(response)
    }

    async fn post_message_with_response_limits(
        &self,
        uri: Arc<str>,
        message: ClientJsonRpcMessage,
        session_id: Option<Arc<str>>,
        auth_header: Option<String>,
        custom_headers: HashMap<HeaderName, HeaderValue>,
        limits: StreamableHttpResponseLimits,
    ) -> PostResult {
        self.screen.sent(&message);
        let response = self
            .inner
            .post_message_with_response_limits(
                uri,
                message,
                session_id,
                auth_header,
                custom_headers,
                limits,
            )
            .await;
        self.screened(response)
    }

    async fn delete_session(
        &self,
        uri: Arc<str>,
        session_id: Arc<str>,
        auth_header: Option<String>,
        custom_headers: HashMap<HeaderName, HeaderValue>,
    ) -> Result<(), StreamableHttpError<Self::Error>> {
        self.inner
            .delete_session(uri, session_id, auth_header, custom_headers)
            .await
    }

    async fn get_stream(
        &self,
        uri: Arc<str>,
        session_id: Option<Arc<str>>,
        last_event_id: Option<String>,
        auth_header: Option<String>,
        custom_headers: HashMap<HeaderName, HeaderValue>,
    ) -> Result<Events, StreamableHttpError<Self::Error>> {
        let events = self
            .inner
            .get_stream(uri, session_id, last_event_id, auth_header, custom_headers)
            .await?;
        Ok(self.screen.events(events))
    }

    async fn get_stream_with_max_sse_event_size(
        &self,
        uri: Arc<str>,
        session_id: Option<Arc<str>>,
        last_event_id: Option<String>,
        auth_header: Option<String>,
        custom_headers: HashMap<HeaderName, HeaderValue>,
        max_sse_event_size: usize,
    ) -> Result<Events, StreamableHttpError<Self::Error>> {
        let events = self
            .inner
            .get_stream_with_max_sse_event_size(
                uri,
                session_id,
                last_event_id,
                auth_header,
                custom_headers,
                max_sse_event_size,
            )
            .await?;
        Ok(self.screen.events(events))
    }
}
