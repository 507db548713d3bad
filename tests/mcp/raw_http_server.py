"""raw_server.py's answers over streamable HTTP (each answer one SSE event), for
tests/mcp_hostile_servers.rs. Prints `listening PORT` once it listens on 127.0.0.1."""
import json
import os
import sys
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import raw_server  # noqa: E402


class Handler(BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"

    def log_message(self, *args):
        pass

    def reply(self, status, body=b"", content_type=None):
        self.send_response(status)
        if content_type:
            self.send_header("Content-Type", content_type)
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)

    def do_POST(self):
        length = int(self.headers.get("Content-Length", "0"))
        message = json.loads(self.rfile.read(length))
        answer = raw_server.answer(message)
        if answer is None:
            self.reply(202)
            return
        event = "event: message\ndata: " + json.dumps(answer) + "\n\n"
        self.reply(200, event.encode(), "text/event-stream")

    def do_GET(self):
        self.reply(405)

    def do_DELETE(self):
        self.reply(200)


if __name__ == "__main__":
    server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    print(f"listening {server.server_address[1]}", flush=True)
    server.serve_forever()
