"""Namespace tools: what the user has in their kernel, summarized without dumping it.

A DataFrame with ten million rows must cost the model a few hundred tokens, not the
whole frame, so every summary is bounded: previews, heads and counts, never contents.

A value is sorted by its real type (``workspace/description.py``: no ``__class__`` can make an
object pass for a DataFrame), and ``list_variables`` reads what the type tells without running
the user's code where it can. What cannot be told that way (``describe``'s repr of an object,
a dotted attribute, a callable's signature) runs the user's code, so both tools stop at
``tools.namespace.timeoutSeconds`` (the python tool's ``TimeLimit``) and say what they could not read.
"""

from __future__ import annotations

import contextlib
import difflib
import re
import reprlib
import types
from itertools import islice
from typing import Any

from monad_notebook.agent.tools.base import Tool, ToolContext, reads, tool
from monad_notebook.errors import ToolError
from monad_notebook.redaction.redactor import builtin_redactor
from monad_notebook.time_limit import CodeTimedOut, TimeLimit
from monad_notebook.workspace.block import origin
from monad_notebook.workspace.description import describe as description_of
from monad_notebook.workspace.description import dtype_text, family, is_user_value, label, type_name

_MAX_VARIABLES = 200
_REPR_CHARS = 2000
_PREVIEW_ITEMS = 20
_MAX_COLUMNS = 50
_DOTTED = re.compile(r"[A-Za-z_]\w*(?:\.[A-Za-z]\w*)*")
_SMALL = (bool, int, float, complex, type(None))


def _bounded_repr() -> reprlib.Repr:
    """reprlib never walks a whole container, so a 10-million-item list costs nothing to preview."""
    bounded = reprlib.Repr()
    bounded.maxlevel, bounded.maxlist, bounded.maxtuple, bounded.maxset = 3, 10, 10, 10
    bounded.maxdict, bounded.maxstring, bounded.maxother, bounded.maxlong = 10, _REPR_CHARS, _REPR_CHARS, 100
    return bounded


_REPR = _bounded_repr()


def _short_repr(value: Any, limit: int = 80) -> str:
    """A preview cut at ``limit``, never inside a secret: the result is redacted whole later, and the part of a key
    left before a cut would no longer be recognised (the cut moves to the key's start)."""
    try:
        text = _REPR.repr(value)
    except Exception as exc:
        return f"<repr failed: {type(exc).__name__}>"
    text = " ".join(text.split())
    return text if len(text) <= limit else text[: builtin_redactor().cut_point(text, limit - 3)] + "..."


def _is_noise(name: Any, value: Any, ctx: ToolContext) -> bool:
    """Not a name the user made: IPython's own, a module, an import, or a key that is not a plain string."""
    hidden = getattr(ctx.shell, "user_ns_hidden", None) or {}
    return type(name) is not str or not is_user_value(name, value, hidden, ctx.namespace.get("__name__"))


def _brief(value: Any) -> str:
    """One line: type and size, plus the value itself when it is a small builtin."""
    kind = type(value)
    of = family(kind)
    if of == "frame":
        columns = ", ".join(label(c) for c in value.columns[:8]) + (", ..." if value.shape[1] > 8 else "")
        return f"DataFrame  {value.shape[0]} rows x {value.shape[1]} cols  [{columns}]"
    if of == "series":
        named = "None" if value.name is None else repr(label(value.name))
        return f"Series  {len(value)} values  dtype={dtype_text(value.dtype)}  name={named}"
    if of == "array":
        return f"ndarray  shape={value.shape}  dtype={dtype_text(value.dtype)}"
    if kind in _SMALL:
        return f"{kind.__name__}  {_short_repr(value)}"
    if kind is str or kind is bytes:
        return f"{kind.__name__}  len={len(value)}  {_short_repr(value, 60)}"
    if of == "sized":
        return f"{type_name(kind)}  len={len(value)}"
    if issubclass(kind, type):
        return "class"
    if callable(value):
        return f"{type_name(kind)}  {_signature(value)}"
    return type_name(kind)


def _signature(value: Any) -> str:
    import inspect

    try:
        return f"{getattr(value, '__name__', '')}{inspect.signature(value)}"
    except (TypeError, ValueError):
        return getattr(value, "__name__", "")


def _made_by(ctx: ToolContext, name: str) -> str:
    """Which call or cell made ``name``, and at which turn, as the workspace record says."""
    entry = ctx.workspace.provenance(name) if ctx.workspace is not None else None
    return f"  [{origin(entry)}]" if entry is not None else ""


def _stopped(ctx: ToolContext) -> str:
    return f"stopped after {ctx.namespace_timeout:g} s (tools.namespace.timeoutSeconds)"


