"""The shape of agents.json: every section and key, its default, its bounds and its checks.

Every knob has a default, so no file is needed; unknown keys are refused, because a typo that
silently falls back to a default is worse than an error. Reading, discovery and hot reload
live in ``config.py``.
"""

from __future__ import annotations

import os
import re
from pathlib import Path
from typing import Annotated, Any, Literal, get_args
from urllib.parse import urlsplit

from pydantic import AfterValidator, BaseModel, ConfigDict, Field, ValidationInfo, field_validator, model_validator
from pydantic.alias_generators import to_camel
from pydantic_core import PydanticCustomError

from monad_notebook.config_errors import plain_number

SCRIPTED_DEMO_MODEL = "scripted-demo"


def monad_home() -> Path:
    """Where the database and the user-wide agents.json live: ``$MONAD_HOME`` or ``~/.monad``."""
    return Path(os.environ.get("MONAD_HOME") or "~/.monad").expanduser()


def _fraction(value: float) -> float:
    if value <= 0:
        raise PydanticCustomError("fraction", "must be above 0 (got {got})", {"got": plain_number(value)})
    if value > 1:
        raise PydanticCustomError("fraction", "must be between 0 and 1 (got {got})", {"got": plain_number(value)})
    return value


def _compiles(value: str) -> str:
    """Patterns run on RE2 (linear time), so they are checked with RE2: no lookarounds or backreferences.

    A pattern that can match nothing at all (``""``, ``x*``, ``\\b``) would redact nothing while
    looking like a rule, so it is refused.
    """
    import re2

    try:
        compiled = re2.compile(value)
    except re2.error as error:
        why = error.args[0] if error.args else "unknown error"
        why = why.decode(errors="replace") if isinstance(why, bytes) else str(why)
        raise PydanticCustomError("regex", "is not a valid RE2 regular expression: {why}", {"why": why}) from None
    if any(match.end() == match.start() for probe in _EMPTY_PROBES for match in compiled.finditer(probe)):
        raise PydanticCustomError("regex", "matches the empty string, so it would redact nothing: make it match text")
    return value


_EMPTY_PROBES = ("", "a", "a b", "1-x")


def _http_url(value: str) -> str:
    parts = urlsplit(value)
    if parts.scheme not in ("http", "https") or not parts.netloc:
        raise PydanticCustomError("url", "must be an http:// or https:// URL")
    return value


_VARIABLE = re.compile(r"[A-Za-z_][A-Za-z0-9_]*")
_DIGIT = re.compile(r"[0-9]")
_KEYLIKE_CHARS = 20


def _variable_name(value: str) -> str:
    """``apiKeyEnv`` names a variable; a key pasted here (what a newcomer does) is refused, and never shown back.

    Some keys are letters and digits only, which a variable's name may be too; a long one with a
    digit and no ``_`` is taken for a key (names are words joined by ``_``: ``MISTRAL_API_KEY``).
    """
    if not _VARIABLE.fullmatch(value) or (len(value) >= _KEYLIKE_CHARS and "_" not in value and _DIGIT.search(value)):
        raise PydanticCustomError(
            "env_name",
            "must be the name of the environment variable that holds the key (letters, digits and _), "
            "never the key itself: set the variable, and give its name here",
        )
    return value


Fraction = Annotated[float, AfterValidator(_fraction)]
PositiveInt = Annotated[int, Field(gt=0)]
NonNegativeInt = Annotated[int, Field(ge=0)]
Seconds = Annotated[float, Field(gt=0, le=86_400)]
Name = Annotated[str, Field(min_length=1)]
Url = Annotated[str, AfterValidator(_http_url)]
VariableName = Annotated[str, AfterValidator(_variable_name)]


class _Section(BaseModel):
    """JSON keys are camelCase, attributes snake_case; JSON types are not coerced."""

    model_config = ConfigDict(
        alias_generator=to_camel,
        populate_by_name=True,
        extra="forbid",
        strict=True,
        validate_assignment=True,
        allow_inf_nan=False,
    )


class CacheConfig(_Section):
    """How the endpoint bills a prompt prefix it serves from its cache; unset keys follow the provider's default."""

    discount: Annotated[float, Field(ge=0, le=1)] | None = None
    ttl_seconds: Seconds | None = None


