"""One-line messages for a bad agents.json: pydantic errors and unknown keys, named by dotted key.

The key table (alias, attribute name, nested model) lives here because the "did you mean"
hints, the error paths and the canonical camelCase keys used for merging must all agree.
Functions take the root model as an argument so this module never imports the schema.
"""

from __future__ import annotations

import difflib
import functools
import json
import re
from collections.abc import Iterator, Mapping
from pathlib import Path
from typing import Any, get_args

from pydantic import BaseModel

from monad_notebook.errors import ConfigError

_PHRASES = {
    "int_type": "must be a whole number",
    "float_type": "must be a number",
    "bool_type": "must be true or false",
    "string_type": "must be a string",
    "list_type": "must be a list",
    "dict_type": "must be an object",
    "model_type": "must be an object",
    "string_too_short": "must not be empty",
    "string_pattern_mismatch": 'must look like "module:function"',
    "finite_number": "must be a finite number",
    "url": "must be an http:// or https:// URL",
}
_BOUNDS = {"greater_than": "greater than", "greater_than_equal": "at least", "less_than_equal": "at most"}
_NOT_ECHOED = frozenset({"env_name"})  # a key pasted where a name belongs is never shown back, not even in part
_SHOWN_CHARS = 40
_WORD = re.compile(r"[A-Za-z0-9_+/=.-]")
_LONG_WORD = 16  # a run this long may be a key: a cut never leaves part of one


def describe_error(error: Mapping[str, Any], data: Any, root: type[BaseModel]) -> str:
    """One pydantic error as ``<dotted.key> <what is wrong>``."""
    loc, kind, ctx = tuple(error["loc"]), error["type"], error.get("ctx") or {}
    path = key_path(loc)
    if kind == "extra_forbidden":
        return f"unknown key {path}{_suggestion(loc, root)}"
    if kind == "missing":
        return f"{path} is required"
    if kind == "regex":
        named = _lookup(data, loc[:-1])
        label = f' (pattern "{named["name"]}")' if isinstance(named, Mapping) and "name" in named else ""
        return f"{path} {error['msg']}{label}"
    if kind in ("fraction", "order"):
        return f"{path} {error['msg']}"
    if kind in _NOT_ECHOED:
        return f"{path} {error['msg']}"
    if kind in _BOUNDS:
        bound = plain_number(next(iter(ctx.values()), "?"))
        what = f"must be {_BOUNDS[kind]} {bound}"
    elif kind == "literal_error":
        what = "must be one of " + str(ctx.get("expected", "")).replace("'", '"')
    else:
        what = _PHRASES.get(kind) or "is invalid: " + str(error["msg"]).removeprefix("Value error, ")
    return f"{path} {what} (got {_shown(error.get('input'))})"


def key_path(loc: tuple[Any, ...]) -> str:
    """``context.redaction.patterns[0].regex``; a key that would break the line is escaped and shortened."""
    path = ""
    for part in loc:
        if isinstance(part, int):
            path += f"[{part}]"
            continue
        text = str(part) if str(part).isprintable() else json.dumps(str(part), ensure_ascii=False)[1:-1]
        text = clipped(text) if clipped(text) != "..." else f"<a key of {len(text):,} characters>"
        path += f".{text}" if path else text
    return path


def _shown(value: Any) -> str:
    try:
        text = json.dumps(value, ensure_ascii=False)
    except (TypeError, ValueError):
        text = repr(value)
    shown = clipped(text)
    return shown if shown not in ("...", '"...') else f"a {type(value).__name__} of {len(text):,} characters"


def _key_like(word: str) -> bool:
    """Two of upper case, lower case and digits: a key's mix (``kkkk...`` or ``region_name_of_table`` is none)."""
    return sum(bool(re.search(pattern, word)) for pattern in ("[A-Z]", "[a-z]", "[0-9]")) >= 2


def clipped(text: str, limit: int = _SHOWN_CHARS) -> str:
    """``text``, or its start and "...": a long run that could be a key, which the cut would split, is left out whole.

    Messages are redacted where they are shown, and a cut key is no longer recognised as one:
    so the cut never keeps part of a run that could be a key.
    """
    if len(text) <= limit:
        return text
    end = limit - 3
    start = end
    while start > 0 and _WORD.match(text[start - 1]):
        start -= 1
    stop = end
    while stop < len(text) and _WORD.match(text[stop]):
        stop += 1
    if stop - start >= _LONG_WORD and _key_like(text[start:stop]):
        end = start
    return text[:end] + "..."


