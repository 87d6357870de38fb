"""File tools on a real directory tree: rooted paths, bounded reads, binary files, grep."""

from __future__ import annotations

import os
import time

import pytest

from monad_notebook.agent.tools import file_search
from monad_notebook.agent.tools.base import ToolContext
from monad_notebook.agent.tools.file_access import redact_lines
from monad_notebook.agent.tools.files import grep, list_files, read_file
from monad_notebook.errors import ToolError
from monad_notebook.redaction.redactor import Redactor

TOKEN = "ghp_" + "R7kQ2mZ9xL4pT8wN3bV6yH1cF5jD0sAeGu2K"
BODY = [
    ("MIIEowIBAAKCAQEA" + f"{i:02d}" + "x9Lq3Zr7Tb2Wm5Nc8Vf1Hk4Jd6Gs0Pa9Qe3Ry7Uo2Ii5Yt8Kl1Zx4Cv7Bn0Mw")[:64]
    for i in range(12)
]
KEY = "-----BEGIN RSA PRIVATE KEY-----\n" + "\n".join(BODY) + "\n-----END RSA PRIVATE KEY-----"


@pytest.fixture
def project(tmp_path):
    root = tmp_path / "project"
    (root / "data").mkdir(parents=True)
    (root / "src" / "pkg").mkdir(parents=True)
    (root / "data" / "sales.csv").write_text("region,revenue\nnorth,10\nsouth,30\n")
    (root / "src" / "pkg" / "model.py").write_text("def fit(x):\n    return x  # TODO: real model\n")
    (root / "notes.md").write_text("".join(f"line {i}\n" for i in range(1, 501)))
    (root / "blob.bin").write_bytes(b"\x89PNG\r\n\x1a\n\x00\x00" + bytes(range(256)) * 10)
    (tmp_path / "secret.txt").write_text("TOP SECRET TODO\n")
    return root


@pytest.fixture
def ctx(project):
    return ToolContext(session="t", namespace={}, root=project)


@pytest.fixture
def redacting(project):
    """A context as a session builds it: with the redactor the tools call before formatting."""
    return ToolContext(session="t", namespace={}, root=project, redactor=Redactor(env={}))


def pieces(secret: str) -> list[str]:
    return [secret[i : i + 8] for i in range(4, len(secret) - 7, 4)]


def test_list_files_shows_entries_with_sizes(ctx):
    out = list_files.run(ctx, {})
    assert out.splitlines() == ["blob.bin  2.5 KB", "data/", "notes.md  4.3 KB", "src/"]


def test_list_files_recursive_pattern(ctx):
    assert list_files.run(ctx, {"pattern": "**/*.py"}) == "src/pkg/model.py  45 B"
    assert "no entries" in list_files.run(ctx, {"path": "data", "pattern": "*.parquet"})


def test_read_file_numbers_lines_and_says_how_to_continue(ctx):
    out = read_file.run(ctx, {"path": "notes.md", "offset": 10, "limit": 3})
    lines = out.splitlines()
    assert lines[0] == "notes.md: lines 11-13 of 500 lines"
    assert lines[1:4] == ["    11\tline 11", "    12\tline 12", "    13\tline 13"]
    assert "read_file(path='notes.md', offset=13)" in lines[4]


def test_read_file_last_window_has_no_continuation(ctx):
    out = read_file.run(ctx, {"path": "data/sales.csv"})
    assert out == "data/sales.csv: lines 1-3 of 3 lines\n     1\tregion,revenue\n     2\tnorth,10\n     3\tsouth,30"
    assert "no lines after line 10" in read_file.run(ctx, {"path": "data/sales.csv", "offset": 10})


def test_read_file_reports_binary_files_instead_of_showing_them(ctx):
    assert read_file.run(ctx, {"path": "blob.bin"}) == "blob.bin: binary file, 2570 bytes, not shown"