@reads
@tool
def list_variables(ctx: ToolContext) -> str:
    """List the variables in the user's notebook namespace, with type and size, one per line, each with the tool
    call (its id) or the user's cell that made it and the turn."""
    items = list(ctx.namespace.items())
    rows: list[str] = []
    done = 0
    try:
        with TimeLimit(ctx.namespace_timeout, "tools.namespace.timeoutSeconds"):
            for name, value in items:
                if not _is_noise(name, value, ctx):
                    rows.append(_row(ctx, name, value))
                done += 1
    except CodeTimedOut:  # the rest by name and type only: no more of the user's code runs
        rest = [f"{n}: {type_name(type(v))}" for n, v in items[done:] if not _is_noise(n, v, ctx)]
        rows += [*rest, f"[... {_stopped(ctx)}: the last {len(rest)} by type only ...]"]
    odd = sum(1 for name, _ in items if type(name) is not str)
    if odd:
        rows.append(f"[... {odd} key(s) of the namespace are not strings and are not listed ...]")
    if not rows:
        return "(no user variables yet)"
    more = len(rows) - _MAX_VARIABLES
    shown = rows[:_MAX_VARIABLES]
    if more > 0:
        shown.append(f"[... {more} more variables not listed ...]")
    return "\n".join(shown)


def _row(ctx: ToolContext, name: str, value: Any) -> str:
    try:
        return f"{name}: {_brief(value)}{_made_by(ctx, name)}"
    except Exception as exc:
        return f"{name}: {type_name(type(value))}  (could not summarize: {type_name(type(exc))})"


def _lookup(ctx: ToolContext, name: str) -> Any:
    name = name.strip()
    if not _DOTTED.fullmatch(name):
        raise ToolError(f"{name!r} is not a variable name; give a name like df or df.columns (no expressions)")
    head, *attrs = name.split(".")
    if head not in ctx.namespace:
        visible = [n for n, v in ctx.namespace.items() if not _is_noise(n, v, ctx)]
        close = difflib.get_close_matches(head, visible, n=5, cutoff=0.6)
        hint = f"; did you mean {', '.join(close)}?" if close else "; list_variables shows what exists"
        raise ToolError(f"no variable named {head!r}{hint}")
    value = ctx.namespace[head]
    for index, attr in enumerate(attrs):
        try:
            value = getattr(value, attr)
        except Exception:
            where = ".".join([head, *attrs[:index]])
            raise ToolError(f"{where} has no attribute {attr!r}") from None
    return value


@reads
@tool
def describe(ctx: ToolContext, name: str) -> str:
    """Describe one variable of the user's namespace: shape, types, a preview and summary statistics.

    Works for DataFrames, Series, numpy arrays, dicts, lists, strings and other objects, and
    never prints a whole large object.

    Args:
        name: A variable name, or name.attribute (e.g. df or df.columns); expressions are not evaluated.
    """
    try:
        with TimeLimit(ctx.namespace_timeout, "tools.namespace.timeoutSeconds"):
            return _described(name, _lookup(ctx, name))
    except CodeTimedOut:
        pass
    value = ctx.namespace.get(name.strip(), None) if "." not in name else None
    told = about_value(value) if value is not None else ""
    return f"{name}: {_stopped(ctx)}: reading it runs code of its own that did not return in time" + (
        f"; by its type: {told}" if told else ""
    )


def about_value(value: Any) -> str:
    """What the type tells of a value, without running its code ("DataFrame 3 rows x 2 cols [a, b]")."""
    told = description_of(value)
    columns = f" [{', '.join(told.columns)}]" if told.columns else ""
    return " ".join(part for part in (told.type, told.shape) if part) + columns


def _described(name: str, value: Any) -> str:
    kind = type(value)
    of = family(kind)
    if of == "frame":
        return _describe_frame(name, value)
    if of == "series":
        return _describe_series(name, value)
    if of == "array":
        return _describe_array(name, value)
    if issubclass(kind, dict):
        return _describe_mapping(name, value)
    if issubclass(kind, (list, tuple, set, frozenset)):
        return _describe_sequence(name, value)
    if issubclass(kind, (str, bytes)):
        lines = value.count("\n" if issubclass(kind, str) else b"\n") + 1
        size = f"{len(value)} characters, {lines} line{'' if lines == 1 else 's'}"
        return f"{name}: {type_name(kind)}, {size}\n{_short_repr(value, 1000)}"
    return _describe_object(name, value)


def _frame_text(frame: Any, max_rows: int = 10) -> str:
    import pandas

    with pandas.option_context("display.max_columns", 20, "display.width", 200, "display.max_colwidth", 40):
        return frame.to_string(max_rows=max_rows, max_cols=20)


