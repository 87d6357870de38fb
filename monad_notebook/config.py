"""agents.json: defaults, validation, discovery and hot reload.

Every knob has a default, so no file is needed. A file is validated strictly (JSON
types, bounds, no unknown keys) because a typo that silently falls back to a default
is worse than an error; each error is one line naming the file and the dotted key.
"""

from __future__ import annotations

import copy
import os
import threading
from collections.abc import Mapping
from pathlib import Path
from typing import Annotated, Any, Literal
from urllib.parse import urlsplit

from pydantic import AfterValidator, BaseModel, ConfigDict, Field, ValidationError, ValidationInfo, field_validator
from pydantic.alias_generators import to_camel
from pydantic_core import PydanticCustomError

from monad_notebook.config_errors import canonical, describe_error, display_path, plain_number, working_dir
from monad_notebook.config_json import check_shape, read_json
from monad_notebook.errors import ConfigError

CONFIG_NAME = "agents.json"
STILL_IN_FORCE = " — the last good configuration is still in force"
SCRIPTED_DEMO_MODEL = "scripted-demo"


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


Fraction = Annotated[float, AfterValidator(_fraction)]
PositiveInt = Annotated[int, Field(gt=0)]
NonNegativeInt = Annotated[int, Field(ge=0)]
Seconds = Annotated[float, Field(gt=0, le=86_400)]
Name = Annotated[str, Field(min_length=1)]
Url = Annotated[str, AfterValidator(_http_url)]


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
    api_key_env: Name = "OPENAI_API_KEY"
    context_window: PositiveInt | None = None
    max_output_tokens: PositiveInt | None = None
    temperature: Annotated[float, Field(ge=0, le=2)] | None = None
    timeout_seconds: Seconds = 60.0
    max_retries: NonNegativeInt = 4
    cache: CacheConfig = Field(default_factory=CacheConfig)

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
    api_key_env: Name = "OPENAI_API_KEY"
    dimensions: PositiveInt | None = None


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

    def resolved_uri(self) -> str:
        """The LanceDB URI to open: ``uri`` or ``$MONAD_HOME/db``."""
        return self.uri if self.uri is not None else str(monad_home() / "db")


class AgentConfig(_Section):
    name: Annotated[str, Field(min_length=1, max_length=100)] | None = None
    max_steps: PositiveInt = 24
    system_prompt: str | None = None


class PythonToolConfig(_Section):
    approval: Literal["ask", "auto", "off"] = "ask"
    timeout_seconds: Seconds | None = None


class FilesToolConfig(_Section):
    root: Name | None = None


class ToolsConfig(_Section):
    python: PythonToolConfig = Field(default_factory=PythonToolConfig)
    files: FilesToolConfig = Field(default_factory=FilesToolConfig)


class ToolOutputConfig(_Section):
    max_chars: PositiveInt = 24_000
    head_fraction: Fraction = 0.7
    persist_raw: bool = True
    raw_cap_bytes: PositiveInt = 10_000_000


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


class RecallConfig(_Section):
    enabled: bool = True
    max_results: Annotated[int, Field(gt=0, le=20)] = 6
    snippet_chars: Annotated[int, Field(ge=80, le=2000)] = 320
    embed_max_chars: NonNegativeInt = 200_000


class MemoryPromotionConfig(_Section):
    mode: Literal["off", "suggest", "auto"] = "off"
    max_facts: PositiveInt = 8


class MemoryConfig(_Section):
    prompt_budget_tokens: NonNegativeInt = 800


class HandoffConfig(_Section):
    enabled: bool = False
    at_fraction: Fraction = 0.6
    after_reflections: PositiveInt = 2


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
    eviction: EvictionConfig = Field(default_factory=EvictionConfig)
    summarize: SummarizeConfig = Field(default_factory=SummarizeConfig)
    recitation: RecitationConfig = Field(default_factory=RecitationConfig)
    retrieval: RetrievalConfig = Field(default_factory=RetrievalConfig)
    recall: RecallConfig = Field(default_factory=RecallConfig)
    memory_promotion: MemoryPromotionConfig = Field(default_factory=MemoryPromotionConfig)
    memory: MemoryConfig = Field(default_factory=MemoryConfig)
    handoff: HandoffConfig = Field(default_factory=HandoffConfig)
    redaction: RedactionConfig = Field(default_factory=RedactionConfig)