class ModelConfig(_Section):
    """One model tier on an OpenAI-compatible endpoint (``baseUrl`` null means OpenAI)."""

    model: Name = "gpt-4.1-mini"
    base_url: Url | None = None
    api_key_env: VariableName = "OPENAI_API_KEY"
    context_window: PositiveInt | None = None
    max_output_tokens: PositiveInt | None = None
    temperature: Annotated[float, Field(ge=0, le=2)] | None = None
    timeout_seconds: Seconds = 60.0
    max_retries: NonNegativeInt = 4
    cache: CacheConfig = Field(default_factory=CacheConfig)
    vision: bool | Literal["auto"] = "auto"  # send images: auto is on for model names known to take them
    text_tool_calls: Literal["auto", "off"] = "auto"  # run the tool calls a model writes as text (main tier only)

    @field_validator("max_output_tokens")
    @classmethod
    def _output_fits_the_window(cls, value: int | None, info: ValidationInfo) -> int | None:
        window = info.data.get("context_window")
        if value is not None and window is not None and value >= window:
            raise PydanticCustomError(
                "order", "must be below contextWindow, {window} (got {got})", {"window": window, "got": value}
            )
        return value


class FastModelConfig(ModelConfig):
    """Same keys as main; whatever is not set here is read from main (see ``resolved_fast``)."""

    model: Name = "gpt-4.1-nano"


class EmbeddingConfig(_Section):
    provider: Literal["local", "openai", "none"] = "local"
    model: Name | None = None
    base_url: Url | None = None
    api_key_env: VariableName = "OPENAI_API_KEY"
    dimensions: PositiveInt | None = None
    query_prefix: Annotated[str, Field(max_length=200)] | None = None  # None: the model's known prefix, if any
    document_prefix: Annotated[str, Field(max_length=200)] | None = None


class ModelsConfig(_Section):
    main: ModelConfig = Field(default_factory=ModelConfig)
    fast: FastModelConfig = Field(default_factory=FastModelConfig)
    embedding: EmbeddingConfig = Field(default_factory=EmbeddingConfig)

    def resolved_fast(self) -> ModelConfig:
        """The fast tier with every key it does not set taken from main.

        An unset fast model is gpt-4.1-nano only while main talks to OpenAI itself; on a
        custom endpoint (or the scripted demo) nano would not exist, so main's model is
        reused. Window and output limits describe a model, so they are inherited only
        when both tiers resolve to the same model.
        """
        own = self.fast.model_fields_set
        values = {name: getattr(self.fast if name in own else self.main, name) for name in ModelConfig.model_fields}
        if "model" not in own:
            on_openai = self.main.base_url is None and self.main.model != SCRIPTED_DEMO_MODEL
            values["model"] = self.fast.model if on_openai else self.main.model
        if values["model"] != self.main.model:
            for name in ("context_window", "max_output_tokens"):
                values[name] = getattr(self.fast, name)
        return ModelConfig.model_construct(**values)  # each value is validated; main and fast may mix


class StoreConfig(_Section):
    uri: Name | None = None
    storage_options: dict[str, str] = Field(default_factory=dict)
    optimize_every_writes: PositiveInt = 50


class AgentConfig(_Section):
    name: Annotated[str, Field(min_length=1, max_length=100)] | None = None
    max_steps: PositiveInt = 24
    system_prompt: str | None = None


class PythonToolConfig(_Section):
    approval: Literal["ask", "auto", "off"] = "ask"
    approval_timeout_seconds: Seconds = 600.0
    timeout_seconds: Seconds | None = None


class NamespaceToolConfig(_Section):
    """``list_variables`` and ``describe``: how long they may spend in the user's own code (a repr, a property)."""

    timeout_seconds: Seconds = 10.0


class FilesToolConfig(_Section):
    root: Name | None = None


class NotebookToolConfig(_Section):
    """The tools that read the open notebook and propose cells: ask (review each), auto (apply, show), off."""

    approval: Literal["ask", "auto", "off"] = "ask"


