"""A local OpenAI-compatible chat-completions server for tests and benchmarks (127.0.0.1 only).

Behaviour is chosen by the requested model name:
  good       a structured 13-section answer (it leaves some files out: the guard must add them)
  flaky      429 with retry-after-ms on the first request of each prompt, then good
  down       always 500
  slow       sleeps past the client's timeout
  empty      an empty completion
  garbage    an answer with no section headings
  denied     401
  latency    good, after `latency` seconds (for the --jobs benchmark)
"""

from __future__ import annotations

import contextlib
import json
import threading
import time
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

GOOD = """## Active Task
(see below)
## Goal
Fix the bug.
## Constraints & Preferences
None
## Completed Actions
1. Ran the tests.
## Active State
Tests run.
## In Progress
None
## Blocked
None
## Key Decisions
None
## Resolved Questions
None
## Pending User Asks
None
## Relevant Files
- app.py
## Remaining Work
None
## Critical Context
None"""


class Server:
    def __init__(self, latency: float = 0.0):
        self.requests: list[dict] = []
        self.latency = latency
        self.lock = threading.Lock()
        self.seen: set[str] = set()
        outer = self

        class Handler(BaseHTTPRequestHandler):
            def log_message(self, *a):
                pass

            def do_POST(self):
                body = json.loads(self.rfile.read(int(self.headers["Content-Length"])))
                with outer.lock:
                    outer.requests.append(body)
                model = body["model"]
                key = model + body["messages"][-1]["content"]
                if model == "denied":
                    return self._send(401, {"error": {"message": "bad key", "type": "invalid_request_error"}})
                if model == "down":
                    return self._send(500, {"error": {"message": "boom"}})
                if model == "flaky":
                    with outer.lock:
                        first = key not in outer.seen
                        outer.seen.add(key)
                    if first:
                        return self._send(429, {"error": {"message": "slow down"}}, {"retry-after-ms": "10"})
                if model == "slow":
                    time.sleep(3)
                if model == "latency":
                    time.sleep(outer.latency)
                content = {"empty": "", "garbage": "I think it went fine, mostly."}.get(model, GOOD)
                self._send(200, {"id": "x", "object": "chat.completion", "created": 0, "model": model,
                                 "choices": [{"index": 0, "finish_reason": "stop", "message": {"role": "assistant", "content": content}}],
                                 "usage": {"prompt_tokens": 1, "completion_tokens": 1, "total_tokens": 2}})

            def _send(self, code, obj, headers=None):
                data = json.dumps(obj).encode()
                self.send_response(code)
                self.send_header("Content-Type", "application/json")
                self.send_header("Content-Length", str(len(data)))
                for k, v in (headers or {}).items():
                    self.send_header(k, v)
                self.end_headers()
                with contextlib.suppress(BrokenPipeError, ConnectionResetError):  # the client gave up (timeout test)
                    self.wfile.write(data)

        self.httpd = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.url = f"http://127.0.0.1:{self.httpd.server_address[1]}/v1"
        self.thread = threading.Thread(target=self.httpd.serve_forever, daemon=True)

    def __enter__(self):
        self.thread.start()
        return self

    def __exit__(self, *exc):
        self.httpd.shutdown()
        self.httpd.server_close()