def test_read_file_on_a_directory_or_missing_file_says_what_to_do(ctx):
    with pytest.raises(ToolError, match="is a directory; use list_files"):
        read_file.run(ctx, {"path": "data"})
    with pytest.raises(ToolError, match="does not exist"):
        read_file.run(ctx, {"path": "nope.txt"})


@pytest.mark.parametrize("path", ["../secret.txt", "data/../../secret.txt", "/etc/passwd", "~/.bashrc"])
def test_paths_outside_the_root_are_refused(ctx, path):
    for call in (lambda: read_file.run(ctx, {"path": path}), lambda: grep.run(ctx, {"pattern": "x", "path": path})):
        with pytest.raises(ToolError, match="outside the working directory"):
            call()


def test_symlinks_resolving_outside_the_root_are_refused_and_skipped(ctx, project):
    (project / "escape.txt").symlink_to(project.parent / "secret.txt")
    (project / "escape_dir").symlink_to(project.parent)
    (project / "inside.csv").symlink_to(project / "data" / "sales.csv")
    with pytest.raises(ToolError, match="outside the working directory"):
        read_file.run(ctx, {"path": "escape.txt"})
    with pytest.raises(ToolError, match="outside the working directory"):
        list_files.run(ctx, {"path": "escape_dir"})
    assert "north,10" in read_file.run(ctx, {"path": "inside.csv"})
    listing = list_files.run(ctx, {})
    assert "escape" not in listing and "inside.csv" in listing
    assert grep.run(ctx, {"pattern": "SECRET"}) == "no matches for 'SECRET' in ."


