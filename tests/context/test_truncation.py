from __future__ import annotations

import json
import re

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from monad_notebook.context.lossless.truncation import cap_raw, truncate_tool_output

MARKER = re.compile(r"\[\.\.\. (\d+) characters omitted \(chars (\d+)\.\.(\d+) of (\d+)\)[^\n]*\]")
CALL = re.compile(r"read_tool_output\((\{.*?\})\)")


def split(result: str) -> tuple[str, str, str, dict[str, int]]:
    """Head, marker line and tail of a truncated result, using only the numbers in its marker."""
    match = MARKER.search(result)
    assert match, result
    omitted, offset, end, total = (int(g) for g in match.groups())
    assert end == offset + omitted
    tail_len = total - end
    head, tail = result[:offset], result[len(result) - tail_len :] if tail_len else ""
    marker = result[offset : len(result) - tail_len]
    return head, marker, tail, {"offset": offset, "limit": omitted, "total": total}


def test_returns_text_that_fits_unchanged():
    text = "a" * 1000
    assert truncate_tool_output(text, tool_call_id="c1", max_chars=1000, recoverable=True) is text


def test_keeps_seventy_percent_head_and_thirty_percent_tail_without_newlines():
    text = "".join(chr(ord("a") + i % 26) for i in range(5000))
    head, _, tail, numbers = split(truncate_tool_output(text, tool_call_id="c1", max_chars=1000, recoverable=True))
    assert (len(head), len(tail)) == (700, 300)
    assert head == text[:700] and tail == text[-300:]
    assert numbers == {"offset": 700, "limit": 4000, "total": 5000}


def test_prefers_cutting_at_a_newline_near_the_boundary():
    text = "\n".join(f"row {i:05d} " + "v" * 40 for i in range(200))
    head, _, tail, _ = split(truncate_tool_output(text, tool_call_id="c1", max_chars=2000, recoverable=True))
    assert head.endswith("\n") and 1400 - 60 < len(head) <= 1400
    assert text[len(text) - len(tail) - 1] == "\n" and 600 - 60 < len(tail) <= 600


def test_recoverable_marker_names_the_exact_call_that_pages_the_middle_back():
    text = "x" * 30000
    result = truncate_tool_output(text, tool_call_id="call_abc", recoverable=True)
    _, marker, _, numbers = split(result)
    args = json.loads(CALL.search(marker).group(1))
    assert args == {"id": "call_abc", "offset": numbers["offset"], "limit": numbers["limit"]}
    assert "6000 characters omitted" in marker
    assert len(result) - len(marker) == 24000


def test_unrecoverable_marker_says_the_middle_cannot_be_paged_back():
    result = truncate_tool_output("y" * 30000, tool_call_id="call_abc", recoverable=False)
    _, marker, _, _ = split(result)
    assert "cannot be paged back" in marker
    assert "read_tool_output" not in result


def test_marker_is_one_line_and_escapes_a_hostile_id():
    hostile = 'a"b\nc\\d'
    _, marker, _, _ = split(truncate_tool_output("z" * 500, tool_call_id=hostile, max_chars=100, recoverable=True))
    assert marker.strip("\n").count("\n") == 0
    assert json.loads(CALL.search(marker).group(1))["id"] == hostile


def test_rejects_a_cap_below_one_character():
    with pytest.raises(ValueError, match="max_chars"):
        truncate_tool_output("abc", tool_call_id="c", max_chars=0, recoverable=True)


alphabet = st.sampled_from("ab \n\té€😀")
texts = st.one_of(
    st.text(alphabet=alphabet, max_size=3000),
    st.builds(
        lambda seed, size: (seed * (size // len(seed) + 1))[:size],
        st.text(alphabet=alphabet, min_size=1, max_size=200),
        st.integers(0, 6000),
    ),
)


@settings(max_examples=300, deadline=None)
@given(text=texts, max_chars=st.integers(1, 1500), head_fraction=st.floats(0, 1), recoverable=st.booleans())
def test_head_plus_paged_middle_plus_tail_is_the_original_exactly(text, max_chars, head_fraction, recoverable):
    result = truncate_tool_output(
        text, tool_call_id="c9", max_chars=max_chars, head_fraction=head_fraction, recoverable=recoverable
    )
    if len(text) <= max_chars:
        assert result == text
        return
    head, marker, tail, n = split(result)
    assert len(head) + len(tail) <= max_chars
    assert len(head) <= int(max_chars * head_fraction)
    assert head + text[n["offset"] : n["offset"] + n["limit"]] + tail == text
    if recoverable:
        assert json.loads(CALL.search(marker).group(1)) == {"id": "c9", "offset": n["offset"], "limit": n["limit"]}


def test_cap_raw_keeps_text_within_the_cap_unchanged():
    assert cap_raw("héllo", 6) == "héllo"


def test_cap_raw_caps_bytes_and_ends_with_a_note():
    text = "line\n" * 10000
    capped = cap_raw(text, 1000)
    assert len(capped.encode()) <= 1000
    assert capped.endswith("was not saved]")
    assert text.startswith(capped[: capped.rindex("\n[raw output capped")])


@settings(max_examples=200, deadline=None)
@given(text=texts, cap=st.integers(120, 3000))
def test_cap_raw_never_splits_a_character_and_keeps_a_prefix(text, cap):
    capped = cap_raw(text, cap)
    assert len(capped.encode()) <= max(cap, len(text.encode()))
    if capped != text:
        kept = capped[: capped.rindex("\n[raw output capped")]
        note_bytes = len(capped.encode()) - len(kept.encode())
        assert text.startswith(kept)
        assert len(kept.encode()) + len(text[len(kept)].encode()) > cap - note_bytes
