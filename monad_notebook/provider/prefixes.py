"""What an asymmetric embedder expects before a text: one prefix before a question, another before a passage.

EmbeddingGemma, nomic-embed-text, e5 and bge were trained with such prefixes (their model cards say
which); without them a question lands farther from the passage that answers it.
``models.embedding.queryPrefix`` and ``documentPrefix`` set them; left unset, the known prefixes of
the model's family apply, and a model of no known family gets none. A passage's vector depends on its
prefix, so vectors carry it in their model name (``vector_space``): a new passage prefix re-embeds the
history as a new model does, and a search never mixes the two. The question's prefix changes only the
question's vector, made anew for each search.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

_BGE_QUERY = "Represent this sentence for searching relevant passages: "
KNOWN_PREFIXES = (  # (family, as its name is spelt by Hugging Face, Ollama or a GGUF file; question; passage)
    (re.compile(r"embeddinggemma"), "task: search result | query: ", "title: none | text: "),
    (re.compile(r"nomic-embed-text"), "search_query: ", "search_document: "),
    (re.compile(r"(^|[/_:-])e5-(?!.*instruct)"), "query: ", "passage: "),  # the instruct models take a task
    (re.compile(r"bge-(small|base|large)(?!-zh)"), _BGE_QUERY, ""),  # English bge v1/v1.5; bge-m3 takes none
)


@dataclass(frozen=True)
class Prefixes:
    query: str = ""
    document: str = ""


NO_PREFIXES = Prefixes()


def prefixes_for(model: str, query: str | None = None, document: str | None = None) -> Prefixes:
    """The prefixes ``model`` gets: each one configured, else its family's known one, else none."""
    known = next(((q, d) for family, q, d in KNOWN_PREFIXES if family.search(model.lower())), ("", ""))
    return Prefixes(known[0] if query is None else query, known[1] if document is None else document)


def vector_space(model: str, document_prefix: str) -> str:
    """The model name vectors carry: the model's own, with the passage prefix they were made with if any."""
    return f"{model} | documents: {document_prefix!r}" if document_prefix else model


def as_documents(embedder: Any, texts: Sequence[str]) -> list[str]:
    """``texts`` as ``embedder`` expects passages (an embedder without ``document_prefix`` takes them as they are)."""
    prefix = getattr(embedder, "document_prefix", "")
    return [prefix + text for text in texts]


def as_question(embedder: Any, text: str) -> str:
    """``text`` as ``embedder`` expects a question."""
    return getattr(embedder, "query_prefix", "") + text
