"""A fake language model server on 127.0.0.1: real HTTP, scripted answers, every request recorded.

It speaks just enough of the OpenAI Chat Completions and Anthropic Messages APIs for the official SDKs
to parse its answers, and can also answer badly: errors, malformed bodies, or never (until the client
hangs up, which it records).
"""

from __future__ import annotations

import json
import select
import socket
import threading
import time
from collections import deque
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

# A hanging reply gives up after this long even if the client never hangs up (so tests always end).
HANG_LIMIT_S = 30.0


@dataclass
class Reply:
    """One scripted answer: a status and body, after `delay_s`; or, with `hang`, no answer at all."""

    body: Any = None
    status: int = 200
    headers: dict[str, str] = field(default_factory=dict)
    delay_s: float = 0.0
    hang: bool = False


@dataclass
class Seen:
    """A request the server received."""

    path: str
    headers: dict[str, str]
    body: Any


def openai_body(
    *texts: str,
    finish_reason: str = "stop",
    prompt_tokens: int = 100,
    completion_tokens: int = 50,
    **usage: Any,
) -> dict[str, Any]:
    """A chat completion with one choice per text."""
    return {
        "id": "chatcmpl-fake",
        "object": "chat.completion",
        "created": int(time.time()),
        "model": "fake-model",
        "choices": [
            {
                "index": i,
                "message": {"role": "assistant", "content": text},
                "finish_reason": finish_reason,
            }
            for i, text in enumerate(texts)
        ],
        "usage": {
            "prompt_tokens": prompt_tokens,
            "completion_tokens": completion_tokens,
            "total_tokens": prompt_tokens + completion_tokens,
            **usage,
        },
    }


def anthropic_body(
    text: str,
    stop_reason: str = "end_turn",
    thinking: str | None = None,
    input_tokens: int = 100,
    output_tokens: int = 50,
) -> dict[str, Any]:
    """A Messages API answer with one text block (after a thinking block when given)."""
    content: list[dict[str, Any]] = []
    if thinking is not None:
        content.append({"type": "thinking", "thinking": thinking, "signature": "sig"})
    content.append({"type": "text", "text": text})
    return {
        "id": "msg_fake",
        "type": "message",
        "role": "assistant",
        "model": "fake-claude",
        "content": content,
        "stop_reason": stop_reason,
        "stop_sequence": None,
        "usage": {"input_tokens": input_tokens, "output_tokens": output_tokens},
    }


class FakeLLMServer:
    """Answers POSTs from `responder` when it has an answer for the request, else from a script of
    replies (then `default`, else HTTP 500)."""

    def __init__(self) -> None:
        self.responder: Callable[[Seen], Reply | None] | None = None
        self.script: deque[Reply] = deque()
        self.default: Reply | None = None
        self.seen: list[Seen] = []
        self.hangups = 0
        self.active = 0
        self.max_active = 0
        self._lock = threading.Lock()
        self._stopping = threading.Event()
        self._server = ThreadingHTTPServer(("127.0.0.1", 0), self._handler_class())
        self._server.daemon_threads = True

    @property
    def url(self) -> str:
        """The server's root URL."""
        host, port = self._server.server_address[:2]
        return f"http://{host}:{port}"

    def push(self, *replies: Reply) -> None:
        """Queue replies for the next requests, in order."""
        self.script.extend(replies)

    def _next(self, seen: Seen) -> Reply:
        answer = self.responder(seen) if self.responder is not None else None
        if answer is not None:
            return answer
        with self._lock:
            if self.script:
                return self.script.popleft()
        return self.default or Reply({"error": {"message": "the fake server has no scripted reply"}}, 500)

    def _handler_class(self) -> type[BaseHTTPRequestHandler]:
        server = self

        class Handler(BaseHTTPRequestHandler):
            protocol_version = "HTTP/1.1"

            def log_message(self, format: str, *args: Any) -> None:
                return

            def do_POST(self) -> None:
                raw = self.rfile.read(int(self.headers.get("content-length", 0)))
                try:
                    body = json.loads(raw)
                except json.JSONDecodeError:
                    body = raw.decode(errors="replace")
                seen = Seen(self.path, {k.lower(): v for k, v in self.headers.items()}, body)
                with server._lock:
                    server.seen.append(seen)
                    server.active += 1
                    server.max_active = max(server.max_active, server.active)
                try:
                    self._answer(server._next(seen))
                finally:
                    with server._lock:
                        server.active -= 1

            def _answer(self, reply: Reply) -> None:
                if reply.hang:
                    self._wait_for_hangup()
                    self.close_connection = True
                    return
                time.sleep(reply.delay_s)
                if isinstance(reply.body, (bytes, str)):
                    payload = reply.body.encode() if isinstance(reply.body, str) else reply.body
                    content_type = "text/plain"
                else:
                    payload, content_type = json.dumps(reply.body).encode(), "application/json"
                self.send_response(reply.status)
                self.send_header("content-type", content_type)
                self.send_header("content-length", str(len(payload)))
                for name, value in reply.headers.items():
                    self.send_header(name, value)
                self.end_headers()
                self.wfile.write(payload)

            def _wait_for_hangup(self) -> None:
                deadline = time.monotonic() + HANG_LIMIT_S
                while time.monotonic() < deadline and not server._stopping.is_set():
                    readable, _, _ = select.select([self.connection], [], [], 0.05)
                    if readable and self.connection.recv(1, socket.MSG_PEEK) == b"":
                        with server._lock:
                            server.hangups += 1
                        return

        return Handler

    @contextmanager
    def running(self) -> Iterator[FakeLLMServer]:
        """Serve in a background thread for the duration of the block."""
        thread = threading.Thread(target=self._server.serve_forever, daemon=True)
        thread.start()
        try:
            yield self
        finally:
            self._stopping.set()
            self._server.shutdown()
            self._server.server_close()
            thread.join()