class ToolsConfig(_Section):
    python: PythonToolConfig = Field(default_factory=PythonToolConfig)
    namespace: NamespaceToolConfig = Field(default_factory=NamespaceToolConfig)
    files: FilesToolConfig = Field(default_factory=FilesToolConfig)
    notebook: NotebookToolConfig = Field(default_factory=NotebookToolConfig)


class ToolOutputConfig(_Section):
    max_chars: PositiveInt = 24_000
    head_fraction: Fraction = 0.7
    persist_raw: bool = True
    raw_cap_bytes: PositiveInt = 10_000_000


class ImagesConfig(_Section):
    """Images the user's code displays: how they are kept and sent to a model that can see."""

    max_side: Annotated[int, Field(ge=64, le=4096)] = 1024  # longest side in pixels, scaled down to it
    detail: Literal["auto", "low", "high"] = "auto"
    max_per_result: Annotated[int, Field(ge=0, le=64)] = 8  # beyond it, a result names the rest in one line


class EvictionConfig(_Section):
    enabled: bool = True
    at_fraction: Fraction = 0.5
    keep_recent_rounds: PositiveInt = 3
    clear_at_least: NonNegativeInt = 2000
    min_result_tokens: NonNegativeInt = 200


class SummarizeConfig(_Section):
    enabled: bool = True
    background: bool = True
    soft_fraction: Fraction = 0.75
    hard_fraction: Fraction = 0.9
    keep_recent: PositiveInt = 8
    reflect_at_tokens: PositiveInt = 4000
    ledger_max_items: PositiveInt = 150
    ledger_max_tokens: PositiveInt = 1500

    @field_validator("hard_fraction")
    @classmethod
    def _hard_not_below_soft(cls, value: float, info: ValidationInfo) -> float:
        soft = info.data.get("soft_fraction")
        if soft is not None and value < soft:
            raise PydanticCustomError(
                "order",
                "must be at least softFraction, {soft} (got {got})",
                {"soft": plain_number(soft), "got": plain_number(value)},
            )
        return value


class RecitationConfig(_Section):
    enabled: bool = False


class RetrievalConfig(_Section):
    enabled: bool = False
    min_score: Annotated[float, Field(ge=0, le=1)] = 0.30
    max_results: PositiveInt = 5
    snippet_chars: PositiveInt = 600


RecallStep = Literal["word_meaning", "neighbours", "dated_first", "names_first", "one_of_each"]


class RecallConfig(_Section):
    enabled: bool = True
    max_results: Annotated[int, Field(gt=0, le=20)] = 6
    snippet_chars: Annotated[int, Field(ge=80, le=2000)] = 320
    embed_max_chars: NonNegativeInt = 200_000
    steps: list[RecallStep] = Field(default_factory=lambda: list(get_args(RecallStep)))
    rewrite: Literal["off", "fast"] = "off"
    rewrite_timeout_seconds: Annotated[float, Field(gt=0, le=60)] = 5.0


class MemoryPromotionConfig(_Section):
    mode: Literal["off", "suggest", "auto"] = "off"
    max_facts: PositiveInt = 8


class MemoryConfig(_Section):
    prompt_budget_tokens: NonNegativeInt = 800


class HandoffConfig(_Section):
    enabled: bool = False
    at_fraction: Fraction = 0.6
    after_reflections: PositiveInt = 2


class WorkspaceConfig(_Section):
    enabled: bool = True
    max_tokens: PositiveInt | None = None  # None: about 8% of the context window, at least 800 and at most 4,000


MIB = 1 << 20


class RewindConfig(_Section):
    """What the session keeps so that its turns can be undone: the earlier bytes of files its code changed under the
    notebook's directory, and the earlier values of names it rebound or changed in place (docs/rewind.md)."""

    enabled: bool = True
    max_file_bytes: PositiveInt = 256 * MIB  # a larger file's earlier bytes are not kept (and the result says so)
    max_session_bytes: PositiveInt = 2048 * MIB  # beyond it the oldest turns' kept bytes go first
    max_value_bytes: PositiveInt = 64 * MIB  # a value larger than this is not copied before an in-place change
    max_values_bytes: PositiveInt = 1024 * MIB  # kept values, in memory; beyond it the oldest turns' go first
    kept_dir: Name | None = None  # None: beside a local store ("<store>.kept"), else $MONAD_HOME/kept