def test_a_50_mb_file_is_read_in_a_window_quickly(ctx, project):
    line = "2024-01-01T00:00:00 INFO request served in 12 ms " + "x" * 50 + "\n"
    with open(project / "big.log", "w") as handle:
        handle.write(line * (50_000_000 // len(line)))
    started = time.perf_counter()
    out = read_file.run(ctx, {"path": "big.log", "offset": 400_000, "limit": 5})
    assert time.perf_counter() - started < 10
    assert out.startswith("big.log: lines 400001-400005 of 500000 lines") and len(out) < 1000


def test_a_single_huge_line_is_cut_not_loaded(ctx, project):
    (project / "min.json").write_text('{"a": "' + "y" * 5_000_000 + '"}\nsecond line\n')
    out = read_file.run(ctx, {"path": "min.json"})
    assert "line truncated, 5000010 bytes in all" in out and "     2\tsecond line" in out
    assert len(out) < 3000


def test_grep_reports_file_line_and_text(ctx):
    out = grep.run(ctx, {"pattern": r"TODO|north"})
    assert out.splitlines() == ["data/sales.csv:2: north,10", "src/pkg/model.py:2: return x  # TODO: real model"]


def test_grep_falls_back_to_literal_text_for_an_invalid_regex(ctx):
    assert grep.run(ctx, {"pattern": "fit(", "path": "src"}) == "src/pkg/model.py:1: def fit(x):"


def test_grep_skips_binary_files_and_bounds_results(ctx):
    assert "blob.bin" not in grep.run(ctx, {"pattern": "PNG"})
    out = grep.run(ctx, {"pattern": r"line \d+", "path": "notes.md", "max_results": 3})
    assert out.splitlines() == [
        "notes.md:1: line 1",
        "notes.md:2: line 2",
        "notes.md:3: line 3",
        "[... more matches not shown; narrow the pattern or path ...]",
    ]


def test_grep_skips_hidden_tool_folders(ctx, project):
    os.makedirs(project / ".git")
    (project / ".git" / "config").write_text("north remote\n")
    assert ".git" not in grep.run(ctx, {"pattern": "north"})


def test_grep_says_when_nothing_matches(ctx):
    assert grep.run(ctx, {"pattern": "no such text anywhere"}) == "no matches for 'no such text anywhere' in ."


def test_a_token_straddling_the_read_file_clip_is_redacted_not_cut(redacting, project):
    (project / "wide.txt").write_text("a" * 1970 + " token " + TOKEN + " end\n")
    out = read_file.run(redacting, {"path": "wide.txt"})
    assert not any(piece in out for piece in pieces(TOKEN)) and redacting.redacted
    assert out.endswith("\t" + "a" * 1970 + " token [REDACTED:github] end")  # 1,998 characters: not clipped


def test_a_token_straddling_the_grep_clip_is_redacted_not_cut(redacting, project):
    (project / "wide.txt").write_text("b" * 280 + " token " + TOKEN + " end\n")
    out = grep.run(redacting, {"pattern": "token"})
    assert out == "wide.txt:1: " + ("b" * 280 + " token [REDACTED:github] end")[:300]
    assert grep.run(redacting, {"pattern": TOKEN[4:12]}).startswith("no matches")


def test_read_file_shows_a_key_block_as_one_placeholder_labelled_with_its_lines(redacting, project):
    (project / "deploy.txt").write_text(f"host = web1\n{KEY}\nport = 22\n")
    out = read_file.run(redacting, {"path": "deploy.txt"})
    assert out.splitlines() == [
        "deploy.txt: lines 1-16 of 16 lines",
        "     1\thost = web1",
        "  2-15\t[REDACTED:private-key]",
        "    16\tport = 22",
    ]
    inside = read_file.run(redacting, {"path": "deploy.txt", "offset": 5, "limit": 3})
    assert inside.splitlines()[1:] == [
        "  2-15\t[REDACTED:private-key]",
        "[... more lines: read_file(path='deploy.txt', offset=8) continues ...]",
    ]


def test_grep_never_matches_inside_a_key_body_and_numbers_later_lines_right(redacting, project):
    (project / "deploy.txt").write_text(f"host = web1\n{KEY}\nport = 22\n")
    assert grep.run(redacting, {"pattern": "MIIE", "path": "deploy.txt"}).startswith("no matches")
    assert grep.run(redacting, {"pattern": "port"}) == "deploy.txt:16: port = 22"
    assert grep.run(redacting, {"pattern": "host|RSA"}) == "deploy.txt:1: host = web1"


def test_a_key_crossing_a_grep_block_boundary_is_still_redacted(redacting, project, monkeypatch):
    monkeypatch.setattr(file_search, "_BLOCK_LINES", 5)
    (project / "deploy.txt").write_text("".join(f"line {i}\n" for i in range(3)) + KEY + "\nafter\n")
    out = grep.run(redacting, {"pattern": "[A-Za-z0-9]{20}|after", "path": "deploy.txt"})
    assert not any(line in out for line in BODY)
    assert out.splitlines()[-1] == "deploy.txt:18: after"


def test_redacted_lines_keep_their_numbers_around_blocks_that_collapse():
    lines = ["a", "SECRET-1", "SECRET-2", "b", "b", "SECRET-3", "SECRET-4", "SECRET-5", "c"]

    def collapse(text: str) -> str:
        return text.replace("SECRET-1\nSECRET-2", "[X]").replace("SECRET-3\nSECRET-4\nSECRET-5", "[Y]")

    shown = [(entry.label, entry.text) for entry in redact_lines(collapse, lines, 10)]
    assert shown == [("11", "a"), ("12-13", "[X]"), ("14", "b"), ("15", "b"), ("16-18", "[Y]"), ("19", "c")]

    def grow(text: str) -> str:
        return text.replace("SECRET-1", "one\ntwo")

    assert [e.label for e in redact_lines(grow, lines[:3], 0)] == ["1", "2", "2", "3"]


@pytest.mark.parametrize("pattern", [r"\Anorth", "^north", r"10\z", "10$", r"(?s)n.r.h", r"(?i)NORTH,\d+"])
def test_grep_anchors_and_flags_apply_to_each_line(ctx, pattern):
    assert grep.run(ctx, {"pattern": pattern, "path": "data"}) == "data/sales.csv:2: north,10"