class Config(_Section):
    """The whole of agents.json; ``Config()`` is the all-defaults configuration."""

    models: ModelsConfig = Field(default_factory=ModelsConfig)
    store: StoreConfig = Field(default_factory=StoreConfig)
    agent: AgentConfig = Field(default_factory=AgentConfig)
    tools: ToolsConfig = Field(default_factory=ToolsConfig)
    context: ContextConfig = Field(default_factory=ContextConfig)

    def to_json_dict(self) -> dict[str, Any]:
        """The effective configuration in agents.json shape (fast tier shown resolved)."""
        data = self.model_dump(mode="json", by_alias=True)
        data["models"]["fast"] = self.models.resolved_fast().model_dump(mode="json", by_alias=True)
        return data


def monad_home() -> Path:
    """Where the database and the user-wide agents.json live: ``$MONAD_HOME`` or ``~/.monad``."""
    return Path(os.environ.get("MONAD_HOME") or "~/.monad").expanduser()


def find_config_path() -> Path | None:
    """``$MONAD_CONFIG``, else ``./agents.json``, else ``$MONAD_HOME/agents.json``, else None."""
    named = os.environ.get("MONAD_CONFIG")
    if named:
        path = Path(named).expanduser()
        if not os.path.isfile(path):
            raise ConfigError(f"MONAD_CONFIG names {named}, which does not exist: create it or unset MONAD_CONFIG")
        return path.absolute()
    for folder in (working_dir(), monad_home()):
        if folder is not None and os.path.isfile(folder / CONFIG_NAME):
            return folder / CONFIG_NAME
    return None


def load_config(path: Path | None = None, *, overrides: Mapping[str, Any] | None = None) -> tuple[Config, Path | None]:
    """The configuration from ``path`` (or the discovered file, or defaults) and the file used."""
    source = Path(path).expanduser().absolute() if path is not None else find_config_path()
    return _load(source, overrides), source


def parse_config(data: Any, source: str = CONFIG_NAME) -> Config:
    """Validate agents.json-shaped data; errors become one ConfigError line naming ``source``.

    An unknown key is reported first: a misspelt key usually explains a missing one.
    """
    if not isinstance(data, Mapping):
        raise ConfigError(f"{source} must hold a JSON object ({{...}}) at the top level")
    check_shape(data, source)
    data = canonical(data, Config, source)
    try:
        return Config.model_validate(data)
    except ValidationError as error:
        errors = sorted(error.errors(include_url=False), key=lambda item: item["type"] != "extra_forbidden")
        more = f" (+{len(errors) - 1} more)" if len(errors) > 1 else ""
        raise ConfigError(f"{source}: {describe_error(errors[0], data, Config)}{more}") from None


def deep_merge(a: Mapping[str, Any], b: Mapping[str, Any]) -> dict[str, Any]:
    """``b`` over ``a``: objects merge key by key; anything else, lists included, is replaced."""
    merged = copy.deepcopy(dict(a))
    for key, value in b.items():
        if isinstance(value, Mapping) and isinstance(merged.get(key), Mapping):
            merged[key] = deep_merge(merged[key], value)
        else:
            merged[key] = copy.deepcopy(value)
    return merged


