"""Errors a user can cause or meet, each with a one-line message.

    MonadError
    ├── ConfigError          agents.json is missing a key, has a bad value, or is not JSON
    ├── UsageError           bad magic or command-line arguments
    ├── ModelError           the model endpoint failed in a way retrying will not fix
    │   ├── AuthError            bad or missing API key
    │   ├── ModelNotFoundError   the endpoint does not serve that model
    │   ├── EndpointError        unreachable endpoint, or retries exhausted
    │   │   └── EndpointNotFoundError   the server has no such URL path (a wrong baseUrl)
    │   ├── ContextLengthError   the prompt did not fit the model's window
    │   ├── TemplateRefusedError the server's chat template refused the conversation (its roles, its content)
    │   └── ImagesRefusedError   the endpoint does not take images (the session stops sending them)
    ├── StoreError           the database cannot be opened or written
    ├── SessionBusyError     another kernel is running a turn in the same session
    └── ToolError            a tool was called with bad arguments (reported to the model)

Magics and the CLI print ``str(error)`` for a MonadError, never a traceback.
"""

from __future__ import annotations


class MonadError(Exception):
    """Base of every error monad-notebook raises on purpose."""


class ConfigError(MonadError):
    """agents.json is invalid; the message names the key and what to do."""


class UsageError(MonadError):
    """Bad arguments to a magic or to the ``monad`` command."""


class ModelError(MonadError):
    """The model endpoint failed in a way that retrying will not fix."""


class AuthError(ModelError):
    """The endpoint rejected the API key, or none was found."""


class ModelNotFoundError(ModelError):
    """The endpoint does not serve the configured model."""


class EndpointError(ModelError):
    """The endpoint is unreachable, or kept failing after every retry."""


class EndpointNotFoundError(EndpointError):
    """The server answered 404 for the URL path itself: baseUrl is wrong, not the model name."""


class ContextLengthError(ModelError):
    """The provider said the prompt exceeds the model's context window."""


class TemplateRefusedError(ModelError):
    """The server's chat template raised on the request: a conversation shape the model's template does not take."""

    def __init__(self, message: str, said: str = "") -> None:
        super().__init__(message)
        self.said = said  # the template's own words


class ImagesRefusedError(ModelError):
    """The endpoint refused a request because it carried images."""


class StoreError(MonadError):
    """The database cannot be opened, read or written."""


class SessionBusyError(MonadError):
    """Another kernel holds the session's turn; the message names it and what to do."""


class ToolError(MonadError):
    """A tool was called with bad arguments; the message goes back to the model."""
