"""Reading agents.json text strictly, and the shape checks that come before the schema.

Python's ``json`` bends where a configuration must not: the last of two equal keys wins
silently, and a 5,000-digit number or deep nesting raises ValueError or RecursionError
instead of a JSON error. Each of these becomes one ConfigError line naming the file, so a
hostile or mangled file can never escape as an exception.
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from monad_notebook.config_errors import key_path
from monad_notebook.errors import ConfigError

MAX_BYTES = 1_000_000
MAX_DEPTH = 32
MAX_INT = 2**53 - 1  # the largest integer every JSON reader keeps exact


def read_json(path: Path, name: str) -> Any:
    """The parsed file, or one ConfigError line saying what is wrong with it."""
    try:
        if path.stat().st_size > MAX_BYTES:
            raise ConfigError(f"{name} is larger than {MAX_BYTES // 1_000_000} MB: it should hold settings only")
        text = path.read_text(encoding="utf-8-sig")
    except FileNotFoundError:
        raise ConfigError(f"{name} does not exist: create it, or remove the setting that names it") from None
    except UnicodeDecodeError:
        raise ConfigError(f"{name} is not UTF-8 text: save it as UTF-8") from None
    except OSError as error:
        raise ConfigError(f"cannot read {name}: {error.strerror}") from None
    if not text.strip():
        raise ConfigError(f"{name} is empty: write {{}} for the defaults, or delete it")
    return parse_json(text, name)


def parse_json(text: str, name: str) -> Any:
    duplicates: list[tuple[dict[str, Any], str]] = []
    try:
        data = json.loads(text, object_pairs_hook=lambda pairs: _object(pairs, duplicates))
    except json.JSONDecodeError as error:
        raise ConfigError(f"{name} is not valid JSON: line {error.lineno} column {error.colno}: {error.msg}") from None
    except RecursionError:
        raise ConfigError(f"{name} nests too deeply to read: no setting needs more than 5 levels") from None
    except ValueError:  # the int-str conversion limit, on a number of thousands of digits
        raise ConfigError(f"{name} holds a number with thousands of digits: no setting needs one") from None
    if duplicates:
        where, key = duplicates[0]
        parent = _path_to(data, where)
        raise ConfigError(f"{name}: key {key_path((*parent, key))} appears twice: keep one")
    return data


def check_shape(data: Any, source: str) -> None:
    """Reject what the schema would choke on before it sees it: deep nesting, huge integers, NUL characters."""
    stack: list[tuple[Any, tuple[Any, ...]]] = [(data, ())]
    while stack:
        value, loc = stack.pop()
        if len(loc) > MAX_DEPTH:
            raise ConfigError(f"{source} nests more than {MAX_DEPTH} levels deep: no setting needs more than 5")
        if isinstance(value, Mapping):
            for key, item in value.items():
                if isinstance(key, str) and "\x00" in key:
                    raise ConfigError(f"{source}: key {key_path((*loc, key))} contains a NUL character")
                stack.append((item, (*loc, key)))
        elif isinstance(value, list | tuple):
            stack.extend((item, (*loc, index)) for index, item in enumerate(value))
        elif isinstance(value, int) and not isinstance(value, bool) and abs(value) > MAX_INT:
            raise ConfigError(f"{source}: {key_path(loc)} is too large a number (at most {MAX_INT})")
        elif isinstance(value, str) and "\x00" in value:
            raise ConfigError(f"{source}: {key_path(loc)} contains a NUL character")


def _object(pairs: list[tuple[str, Any]], duplicates: list[tuple[dict[str, Any], str]]) -> dict[str, Any]:
    obj: dict[str, Any] = {}
    for key, value in pairs:
        if key in obj and not duplicates:
            duplicates.append((obj, key))
        obj[key] = value
    return obj


def _path_to(data: Any, target: dict[str, Any]) -> tuple[Any, ...]:
    """Where the object ``target`` sits in ``data``, found by identity (iteratively: nesting may be deep)."""
    stack: list[tuple[Any, tuple[Any, ...]]] = [(data, ())]
    while stack:
        value, loc = stack.pop()
        if value is target:
            return loc
        if isinstance(value, dict):
            stack.extend((item, (*loc, key)) for key, item in value.items())
        elif isinstance(value, list):
            stack.extend((item, (*loc, index)) for index, item in enumerate(value))
    return ()