class ConfigWatcher:
    """The current configuration, re-read whenever agents.json changes, appears or disappears.

    Asked once per turn, so a stat or two is all it costs. A broken save keeps the last
    good configuration (with a warning) because failing a turn over a half-edited file
    helps no one; only the first load must succeed. A file that validates but cannot be
    put to use (a redaction hook that does not import) is handed back with ``reject``.
    """

    def __init__(self, path: Path | None = None, overrides: Mapping[str, Any] | None = None) -> None:
        self._start(Path(path).expanduser().absolute() if path is not None else None, overrides, None)

    @classmethod
    def fixed(cls, config: Config) -> ConfigWatcher:
        """A watcher that reads no file: it hands out ``config``, plus any overrides set later."""
        watcher = cls.__new__(cls)
        watcher._start(None, None, config.model_dump(mode="json", by_alias=True, exclude_unset=True))
        watcher._config = config
        return watcher

    def _start(self, explicit: Path | None, overrides: Mapping[str, Any] | None, fixed: dict[str, Any] | None) -> None:
        self._explicit, self._fixed = explicit, fixed
        self._overrides = copy.deepcopy(dict(overrides or {}))
        self._lock = threading.Lock()
        self._warning: str | None = None
        self._previous: tuple[Config, Path | None, dict[str, Any]] | None = None
        source = self._locate()
        self._seen: tuple[Any, Any] = (source, _stamp(source))
        self._config = self._build(source, self._overrides)
        self.source = source

    @property
    def overrides(self) -> dict[str, Any]:
        return copy.deepcopy(self._overrides)

    def current(self) -> Config:
        """The configuration to use now: the same object until something changes."""
        with self._lock:
            try:
                source = self._locate()
            except ConfigError as error:
                self._fail((None, str(error)), error)
                return self._config
            seen = (source, _stamp(source))
            if seen != self._seen:
                try:
                    config = self._build(source, self._overrides)
                except ConfigError as error:
                    self._fail(seen, error)
                else:
                    self._seen = seen
                    self._adopt(config, source, self._overrides)
            return self._config

    def set_overrides(self, overrides: Mapping[str, Any]) -> Config:
        """Replace the overrides; a value that does not validate raises ConfigError and changes nothing."""
        overrides = copy.deepcopy(dict(overrides))
        with self._lock:
            source = self._locate()
            seen = (source, _stamp(source))
            config = self._build(source, overrides)
            self._seen = seen
            self._adopt(config, source, overrides)
            return config

    def reject(self, config: Config, error: ConfigError) -> str:
        """Go back to the configuration before ``config``, which could not be put to use.

        The file is not read again until it changes, so the returned warning line is shown once.
        """
        with self._lock:
            message = self.blame(error) + STILL_IN_FORCE
            if self._config is config and self._previous is not None:
                self._config, self.source, self._overrides = self._previous
                self._previous = None
            return message

    def blame(self, error: ConfigError) -> str:
        """The error's line, led by the name of the file it comes from unless it names it already."""
        name = display_path(self.source) if self.source is not None else "configuration"
        text = str(error)
        return text if text.startswith(name) else f"{name}: {text}"

    def pop_warning(self) -> str | None:
        """The warning about the last broken reload, once."""
        with self._lock:
            warning, self._warning = self._warning, None
            return warning

    def _locate(self) -> Path | None:
        if self._fixed is not None:
            return None
        return self._explicit if self._explicit is not None else find_config_path()

    def _build(self, source: Path | None, overrides: Mapping[str, Any]) -> Config:
        if self._fixed is None:
            return _load(source, overrides)
        parse_config(overrides, "overrides")
        return parse_config(deep_merge(self._fixed, canonical(overrides, Config, "overrides")), "overrides")

    def _fail(self, seen: tuple[Any, Any], error: ConfigError) -> None:
        if seen != self._seen:
            self._seen = seen
            self._warning = f"{error}{STILL_IN_FORCE}"

    def _adopt(self, config: Config, source: Path | None, overrides: dict[str, Any]) -> None:
        self._previous = (self._config, self.source, self._overrides)
        self._config, self.source, self._overrides, self._warning = config, source, overrides, None


def watch_config(config: Config | ConfigWatcher | str | os.PathLike[str] | None = None) -> ConfigWatcher:
    """The watcher for what a caller passed: None finds and follows agents.json as the magic does.

    A Config is fixed (no file is read); a path is that file, followed like a found one.
    """
    if isinstance(config, ConfigWatcher):
        return config
    if isinstance(config, Config):
        return ConfigWatcher.fixed(config)
    return ConfigWatcher(Path(config) if config is not None else None)


def _stamp(path: Path | None) -> tuple[int, int, int] | None:
    if path is None:
        return None
    try:
        stat = path.stat()
    except OSError:
        return None
    return stat.st_mtime_ns, stat.st_size, stat.st_ino


def _load(source: Path | None, overrides: Mapping[str, Any] | None) -> Config:
    name = display_path(source) if source is not None else "configuration"
    data: Any = read_json(source, name) if source is not None else {}
    if overrides:
        parse_config(overrides, "overrides")
        if isinstance(data, Mapping):
            check_shape(data, name)
            data = deep_merge(canonical(data, Config, name), canonical(overrides, Config, "overrides"))
    return parse_config(data, name)
