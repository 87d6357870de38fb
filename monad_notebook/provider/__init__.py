"""The OpenAI-compatible provider: the chat-model protocol, the endpoint with its retries and
error mapping, stream assembly, and the chat and embedding clients behind it.

It sits below both the agent (chat) and the store (remote embeddings), and it is the only
package that imports ``openai``.
"""

from __future__ import annotations

from monad_notebook.provider.chat import OpenAIChatModel
from monad_notebook.provider.embedder import OpenAIEmbedder
from monad_notebook.provider.endpoint import Connection
from monad_notebook.provider.protocol import ChatModel, ChatResponse, TextCallback, Usage, cached_prompt_tokens
from monad_notebook.provider.windows import DEFAULT_CONTEXT_WINDOW, KNOWN_CONTEXT_WINDOWS, context_window_for

__all__ = [
    "DEFAULT_CONTEXT_WINDOW",
    "KNOWN_CONTEXT_WINDOWS",
    "ChatModel",
    "ChatResponse",
    "Connection",
    "OpenAIChatModel",
    "OpenAIEmbedder",
    "TextCallback",
    "Usage",
    "cached_prompt_tokens",
    "context_window_for",
]
