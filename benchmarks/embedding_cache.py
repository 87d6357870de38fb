"""A caching front for an embeddings endpoint, so that a benchmark can be run again without embedding again.

    with cached_embeddings(base_url, cache_file) as (url, stats): ...

An OpenAI-compatible ``POST /embeddings`` in front of ``base_url``: each input text of 200
characters or more whose vector the cache file (SQLite, keyed by the request's model name and
the exact text, prefixes included) holds is answered from it; the rest go upstream in one
request, as they came, and the long ones are kept. Short texts (every question, every word
recall learns) always go upstream, so a search's latency is the endpoint's. Vectors are what the
endpoint returned, so what a search finds is unchanged; only the time to index is not the
endpoint's: ``stats`` counts the texts answered from the cache and those sent upstream, for the
report to say so. Used by ``fidelity.py --embedding-cache``.

``min_chars=1, questions=PREFIX`` keeps every text but those starting with the question prefix
(``locomo.py``, whose passages are short chat turns): a search's question still goes upstream.
"""

from __future__ import annotations

import hashlib
import json
import sqlite3
import struct
import threading
import urllib.error
import urllib.request
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path

MIN_CACHED_CHARS = 200


@dataclass
class CacheStats:
    hits: int = 0
    sent: int = 0


class VectorCache:
    """Vectors by (model, text) in one SQLite file, safe to share between the proxy's threads.

    A text is kept when it is ``min_chars`` long or more and does not start with ``questions``
    (a question prefix; "" keeps questions too).
    """

    def __init__(self, path: Path, min_chars: int = MIN_CACHED_CHARS, questions: str = "") -> None:
        self.min_chars, self.questions = min_chars, questions
        path.parent.mkdir(parents=True, exist_ok=True)
        self._db = sqlite3.connect(path, check_same_thread=False)
        self._db.execute("CREATE TABLE IF NOT EXISTS vectors (key BLOB PRIMARY KEY, vector BLOB NOT NULL)")
        self._lock = threading.Lock()

    def kept(self, text: str) -> bool:
        return len(text) >= self.min_chars and not (self.questions and text.startswith(self.questions))

    @staticmethod
    def key(model: str, text: str) -> bytes:
        return hashlib.sha256(f"{model}\0{text}".encode()).digest()

    def get(self, model: str, texts: list[str]) -> list[list[float] | None]:
        """Each text's kept vector, None for a short text or one not kept."""
        with self._lock:
            rows = [
                self._db.execute("SELECT vector FROM vectors WHERE key = ?", (self.key(model, t),)).fetchone()
                if self.kept(t)
                else None
                for t in texts
            ]
        return [None if row is None else list(struct.unpack(f"{len(row[0]) // 8}d", row[0])) for row in rows]

    def put(self, model: str, texts: list[str], vectors: list[list[float]]) -> None:
        pairs = zip(texts, vectors, strict=True)
        rows = [(self.key(model, t), struct.pack(f"{len(v)}d", *v)) for t, v in pairs if self.kept(t)]
        with self._lock:
            self._db.executemany("INSERT OR REPLACE INTO vectors VALUES (?, ?)", rows)
            self._db.commit()

    def close(self) -> None:
        self._db.close()


@contextmanager
def cached_embeddings(
    upstream: str, path: Path, *, min_chars: int = MIN_CACHED_CHARS, questions: str = ""
) -> Iterator[tuple[str, CacheStats]]:
    """A local base URL that answers ``/embeddings`` from ``path`` or from ``upstream``; its counts."""
    cache, stats, counting = VectorCache(path, min_chars, questions), CacheStats(), threading.Lock()

    class Handler(BaseHTTPRequestHandler):
        def do_POST(self) -> None:
            if not self.path.rstrip("/").endswith("/embeddings"):
                self.send_error(404, "only /embeddings is served")
                return
            request = json.loads(self.rfile.read(int(self.headers.get("Content-Length", 0))))
            texts = request["input"] if isinstance(request["input"], list) else [request["input"]]
            model = str(request.get("model", ""))
            vectors = cache.get(model, texts)
            missing = [i for i, v in enumerate(vectors) if v is None]
            if missing:
                try:
                    fresh = forward(upstream, {**request, "input": [texts[i] for i in missing]})
                except urllib.error.HTTPError as error:
                    self.send_error(error.code, error.reason)
                    return
                cache.put(model, [texts[i] for i in missing], fresh)
                for i, vector in zip(missing, fresh, strict=True):
                    vectors[i] = vector
            with counting:  # the indexer and a search may ask at once
                stats.hits += len(texts) - len(missing)
                stats.sent += len(missing)
            body = json.dumps(
                {
                    "object": "list",
                    "model": model,
                    "data": [{"object": "embedding", "index": i, "embedding": v} for i, v in enumerate(vectors)],
                    "usage": {"prompt_tokens": 0, "total_tokens": 0},
                }
            ).encode()
            self.send_response(200)
            self.send_header("Content-Type", "application/json")
            self.send_header("Content-Length", str(len(body)))
            self.end_headers()
            self.wfile.write(body)

        def log_message(self, *args: object) -> None:
            pass

    server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    try:
        yield f"http://127.0.0.1:{server.server_address[1]}/v1", stats
    finally:
        server.shutdown()
        server.server_close()
        cache.close()


def forward(upstream: str, request: dict) -> list[list[float]]:
    """The upstream endpoint's vectors for ``request``, in input order."""
    call = urllib.request.Request(
        upstream.rstrip("/") + "/embeddings",
        data=json.dumps({**request, "encoding_format": "float"}).encode(),
        headers={"Content-Type": "application/json"},
    )
    with urllib.request.urlopen(call, timeout=600) as response:
        data = json.loads(response.read())["data"]
    return [item["embedding"] for item in sorted(data, key=lambda item: item["index"])]
