"""agents.json: discovery, reading, validation into ``Config`` and hot reload.

The schema (sections, defaults, bounds) is ``config_schema.py``; this module finds the file,
reads it strictly and keeps the configuration current. Each error is one line naming the
file and the dotted key.
"""

from __future__ import annotations

import copy
import os
import threading
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from pydantic import ValidationError

from monad_notebook.config_errors import canonical, describe_error, display_path, working_dir
from monad_notebook.config_json import check_shape, read_json
from monad_notebook.config_schema import (
    SCRIPTED_DEMO_MODEL,
    Config,
    ContextConfig,
    EmbeddingConfig,
    ModelConfig,
    RedactionConfig,
    RetrievalConfig,
    monad_home,
)
from monad_notebook.errors import ConfigError

__all__ = [
    "SCRIPTED_DEMO_MODEL",
    "Config",
    "ConfigWatcher",
    "ContextConfig",
    "EmbeddingConfig",
    "ModelConfig",
    "RedactionConfig",
    "RetrievalConfig",
    "deep_merge",
    "find_config_path",
    "load_config",
    "monad_home",
    "parse_config",
    "watch_config",
]

CONFIG_NAME = "agents.json"
STILL_IN_FORCE = " — the last good configuration is still in force"


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
