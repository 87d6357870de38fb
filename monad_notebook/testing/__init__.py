"""Offline stand-ins for a real model, for tests of monad itself and of your own notebooks.

Everything here is scripted or fake: no answer comes from a language model.

- ``ScriptedModel`` is a ChatModel that replays queued answers, records every call it gets,
  and fails loudly when called more often than scripted.
- ``FakeOpenAIServer`` is a real HTTP server on 127.0.0.1 that speaks the OpenAI wire format
  (streaming chat completions with tool calls and usage, embeddings, model list) and can be
  told to fail: rate limits, server errors, context-length errors, slow or broken streams.
- ``MemoryStore`` keeps a session in memory, answering every role of the Store protocol as
  the LanceDB store does (a contract test suite runs against both): ``Session(store=MemoryStore())``.
"""

from __future__ import annotations

from monad_notebook.testing.memory_store import MemoryStore
from monad_notebook.testing.scripted import (
    RecordedCall,
    ScriptedModel,
    approximate_prompt_tokens,
    text,
    tool_call,
    tool_calls,
)
from monad_notebook.testing.server import FakeOpenAIServer, RecordedRequest
from monad_notebook.testing.wire import hash_vector

__all__ = [
    "FakeOpenAIServer",
    "MemoryStore",
    "RecordedCall",
    "RecordedRequest",
    "ScriptedModel",
    "approximate_prompt_tokens",
    "hash_vector",
    "text",
    "tool_call",
    "tool_calls",
]
