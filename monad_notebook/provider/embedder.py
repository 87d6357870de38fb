"""``OpenAIEmbedder``: vectors from an OpenAI-compatible ``/embeddings`` endpoint."""

from __future__ import annotations

from typing import Any

import openai

from monad_notebook.errors import EndpointError
from monad_notebook.provider.endpoint import Connection, EndpointClient


class OpenAIEmbedder(EndpointClient):
    """Embeddings from an OpenAI-compatible ``/embeddings`` endpoint, in batches the APIs accept.

    ``connection`` takes the ``Connection`` settings as keywords, as ``OpenAIChatModel`` does;
    the timeout is shorter by default.
    """

    batch_size = 256

    def __init__(self, model: str, *, dimensions: int | None = None, timeout: float = 30, **connection: Any) -> None:
        super().__init__(model, Connection(timeout=timeout, **connection))
        self.dimensions = dimensions

    def embed(self, texts: list[str]) -> list[list[float]]:
        """One vector per text, in order. Empty texts are sent as a space: OpenAI rejects empty input."""
        vectors: list[list[float]] = []
        for start in range(0, len(texts), self.batch_size):
            batch = [text or " " for text in texts[start : start + self.batch_size]]
            vectors.extend(self._endpoint.call(lambda client, batch=batch: self._embed_batch(client, batch)))
        return vectors

    def _embed_batch(self, client: openai.OpenAI, batch: list[str]) -> list[list[float]]:
        extra: dict[str, Any] = {} if self.dimensions is None else {"dimensions": self.dimensions}
        response = client.embeddings.create(model=self.name, input=batch, encoding_format="float", **extra)
        data = sorted(response.data, key=lambda item: item.index)
        if len(data) != len(batch):
            raise EndpointError(f"{self.base_url} returned {len(data)} embeddings for {len(batch)} texts")
        return [list(item.embedding) for item in data]