def _lookup(data: Any, loc: tuple[Any, ...]) -> Any:
    for part in loc:
        try:
            data = data[part]
        except (KeyError, IndexError, TypeError):
            return None
    return data


def _suggestion(loc: tuple[Any, ...], root: type[BaseModel]) -> str:
    """A "did you mean" for an unknown key: a near sibling, or the same key elsewhere."""
    parent = _model_at(loc[:-1], root)
    if parent is None:
        return ""
    key = str(loc[-1])
    siblings = {_squash(alias): alias for alias in _aliases(parent)}
    close = difflib.get_close_matches(_squash(key), list(siblings), n=1, cutoff=0.6)
    if close:
        return f" (did you mean {siblings[close[0]]}?)"
    elsewhere = [path for path in _key_paths(root) if _squash(path.rsplit(".", 1)[-1]) == _squash(key)]
    if elsewhere:
        return f" (did you mean {elsewhere[0]}?)"
    return f" (expected one of: {', '.join(_aliases(parent))})"


def _squash(key: str) -> str:
    return key.replace("_", "").replace("-", "").lower()


@functools.cache
def _keys(model: type[BaseModel]) -> dict[str, tuple[str, type[BaseModel] | None]]:
    """Each field under both its alias and its attribute name -> (alias, the model it nests)."""
    keys: dict[str, tuple[str, type[BaseModel] | None]] = {}
    for name, field in model.model_fields.items():
        entry = (field.alias or name, _nested_model(field.annotation))
        keys[name] = keys[entry[0]] = entry
    return keys


def _aliases(model: type[BaseModel]) -> list[str]:
    return list(dict.fromkeys(alias for alias, _ in _keys(model).values()))


def _key_paths(model: type[BaseModel], prefix: str = "") -> Iterator[str]:
    for alias, nested in dict.fromkeys(_keys(model).values()):
        yield prefix + alias
        if nested is not None:
            yield from _key_paths(nested, f"{prefix}{alias}.")


def _nested_model(annotation: Any) -> type[BaseModel] | None:
    if isinstance(annotation, type) and issubclass(annotation, BaseModel):
        return annotation
    return next((found for arg in get_args(annotation) if (found := _nested_model(arg))), None)


def _model_at(loc: tuple[Any, ...], root: type[BaseModel]) -> type[BaseModel] | None:
    model: type[BaseModel] | None = root
    for part in loc:
        if model is not None and not isinstance(part, int):
            model = _keys(model).get(str(part), ("", None))[1]
    return model


def canonical(data: Any, model: type[BaseModel], source: str, loc: tuple[Any, ...] = ()) -> Any:
    """Rename snake_case keys to their camelCase aliases so merges and error paths agree.

    Both spellings of one key in one object would otherwise be merged last-wins, silently.
    """
    if not isinstance(data, Mapping):
        return data
    out: dict[str, Any] = {}
    for key, value in data.items():
        alias, nested = _keys(model).get(key, (key, None))
        if alias in out:
            twice = f"key {key_path((*loc, alias))} is given twice (as {alias} and {key})"
            raise ConfigError(f"{source}: {twice}: keep one")
        if isinstance(value, list) and nested is not None:
            value = [canonical(item, nested, source, (*loc, alias, index)) for index, item in enumerate(value)]
        elif nested is not None:
            value = canonical(value, nested, source, (*loc, alias))
        out[alias] = value
    return out


def plain_number(value: Any) -> Any:
    """1.0 reads as 1 in messages, as the user most likely wrote it."""
    return int(value) if isinstance(value, float) and value.is_integer() else value


def display_path(path: Path) -> str:
    """A path as the user would type it: relative to the working directory or ``~``, else absolute."""
    cwd = working_dir()
    full = path if path.is_absolute() or cwd is None else cwd / path
    for base, prefix in ((cwd, ""), (Path.home(), "~/")):
        if base is not None and full.is_relative_to(base):
            return prefix + str(full.relative_to(base))
    return str(full)


def working_dir() -> Path | None:
    """The working directory, or None once it has been deleted (an agents.json in it went with it)."""
    try:
        return Path.cwd()
    except OSError:
        return None