def _describe_frame(name: str, df: Any) -> str:
    columns = df.columns[:_MAX_COLUMNS]
    more = f"\n[... {df.shape[1] - _MAX_COLUMNS} more columns ...]" if df.shape[1] > _MAX_COLUMNS else ""
    dtypes = "\n".join(f"  {col}: {df[col].dtype}" for col in columns) if df.columns.is_unique else str(df.dtypes)
    nulls = df[columns].isna().sum()
    nulls = nulls[nulls > 0]
    parts = [
        f"{name}: DataFrame, {df.shape[0]} rows x {df.shape[1]} columns",
        f"index: {type(df.index).__name__}, {_short_repr(list(df.index[:3]), 100)}...",
        f"dtypes:\n{dtypes}{more}",
        f"head(5):\n{_frame_text(df.head(5))}",
    ]
    if len(df) and len(columns):
        with contextlib.suppress(TypeError, ValueError):
            parts.append(f"describe():\n{_frame_text(df[columns[:20]].describe(), 12)}")
    parts.append("null counts:\n" + ("\n".join(f"  {k}: {v}" for k, v in nulls.items()) if len(nulls) else "  none"))
    return "\n".join(parts)


def _describe_series(name: str, series: Any) -> str:
    parts = [
        f"{name}: Series {series.name!r}, {len(series)} values, dtype {series.dtype}, {int(series.isna().sum())} nulls",
        f"head(5):\n{series.head(5).to_string()}",
    ]
    if len(series):
        with contextlib.suppress(TypeError, ValueError):
            parts.append(f"describe():\n{series.describe().to_string()}")
        if series.dtype == object or str(series.dtype) in {"category", "string", "bool"}:
            parts.append(f"most common:\n{series.value_counts().head(5).to_string()}")
    return "\n".join(parts)


def _describe_array(name: str, array: Any) -> str:
    import numpy

    parts = [f"{name}: ndarray, shape {array.shape}, dtype {array.dtype}, {array.nbytes} bytes"]
    numeric = numpy.issubdtype(array.dtype, numpy.number) and not numpy.issubdtype(array.dtype, numpy.complexfloating)
    if numeric and array.size:
        with numpy.errstate(all="ignore"):
            data = array.astype(float, copy=False)
            nans = int(numpy.isnan(data).sum())
            if nans < array.size:
                stats = f"min {numpy.nanmin(data):.6g}, max {numpy.nanmax(data):.6g}, mean {numpy.nanmean(data):.6g}"
                parts.append(stats + (f", {nans} NaN" if nans else ""))
    preview = numpy.array2string(array, threshold=50, edgeitems=3, max_line_width=120)
    parts.append(f"preview:\n{preview[:_REPR_CHARS]}")
    return "\n".join(parts)


def _describe_mapping(name: str, mapping: dict[Any, Any]) -> str:
    lines = [f"{name}: {type(mapping).__name__}, {len(mapping)} keys"]
    for index, (key, value) in enumerate(mapping.items()):
        if index == _PREVIEW_ITEMS:
            lines.append(f"  [... {len(mapping) - _PREVIEW_ITEMS} more keys ...]")
            break
        lines.append(f"  {_short_repr(key, 60)}: {type(value).__name__} {_short_repr(value, 80)}")
    return "\n".join(lines)


def _describe_sequence(name: str, items: Any) -> str:
    types_seen: dict[str, int] = {}
    for item in islice(items, 1000):
        types_seen[type(item).__name__] = types_seen.get(type(item).__name__, 0) + 1
    kinds = ", ".join(f"{k} x{v}" for k, v in sorted(types_seen.items(), key=lambda kv: -kv[1]))
    lines = [f"{name}: {type(items).__name__}, {len(items)} items" + (f" (first 1000: {kinds})" if kinds else "")]
    for index, item in enumerate(items):
        if index == _PREVIEW_ITEMS:
            lines.append(f"  [... {len(items) - _PREVIEW_ITEMS} more items ...]")
            break
        lines.append(f"  [{index}] {_short_repr(item, 100)}")
    return "\n".join(lines)


def _describe_object(name: str, value: Any) -> str:
    lines = [f"{name}: {type(value).__module__}.{type(value).__qualname__}"]
    if callable(value):
        lines.append(f"signature: {_signature(value)}")
    doc = (getattr(value, "__doc__", None) or "").strip().split("\n\n")[0]
    if doc and (callable(value) or isinstance(value, types.ModuleType)):
        lines.append(f"doc: {' '.join(doc.split())[:500]}")
    lines.append(f"repr: {_short_repr(value, _REPR_CHARS)}")
    try:
        public = [a for a in dir(value) if not a.startswith("_")]
    except Exception:
        public = []
    if public:
        shown = ", ".join(public[:40]) + (f", ... ({len(public)} in all)" if len(public) > 40 else "")
        lines.append(f"attributes: {shown}")
    return "\n".join(lines)


TOOLS: list[Tool] = [list_variables, describe]
