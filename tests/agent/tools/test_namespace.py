"""list_variables and describe on a real user namespace: bounded summaries, helpful errors."""

from __future__ import annotations

import math
import os
import time

import numpy as np
import pandas as pd
import pytest

from monad_notebook.agent.tools.base import ToolContext
from monad_notebook.agent.tools.namespace import describe, list_variables
from monad_notebook.errors import ToolError
from monad_notebook.redaction.redactor import Redactor


def user_function(a, b=2):
    """Add the user's numbers."""
    return a + b


class UserClass:
    pass


user_function.__module__ = UserClass.__module__ = "__main__"
LOOKUP = {f"key{i}": i for i in range(100_000)}
NUMBERS = list(range(1_000_000))


@pytest.fixture
def ctx(tmp_path):
    namespace = {
        "__name__": "__main__",
        "np": np,
        "sqrt": math.sqrt,
        "join": os.path.join,
        "_scratch": 1,
        "user_function": user_function,
        "UserClass": UserClass,
        "sales": pd.DataFrame(
            {"region": ["north", "south", None, "east"], "revenue": [10.0, 30.5, 7.25, None], "units": [1, 3, 2, 5]}
        ),
        "prices": pd.Series([1.5, 2.5, None], name="price"),
        "grid": np.arange(12.0).reshape(3, 4),
        "lookup": LOOKUP,
        "numbers": NUMBERS,
        "count": 42,
    }
    return ToolContext(session="t", namespace=namespace, root=tmp_path)


def test_list_variables_shows_user_data_with_type_and_size_and_hides_the_noise(ctx):
    out = list_variables.run(ctx, {})
    lines = {line.split(":")[0]: line for line in out.splitlines()}
    assert set(lines) == {"user_function", "UserClass", "sales", "prices", "grid", "lookup", "numbers", "count"}
    assert "DataFrame  4 rows x 3 cols  [region, revenue, units]" in lines["sales"]
    assert "shape=(3, 4)" in lines["grid"] and "len=100000" in lines["lookup"] and "42" in lines["count"]
    assert "user_function(a, b=2)" in lines["user_function"]


def test_list_variables_is_bounded_for_huge_namespaces(ctx):
    ctx.namespace.update({f"v{i}": i for i in range(1000)})
    out = list_variables.run(ctx, {})
    assert len(out.splitlines()) == 201 and out.endswith("more variables not listed ...]")


def test_list_variables_hides_what_ipython_put_in_the_namespace(ip, tmp_path):
    ip.user_ns["ns_user_value"] = 7
    ctx = ToolContext(session="t", namespace=ip.user_ns, root=tmp_path, shell=ip)
    names = [line.split(":")[0] for line in list_variables.run(ctx, {}).splitlines()]
    assert "ns_user_value" in names
    assert not {"In", "Out", "exit", "quit", "get_ipython", "open", "_ih"} & set(names)


def test_describe_dataframe_gives_shape_dtypes_head_stats_and_nulls(ctx):
    out = describe.run(ctx, {"name": "sales"})
    assert out.startswith("sales: DataFrame, 4 rows x 3 columns")
    assert "revenue: float64" in out and "units: int64" in out
    assert "head(5):" in out and "south" in out
    assert "describe():" in out and "mean" in out and "15.916667" in out
    assert "null counts:\n  region: 1\n  revenue: 1" in out


def test_describe_never_dumps_a_large_dataframe(ctx):
    ctx.namespace["wide"] = pd.DataFrame(np.arange(2_000_000).reshape(20_000, 100))
    started = time.perf_counter()
    out = describe.run(ctx, {"name": "wide"})
    assert time.perf_counter() - started < 5
    assert "20000 rows x 100 columns" in out and "50 more columns" in out
    assert len(out) < 8000 and "1999999" not in out


def test_describe_series(ctx):
    out = describe.run(ctx, {"name": "prices"})
    assert "Series 'price', 3 values, dtype float64, 1 nulls" in out and "mean" in out


def test_describe_array_gives_shape_dtype_stats_and_a_preview(ctx):
    out = describe.run(ctx, {"name": "grid"})
    assert "shape (3, 4), dtype float64" in out and "min 0, max 11, mean 5.5" in out and "[ 8.  9. 10. 11.]" in out
    ctx.namespace["huge"] = np.zeros((1000, 1000))
    assert len(describe.run(ctx, {"name": "huge"})) < 1000


def test_describe_mapping_and_list_preview_only_a_few_items(ctx):
    mapping = describe.run(ctx, {"name": "lookup"})
    assert mapping.startswith("lookup: dict, 100000 keys") and "'key0': int 0" in mapping
    assert "99980 more keys" in mapping and len(mapping) < 2000
    items = describe.run(ctx, {"name": "numbers"})
    assert "1000000 items" in items and "999999" not in items and len(items) < 2000


def test_describe_follows_a_dotted_attribute(ctx):
    out = describe.run(ctx, {"name": "sales.columns"})
    assert "region" in out and "revenue" in out


def test_describe_unknown_name_suggests_close_matches(ctx):
    with pytest.raises(ToolError, match="no variable named 'sale'; did you mean sales"):
        describe.run(ctx, {"name": "sale"})
    with pytest.raises(ToolError, match="list_variables"):
        describe.run(ctx, {"name": "zzz"})


@pytest.mark.parametrize("expression", ["sales[0]", "__import__('os').system('true')", "sales.__class__", "a b"])
def test_describe_never_evaluates_expressions(ctx, expression):
    with pytest.raises(ToolError):
        describe.run(ctx, {"name": expression})


def test_describe_missing_attribute_names_it(ctx):
    with pytest.raises(ToolError, match="sales has no attribute 'nope'"):
        describe.run(ctx, {"name": "sales.nope"})


def test_a_preview_cut_never_keeps_the_start_of_a_key(ctx):
    key = "ghp_" + "Zq8Lr2Xw9Kp4Tn7V" * 2 + "aB3d"
    ctx.namespace.update({"note": f"my backup key is {key} and it rotates", "notes": [f"see {key} here"] * 3})
    listed, described = list_variables.run(ctx, {}), describe.run(ctx, {"name": "notes"})
    shown = Redactor(env={}).redact(f"{listed}\n{described}").text
    assert not any(key[:i] in shown for i in range(8, len(key) + 1))
    assert "note: str" in shown
