"""Namespace tools: what the user has in their kernel, summarized without dumping it.

A DataFrame with ten million rows must cost the model a few hundred tokens, not the
whole frame, so every summary is bounded: previews, heads and counts, never contents.
"""

from __future__ import annotations

import contextlib
import difflib
import re
import reprlib
import sys
import types
from itertools import islice
from typing import Any

from monad_notebook.agent.tools.base import Tool, ToolContext, reads, tool
from monad_notebook.errors import ToolError
from monad_notebook.redaction.redactor import builtin_redactor
from monad_notebook.workspace.block import origin
from monad_notebook.workspace.description import is_user_value

_MAX_VARIABLES = 200
_REPR_CHARS = 2000
_PREVIEW_ITEMS = 20
_MAX_COLUMNS = 50
_DOTTED = re.compile(r"[A-Za-z_]\w*(?:\.[A-Za-z]\w*)*")


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


def _is_noise(name: str, value: Any, ctx: ToolContext) -> bool:
    hidden = getattr(ctx.shell, "user_ns_hidden", None) or {}
    return not is_user_value(name, value, hidden, ctx.namespace.get("__name__"))


def _pandas_kind(value: Any) -> str | None:
    pandas = sys.modules.get("pandas")
    if pandas is None:
        return None
    if isinstance(value, pandas.DataFrame):
        return "DataFrame"
    if isinstance(value, pandas.Series):
        return "Series"
    return None


def _is_ndarray(value: Any) -> bool:
    numpy = sys.modules.get("numpy")
    return numpy is not None and isinstance(value, numpy.ndarray)


def _brief(value: Any) -> str:
    """One line: type and size, plus the value itself when it is small."""
    kind = _pandas_kind(value)
    if kind == "DataFrame":
        columns = ", ".join(map(str, list(value.columns[:8]))) + (", ..." if value.shape[1] > 8 else "")
        return f"DataFrame  {value.shape[0]} rows x {value.shape[1]} cols  [{columns}]"
    if kind == "Series":
        return f"Series  {len(value)} values  dtype={value.dtype}  name={value.name!r}"
    if _is_ndarray(value):
        return f"ndarray  shape={value.shape}  dtype={value.dtype}"
    if isinstance(value, (bool, int, float, complex)) or value is None:
        return f"{type(value).__name__}  {_short_repr(value)}"
    if isinstance(value, (str, bytes)):
        return f"{type(value).__name__}  len={len(value)}  {_short_repr(value, 60)}"
    if isinstance(value, (list, tuple, set, frozenset, dict)):
        return f"{type(value).__name__}  len={len(value)}"
    if isinstance(value, type):
        return "class"
    if callable(value):
        return f"{type(value).__name__}  {_signature(value)}"
    size = f"  len={len(value)}" if hasattr(value, "__len__") and _safe_len(value) is not None else ""
    return f"{type(value).__name__}{size}"


def _safe_len(value: Any) -> int | None:
    try:
        return len(value)
    except Exception:
        return None


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


@reads
@tool
def list_variables(ctx: ToolContext) -> str:
    """List the variables in the user's notebook namespace, with type and size, one per line, each with the tool
    call (its id) or the user's cell that made it and the turn."""
    rows = []
    for name, value in list(ctx.namespace.items()):
        if _is_noise(name, value, ctx):
            continue
        try:
            rows.append(f"{name}: {_brief(value)}{_made_by(ctx, name)}")
        except Exception as exc:
            rows.append(f"{name}: {type(value).__name__}  (could not summarize: {type(exc).__name__})")
    if not rows:
        return "(no user variables yet)"
    more = len(rows) - _MAX_VARIABLES
    shown = rows[:_MAX_VARIABLES]
    if more > 0:
        shown.append(f"[... {more} more variables not listed ...]")
    return "\n".join(shown)


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
    value = _lookup(ctx, name)
    kind = _pandas_kind(value)
    if kind == "DataFrame":
        return _describe_frame(name, value)
    if kind == "Series":
        return _describe_series(name, value)
    if _is_ndarray(value):
        return _describe_array(name, value)
    if isinstance(value, dict):
        return _describe_mapping(name, value)
    if isinstance(value, (list, tuple, set, frozenset)):
        return _describe_sequence(name, value)
    if isinstance(value, (str, bytes)):
        lines = value.count("\n" if isinstance(value, str) else b"\n") + 1
        size = f"{len(value)} characters, {lines} line{'' if lines == 1 else 's'}"
        return f"{name}: {type(value).__name__}, {size}\n{_short_repr(value, 1000)}"
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
