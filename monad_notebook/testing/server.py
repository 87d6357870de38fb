"""The fake OpenAI-compatible HTTP server, for offline tests that go through real HTTP.

It speaks the OpenAI wire format (streaming chat completions with tool calls and usage,
embeddings, model list; the payloads are built in ``wire.py``) and can be told to fail: rate
limits, server errors, context-length errors, slow or broken streams. A path it does not route
gets llama.cpp's 404, and a model outside ``known_models`` OpenAI's ``model_not_found``.
"""

from __future__ import annotations

import base64
import json
import struct
import sys
import threading
import time
from collections import deque
from collections.abc import Callable, Iterable, Iterator
from dataclasses import dataclass
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

from monad_notebook.daemon import Daemon
from monad_notebook.provider import ChatResponse
from monad_notebook.testing.scripted import approximate_prompt_tokens, estimate_tokens, text
from monad_notebook.testing.wire import chunks, completion, error, hash_vector, no_such_path


@dataclass
class RecordedRequest:
    method: str
    path: str
    headers: dict[str, str]
    body: Any  # parsed JSON, or None


@dataclass
class _Fault:
    status: int
    body: dict[str, Any]
    retry_after: float | None


_DEFAULT_MESSAGES = {
    429: "Rate limit reached for requests (fake).",
    500: "The server had an error while processing your request (fake).",
    503: "The engine is currently overloaded (fake).",
}
_ROUTES = ("/v1/chat/completions", "/v1/embeddings")


class FakeOpenAIServer:
    """A fake OpenAI-compatible server on 127.0.0.1, for offline tests through real HTTP.

    Chat answers come from ``queue``; with nothing queued a chat request gets a 500 that says so
    (and lands in ``unscripted``), so a test that calls the model more than it meant fails loudly.
    Faults from ``fail`` are served first, to chat and embedding requests alike.

    Reported ``prompt_tokens`` are ``count_tokens(messages)``, plus ``count_tools(tools)`` when
    given: by default the server leaves the tool schemas out of its count, as llama.cpp's does.
    """

    def __init__(
        self,
        *,
        embedding_dims: int = 16,
        embed: Callable[[str], list[float]] | None = None,
        count_tokens: Callable[[list[dict[str, Any]]], int] = approximate_prompt_tokens,
        count_tools: Callable[[list[dict[str, Any]]], int] | None = None,
        require_key: str | None = None,
        known_models: Iterable[str] | None = None,
    ) -> None:
        self.embedding_dims = embedding_dims
        self.embed = embed
        self.count_tokens = count_tokens
        self.count_tools = count_tools
        self.require_key = require_key
        self.known_models = set(known_models) if known_models is not None else None
        self.chunk_delay = 0.0  # seconds between streamed chunks
        self.embedding_delay = 0.0  # seconds every embeddings request takes, as a remote model's would
        self.report_usage = True  # False: behave like servers that never send a usage chunk
        # "openai" / "anthropic": report the prefix shared with the previous chat request as cached,
        # under that provider's usage field, as a provider's prefix cache would
        self.prefix_cache: str | None = None
        self._previous_chat: dict[str, Any] | None = None
        self.log: list[RecordedRequest] = []
        self.unscripted: list[dict[str, Any]] = []
        self.disconnects = 0  # responses the client hung up on
        self._lock = threading.Lock()
        self._responses: deque[ChatResponse] = deque()
        self._faults: deque[_Fault] = deque()
        self._delays: deque[float] = deque()
        self._breaks: deque[int] = deque()
        self._httpd: ThreadingHTTPServer | None = None
        self._serving: Daemon | None = None

    # lifecycle
    def start(self) -> FakeOpenAIServer:
        handler = type("FakeOpenAIHandler", (_Handler,), {"fake": self})
        httpd = self._httpd = _QuietServer(("127.0.0.1", 0), handler)
        self._serving = Daemon("fake-openai", httpd.serve_forever, 0.02, stop=httpd.shutdown).start()
        return self

    def stop(self) -> None:
        if self._httpd is not None and self._serving is not None:
            self._serving.stop()
            self._serving.wait()
            self._httpd.server_close()
            self._httpd = self._serving = None

    def __enter__(self) -> FakeOpenAIServer:
        return self.start()

    def __exit__(self, *exc_info: object) -> None:
        self.stop()

    @property
    def base_url(self) -> str:
        if self._httpd is None:
            raise RuntimeError("FakeOpenAIServer is not running: use it as a context manager or call start()")
        return f"http://127.0.0.1:{self._httpd.server_address[1]}/v1"

    # scripting
    def queue(self, *responses: ChatResponse | str) -> None:
        """Answer the next chat requests with these, in order (a str is a plain text answer)."""
        with self._lock:
            self._responses.extend(text(r) if isinstance(r, str) else r for r in responses)

    def fail(
        self,
        status: int = 429,
        *,
        times: int = 1,
        retry_after: float | None = None,
        code: str | None = None,
        message: str | None = None,
    ) -> None:
        """Answer the next ``times`` POST requests with this HTTP error instead."""
        body = error(message or _DEFAULT_MESSAGES.get(status, f"Fake error {status}."), status=status, code=code)
        with self._lock:
            self._faults.extend(_Fault(status, body, retry_after) for _ in range(times))

    def recover(self) -> None:
        """Drop the errors still queued by :meth:`fail`: the endpoint is healthy again."""
        with self._lock:
            self._faults.clear()

    def fail_context_length(self, limit: int = 128_000) -> None:
        """Answer the next POST with OpenAI's own context-length error."""
        message = (
            f"This model's maximum context length is {limit} tokens. However, your messages resulted in "
            f"{limit + 1000} tokens. Please reduce the length of the messages."
        )
        self.fail(400, code="context_length_exceeded", message=message)

    def delay(self, seconds: float, *, times: int = 1) -> None:
        """Make the next ``times`` POST requests wait before their first byte."""
        with self._lock:
            self._delays.extend([seconds] * times)

    def break_stream_after(self, n_chunks: int) -> None:
        """Cut the next streamed answer off after ``n_chunks`` events, without finishing the body."""
        with self._lock:
            self._breaks.append(n_chunks)

    # inspection
    @property
    def requests(self) -> list[Any]:
        """Every POST body, parsed, in arrival order."""
        return [r.body for r in self.log if r.method == "POST"]

    @property
    def chat_requests(self) -> list[dict[str, Any]]:
        return [r.body for r in self.log if r.path.endswith("/chat/completions")]

    @property
    def embedding_requests(self) -> list[dict[str, Any]]:
        return [r.body for r in self.log if r.path.endswith("/embeddings")]

    @property
    def pending(self) -> int:
        """Queued chat answers not yet served."""
        return len(self._responses)

    def _take(self, queue: deque[Any]) -> Any:
        with self._lock:
            return queue.popleft() if queue else None