class RedactionPattern(_Section):
    name: Name
    regex: Annotated[str, AfterValidator(_compiles)]


class RedactionConfig(_Section):
    enabled: bool = True
    env_secrets: bool = True
    patterns: list[RedactionPattern] = Field(default_factory=list)
    hook: Annotated[str, Field(pattern=r"^[A-Za-z_][\w.]*:[A-Za-z_]\w*$")] | None = None


class ContextConfig(_Section):
    tool_output: ToolOutputConfig = Field(default_factory=ToolOutputConfig)
    images: ImagesConfig = Field(default_factory=ImagesConfig)
    eviction: EvictionConfig = Field(default_factory=EvictionConfig)
    summarize: SummarizeConfig = Field(default_factory=SummarizeConfig)
    recitation: RecitationConfig = Field(default_factory=RecitationConfig)
    retrieval: RetrievalConfig = Field(default_factory=RetrievalConfig)
    recall: RecallConfig = Field(default_factory=RecallConfig)
    memory_promotion: MemoryPromotionConfig = Field(default_factory=MemoryPromotionConfig)
    memory: MemoryConfig = Field(default_factory=MemoryConfig)
    handoff: HandoffConfig = Field(default_factory=HandoffConfig)
    workspace: WorkspaceConfig = Field(default_factory=WorkspaceConfig)
    redaction: RedactionConfig = Field(default_factory=RedactionConfig)


Approval = Literal["ask", "auto", "off"]


def _server_name(value: str) -> str:
    if not re.fullmatch(r"[A-Za-z0-9][A-Za-z0-9_.-]{0,39}", value):
        raise PydanticCustomError(
            "mcp_name", "a server's name is up to 40 letters, digits, '_', '.' or '-', starting with a letter or digit"
        )
    return value


ServerName = Annotated[str, AfterValidator(_server_name)]


class McpToolConfig(_Section):
    """One tool of an MCP server: its own approval, when it differs from the server's."""

    approval: Approval


class McpServerConfig(_Section):
    """One MCP server, as Claude Desktop and VS Code write it: a ``command`` (stdio) or a ``url``."""

    command: Name | None = None
    args: list[str] = Field(default_factory=list)
    env: dict[str, str] = Field(default_factory=dict)
    cwd: Name | None = None
    url: Url | None = None
    headers: dict[str, str] = Field(default_factory=dict)
    approval: Approval = "ask"
    tools: dict[str, McpToolConfig] = Field(default_factory=dict)
    timeout_seconds: Seconds = 30.0

    @model_validator(mode="after")
    def _one_transport(self) -> McpServerConfig:
        if (self.command is None) == (self.url is None):
            raise PydanticCustomError("mcp_transport", "give either command (a local server) or url (streamable HTTP)")
        return self

    def approval_for(self, tool: str) -> str:
        """``tools.<name>.approval`` where the user set it, else the server's."""
        own = self.tools.get(tool)
        return own.approval if own is not None else self.approval

    def turned_on(self) -> bool:
        """Whether any of its tools may be offered: a server "off" stays unstarted unless a tool of it is turned on."""
        return self.approval != "off" or any(tool.approval != "off" for tool in self.tools.values())


class Config(_Section):
    """The whole of agents.json; ``Config()`` is the all-defaults configuration."""

    models: ModelsConfig = Field(default_factory=ModelsConfig)
    store: StoreConfig = Field(default_factory=StoreConfig)
    agent: AgentConfig = Field(default_factory=AgentConfig)
    tools: ToolsConfig = Field(default_factory=ToolsConfig)
    context: ContextConfig = Field(default_factory=ContextConfig)
    mcp_servers: dict[ServerName, McpServerConfig] = Field(default_factory=dict)
    rewind: RewindConfig = Field(default_factory=RewindConfig)

    def to_json_dict(self) -> dict[str, Any]:
        """The effective configuration in agents.json shape (fast tier shown resolved)."""
        data = self.model_dump(mode="json", by_alias=True)
        data["models"]["fast"] = self.models.resolved_fast().model_dump(mode="json", by_alias=True)
        return data
