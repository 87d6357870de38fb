"""What an ``openai`` failure means for the user: one actionable line, or another attempt.

Servers word the same problem differently (a 404 for a wrong path or for an unknown model,
a context overflow as 400, 413 or 422), so the classification reads the status, the error
code and the message together.
"""

from __future__ import annotations

import re

import openai

from monad_notebook.errors import (
    AuthError,
    ContextLengthError,
    EndpointError,
    EndpointNotFoundError,
    ImagesRefusedError,
    ModelError,
    ModelNotFoundError,
    TemplateRefusedError,
)

_RETRYABLE_STATUS = frozenset({408, 409, 429})
_NO_SUCH_PATH = re.compile(
    r"invalid url|page not found|file not found|unknown (?:path|route|url|endpoint)|no route|cannot (?:post|get)|"
    r"^not found$",
    re.I,
)
_MODEL_WORD = re.compile(r"\bmodels?\b", re.I)
_CONTEXT_LENGTH = re.compile(
    r"context[_ ]length|maximum context|context window|context size|prompt is too long|too many tokens", re.I
)

# Where servers put the words a chat template raised with: llama.cpp ("Jinja Exception: ..."), TGI ("Template
# error: syntax error: ..."), LM Studio ("Error rendering prompt with jinja template: ..."); vLLM sends them bare.
_TEMPLATE_RAISED = re.compile(
    r"(?:jinja exception|template error(?:: syntax error)?|rendering prompt with jinja template)\W*(.+?)(?:\n\n|$)",
    re.I | re.S,
)
_ROLES = re.compile(r"conversation roles must alternate[^\n]*", re.I)
_IMAGES = re.compile(r"\bimage|\bvision\b|multi-?modal", re.I)
_NOT_TAKEN = re.compile(
    r"not supported|unsupported|(?:does not|doesn't|cannot|can't) (?:support|accept|process|handle)|only supported"
    r"|not allowed|invalid content|mmproj",
    re.I,
)


class Retryable(Exception):
    """A failure worth another attempt; ``reason`` ends up in the final message if none succeeds."""

    def __init__(self, reason: str, *, retry_after: float | None = None, cause: str = "server") -> None:
        super().__init__(reason)
        self.reason = reason
        self.retry_after = retry_after
        self.cause = cause  # "network" (no connection), "timeout" (no answer in time) or "server"


def classify(exc: openai.APIError, *, url: str, model: str, api_key_env: str, timeout: float) -> Exception:
    """Map an ``openai`` error to a MonadError, or to Retryable when another attempt may help."""
    if isinstance(exc, openai.APITimeoutError):
        return Retryable(f"timed out after {timeout:g}s", cause="timeout")
    if isinstance(exc, openai.APIConnectionError):
        cause = exc.__cause__ or exc.__context__
        return Retryable(f"connection failed: {_one_line(cause or exc.message)}", cause="network")
    message = _provider_message(exc)
    status = getattr(exc, "status_code", None)
    if status in (401, 403):
        return AuthError(
            f"{url} rejected the API key (HTTP {status}: {message}); check {api_key_env} or apiKeyEnv in agents.json"
        )
    if status == 404 and _names_a_model(exc, message, model):
        return ModelNotFoundError(
            f"{url} does not serve model {model!r} ({message}); check the model name in agents.json"
        )
    if status == 404:
        return EndpointNotFoundError(
            f"{_requested(exc)} is not found (HTTP 404: {message}): the server has no such path, so baseUrl "
            f"{url} is wrong; check it in agents.json (OpenAI-compatible servers usually end in /v1)"
        )
    if exc.code == "context_length_exceeded" or (status in (None, 400, 413, 422) and _CONTEXT_LENGTH.search(message)):
        return ContextLengthError(
            f"The prompt does not fit {model}'s context window ({message}); "
            "lower contextWindow for this model in agents.json so compaction starts earlier"
        )
    said = _template_words(_full_message(exc)) if status in (400, 422, 500) else None
    if said:
        return TemplateRefusedError(
            f'{model} at {url} refused the request: its chat template raised "{said}"; give the server a chat '
            "template that takes this conversation (llama-server --chat-template-file), or start a new session",
            said,
        )
    if status in (400, 415, 422, 500, 501) and _IMAGES.search(message) and _NOT_TAKEN.search(message):
        return ImagesRefusedError(
            f"{model} at {url} does not take images ({message}); set models.main.vision to false in agents.json"
        )
    if status is None or status in _RETRYABLE_STATUS or status >= 500:
        retry_after = _retry_after(exc) if isinstance(exc, openai.APIStatusError) else None
        label = f"HTTP {status}: {message}" if status else message
        return Retryable(label, retry_after=retry_after)
    return ModelError(f"{url} refused the request for {model} (HTTP {status}: {message})")


def exhausted(failure: Retryable, retries: int, url: str) -> EndpointError:
    """The final error once every attempt failed, with what to change for its cause."""
    tries = f"{retries + 1} attempt{'s' if retries else ''}"
    if failure.cause == "network":
        return EndpointError(
            f"Cannot reach {url} ({failure.reason}; {tries}): check baseUrl in agents.json "
            "and that the server is running"
        )
    if failure.cause == "timeout":
        return EndpointError(
            f"{url} did not answer in time ({failure.reason}; {tries}): raise timeoutSeconds in "
            "agents.json if the model is slow, or check the server"
        )
    return EndpointError(f"{url} kept failing ({failure.reason}; {tries}): try again later")


def _template_words(message: str) -> str | None:
    """What a chat template raised with, when the server's error says one did."""
    found = _TEMPLATE_RAISED.search(message) or _ROLES.search(message)
    if found is None:
        return None
    return _one_line(found.group(found.lastindex or 0))[:200].strip(" \"'.")


def _provider_message(exc: openai.APIError) -> str:
    return " ".join(_full_message(exc).split())[:300].rstrip(".")


def _full_message(exc: openai.APIError) -> str:
    body = exc.body
    message = body.get("message") if isinstance(body, dict) else None
    return message if isinstance(message, str) and message else exc.message


def _one_line(text: object) -> str:
    return " ".join(str(text).split())[:300]


def _names_a_model(exc: openai.APIError, message: str, model: str) -> bool:
    """A 404 about the model (OpenAI, vLLM, Ollama say so), rather than about the URL path."""
    if exc.code == "model_not_found":
        return True
    if _NO_SUCH_PATH.search(message):
        return False
    named = re.search(rf"(?<![\w.:/-]){re.escape(model)}(?![\w.:/-])", message) if model else None
    return bool(_MODEL_WORD.search(message) or named)


def _requested(exc: openai.APIError) -> str:
    """The method and URL that got the answer, without a query string."""
    request = getattr(exc, "request", None)
    if request is None:
        return "the request"
    return f"{request.method} {str(request.url).split('?', 1)[0]}"


def _retry_after(exc: openai.APIStatusError) -> float | None:
    headers = exc.response.headers
    for header, scale in (("retry-after-ms", 0.001), ("retry-after", 1.0)):
        try:
            value = float(headers.get(header, ""))
        except ValueError:
            continue
        if value >= 0:
            return value * scale
    return None