class _QuietServer(ThreadingHTTPServer):
    daemon_threads = True

    def handle_error(self, request: Any, client_address: Any) -> None:
        """A client hanging up (a timeout, an interrupt) is part of the script, not a server error."""
        if not isinstance(sys.exc_info()[1], ConnectionError):
            super().handle_error(request, client_address)


class _Handler(BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"
    fake: FakeOpenAIServer

    def log_message(self, format: str, *args: Any) -> None:
        """Quiet: test output is not the place for an access log."""

    def do_GET(self) -> None:
        self._record(None)
        if not self._authorized():
            return
        if self.path.rstrip("/") != "/v1/models":
            return self._json(404, no_such_path())
        models = sorted(self.fake.known_models or {"fake-model"})
        self._json(200, {"object": "list", "data": [{"id": m, "object": "model", "owned_by": "fake"} for m in models]})

    def do_POST(self) -> None:
        raw = self.rfile.read(int(self.headers.get("Content-Length") or 0))
        try:
            body = json.loads(raw or b"null")
        except json.JSONDecodeError:
            body = None
        self._record(body)
        if not self._authorized():
            return
        if self.path not in _ROUTES:
            return self._json(404, no_such_path())
        if not isinstance(body, dict):
            return self._json(400, error("The request body is not a JSON object.", status=400))
        model = body.get("model")
        if self.fake.known_models is not None and model not in self.fake.known_models:
            message = f"The model `{model}` does not exist or you do not have access to it."
            return self._json(404, error(message, status=404, code="model_not_found"))
        seconds = self.fake._take(self.fake._delays)
        if seconds:
            time.sleep(seconds)
        fault: _Fault | None = self.fake._take(self.fake._faults)
        if fault is not None:
            headers = {} if fault.retry_after is None else {"Retry-After": f"{fault.retry_after:g}"}
            return self._json(fault.status, fault.body, headers)
        try:
            if self.path == "/v1/chat/completions":
                return self._chat(body)
            return self._embeddings(body)
        except ConnectionError:
            self.fake.disconnects += 1
            self.close_connection = True

    def _record(self, body: Any) -> None:
        headers = {k.lower(): v for k, v in self.headers.items()}
        self.fake.log.append(RecordedRequest(self.command, self.path, headers, body))

    def _authorized(self) -> bool:
        key = self.fake.require_key
        if key is None or self.headers.get("Authorization") == f"Bearer {key}":
            return True
        self._json(401, error("Incorrect API key provided (fake).", status=401, code="invalid_api_key"))
        return False

    def _json(self, status: int, payload: Any, headers: dict[str, str] | None = None) -> None:
        data = json.dumps(payload).encode()
        self.send_response(status)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(data)))
        for name, value in (headers or {}).items():
            self.send_header(name, value)
        self.end_headers()
        self.wfile.write(data)

    def _chat(self, body: dict[str, Any]) -> None:
        response: ChatResponse | None = self.fake._take(self.fake._responses)
        if response is None:
            self.fake.unscripted.append(body)
            message = "FakeOpenAIServer: no queued response for this chat request; call server.queue(...) first."
            return self._json(500, error(message))
        usage = self._usage(body, response)
        if not body.get("stream"):
            return self._json(200, completion(body, response, usage if self.fake.report_usage else None))
        include_usage = self.fake.report_usage and bool((body.get("stream_options") or {}).get("include_usage"))
        self._stream(chunks(body, response, usage if include_usage else None))

    def _usage(self, body: dict[str, Any], response: ChatResponse) -> dict[str, Any]:
        if response.usage is not None:
            prompt, completion = response.usage.prompt_tokens, response.usage.completion_tokens
        else:
            prompt = self.fake.count_tokens(body.get("messages") or [])
            if self.fake.count_tools is not None and body.get("tools"):
                prompt += self.fake.count_tools(body["tools"])
            completion = estimate_tokens(response.content + "".join(c.arguments for c in response.tool_calls))
        usage: dict[str, Any] = {"prompt_tokens": prompt, "completion_tokens": completion}
        usage["total_tokens"] = prompt + completion
        cached = min(prompt, self._cached_prefix(body))
        if self.fake.prefix_cache == "openai":
            usage["prompt_tokens_details"] = {"cached_tokens": cached}
        elif self.fake.prefix_cache == "anthropic":
            usage["cache_read_input_tokens"] = cached
        return usage

    def _cached_prefix(self, body: dict[str, Any]) -> int:
        """Tokens of the leading messages this request shares with the previous one (same tools)."""
        with self.fake._lock:
            previous, self.fake._previous_chat = self.fake._previous_chat, body
        if previous is None or previous.get("tools") != body.get("tools"):
            return 0
        shared = []
        for new, old in zip(body.get("messages") or [], previous.get("messages") or [], strict=False):
            if new != old:
                break
            shared.append(new)
        return self.fake.count_tokens(shared) if shared else 0

    def _stream(self, events: Iterator[dict[str, Any]]) -> None:
        cut = self.fake._take(self.fake._breaks)
        self.send_response(200)
        self.send_header("Content-Type", "text/event-stream")
        self.send_header("Cache-Control", "no-cache")
        self.send_header("Transfer-Encoding", "chunked")
        self.end_headers()
        for sent, event in enumerate(events):
            if cut is not None and sent >= cut:
                self.close_connection = True
                return
            self._write_chunk(f"data: {json.dumps(event)}\n\n".encode())
            if self.fake.chunk_delay:
                time.sleep(self.fake.chunk_delay)
        self._write_chunk(b"data: [DONE]\n\n")
        self.wfile.write(b"0\r\n\r\n")

    def _write_chunk(self, data: bytes) -> None:
        self.wfile.write(f"{len(data):x}\r\n".encode() + data + b"\r\n")
        self.wfile.flush()

    def _embeddings(self, body: dict[str, Any]) -> None:
        if self.fake.embedding_delay:
            time.sleep(self.fake.embedding_delay)
        inputs = body.get("input")
        texts = [inputs] if isinstance(inputs, str) else list(inputs or [])
        dims = int(body.get("dimensions") or self.fake.embedding_dims)
        vectors = [self.fake.embed(t) if self.fake.embed else hash_vector(str(t), dims) for t in texts]
        as_base64 = body.get("encoding_format") == "base64"
        data = [
            {
                "object": "embedding",
                "index": i,
                "embedding": base64.b64encode(struct.pack(f"<{len(v)}f", *v)).decode() if as_base64 else v,
            }
            for i, v in enumerate(vectors)
        ]
        tokens = sum(estimate_tokens(str(t)) for t in texts)
        usage = {"prompt_tokens": tokens, "total_tokens": tokens}
        self._json(200, {"object": "list", "data": data, "model": body.get("model"), "usage": usage})
