"""Hostile files under the project root: keys and tokens must not leak through the file tools, and
no file, pattern or glob can hang the kernel.

The leak tests go end to end: a scripted model calls read_file and grep in a real Session over a
real LanceDB store, and every place a secret could land is searched: what the model was sent, the
messages table, and the tool.call.finished events (live and persisted).
"""

from __future__ import annotations

import json
import os
import random
import string
import threading
import time
from pathlib import Path

import pytest

from monad_notebook import Session
from monad_notebook import events as ev
from monad_notebook.agent.tools.base import ToolContext
from monad_notebook.agent.tools.files import grep, list_files, read_file
from monad_notebook.config import Config
from monad_notebook.errors import ToolError
from monad_notebook.testing import ScriptedModel, tool_call

B64 = string.ascii_letters + string.digits + "+/"
ALNUM = string.ascii_letters + string.digits


def rand(alphabet: str, n: int, seed: int) -> str:
    rng = random.Random(seed)
    return "".join(rng.choice(alphabet) for _ in range(n))


def pem(kind: str, lines: int, seed: int) -> tuple[str, list[str]]:
    body = [rand(B64, 64, seed * 1000 + i) for i in range(lines)]
    block = f"-----BEGIN {kind} PRIVATE KEY-----\n" + "\n".join(body) + f"\n-----END {kind} PRIVATE KEY-----"
    return block, body


RSA, RSA_BODY = pem("RSA", 25, 1)
OPENSSH, OPENSSH_BODY = pem("OPENSSH", 7, 2)
DEEP_RSA, DEEP_RSA_BODY = pem("RSA", 40, 3)
TOKENS = [f"ghp_{rand(ALNUM, 36, seed)}" for seed in range(10, 16)]
SECRETS = RSA_BODY + OPENSSH_BODY + DEEP_RSA_BODY + TOKENS


PROBES = [RSA_BODY[3][:20], TOKENS[0][:12]]  # greps for a piece of a secret: the model's own text


def leaked(haystack: str) -> list[str]:
    """Secrets of which any 12 consecutive characters of the random part appear in ``haystack``
    (besides the probes the model itself wrote)."""
    for probe in PROBES:
        haystack = haystack.replace(probe, "")
    found = []
    for secret in SECRETS:
        random_part = secret.removeprefix("ghp_")
        pieces = {random_part[i : i + 12] for i in range(0, len(random_part) - 11, 4)}
        if any(piece in haystack for piece in pieces):
            found.append(secret)
    return found


@pytest.fixture
def project(tmp_path) -> Path:
    """Keys and tokens placed where formatting used to break redaction: numbered lines, per-line
    grep hits, and the 2,000- and 300-character line clips."""
    root = tmp_path / "project"
    (root / "deploy").mkdir(parents=True)
    (root / "deploy" / "server.pem").write_text(f"{RSA}\n")
    (root / "deploy" / "id_ed25519").write_text(f"{OPENSSH}\n")
    filler = "".join(f"log line {i}: all quiet\n" for i in range(600))
    (root / "notes.txt").write_text(f"{filler}{DEEP_RSA}\n{filler}")
    (root / "long.txt").write_text(
        "a" * 1990
        + " "
        + TOKENS[0]
        + " tail\n"  # straddles read_file's 2,000-character clip
        + "b" * 290
        + " "
        + TOKENS[1]
        + " tail\n"  # straddles grep's 300-character clip
        + "c" * 5000
        + " "
        + TOKENS[2]
        + "\n"  # deep in a long line
        + f"config github_token = {TOKENS[3]}\n"
    )
    (root / "settings.json").write_text(json.dumps({"token": TOKENS[4], "key": RSA}) + "\n")
    (root / "ci.yml").write_text("x" * 1995 + " " + TOKENS[5] + "\n")
    return root


def session_over(project: Path, store, model: ScriptedModel) -> Session:
    config = Config.model_validate({"context": {"summarize": {"enabled": False}}})
    return Session("hostile", config=config, store=store, model=model, namespace={}, root=project)


FILE_CALLS = [
    ("read_file", {"path": "deploy/server.pem"}),
    ("read_file", {"path": "deploy/id_ed25519"}),
    ("read_file", {"path": "notes.txt", "offset": 610, "limit": 10}),  # inside the key body, header outside
    ("read_file", {"path": "notes.txt", "offset": 590, "limit": 30}),
    ("read_file", {"path": "notes.txt", "offset": 640, "limit": 5}),  # the END line only
    ("read_file", {"path": "long.txt"}),
    ("read_file", {"path": "settings.json"}),
    ("read_file", {"path": "ci.yml"}),
    ("grep", {"pattern": "[A-Za-z0-9+/]{40}"}),
    ("grep", {"pattern": "ghp_"}),
    ("grep", {"pattern": "PRIVATE KEY"}),
    ("grep", {"pattern": "^[A-Za-z0-9+/]{64}$", "path": "deploy"}),
    ("grep", {"pattern": PROBES[0]}),
    ("grep", {"pattern": PROBES[1]}),
    ("grep", {"pattern": "tail|token"}),
]


def test_keys_and_tokens_in_files_never_reach_the_model_the_store_or_the_events(project, store):
    model = ScriptedModel([tool_call(name, args) for name, args in FILE_CALLS] + ["done"])
    session = session_over(project, store, model)
    seen: list = []
    session.events.subscribe(seen.append)
    session.ask("look through the deployment files")

    sent = json.dumps([call.messages for call in model.calls])
    stored = json.dumps([m.content for m in store.load_messages("hostile")])
    finished = [e.data for e in seen if e.kind == ev.TOOL_FINISHED]
    persisted = [e.data for e in store.list_events("hostile", kind=ev.TOOL_FINISHED)]
    assert len(finished) == len(FILE_CALLS) and len(persisted) == len(FILE_CALLS)
    assert leaked(sent) == []
    assert leaked(stored) == []
    assert leaked(json.dumps(finished)) == [] and leaked(json.dumps(persisted)) == []
    results = [m["content"] for m in model.calls[-1].messages if m["role"] == "tool"]
    assert all("[REDACTED:" in results[i] for i in (0, 1, 2, 5, 6))
    assert "   600\tlog line 599: all quiet" in results[3]  # what is not a secret is still shown
    assert results[12].startswith("no matches") and results[13].startswith("no matches")


# --- nothing a model asks for can hang the kernel ------------------------------------------------------


def within(seconds: float, tool, *arguments):
    """Run ``tool.run(*arguments)`` in a thread; fail (instead of hanging the suite) if it has not returned in time."""
    outcome: dict = {}

    def run() -> None:
        started = time.perf_counter()
        try:
            outcome["value"] = tool.run(*arguments)
        except Exception as exc:
            outcome["error"] = exc
        outcome["seconds"] = time.perf_counter() - started

    thread = threading.Thread(target=run, daemon=True)
    thread.start()
    thread.join(seconds)
    assert not thread.is_alive(), f"still running after {seconds} s"
    return outcome


@pytest.fixture
def ctx(tmp_path) -> ToolContext:
    root = tmp_path / "p"
    root.mkdir()
    (root / "data.txt").write_text("region,revenue\nnorth,10\n")
    return ToolContext(session="t", namespace={}, root=root)


REDOS = ["(a+)+$", "(a|aa)+$", "(a|a)*b", "(.*a){12}$", r"^(\w+\s?)*$", "(a*)*$", "([a-z]+)*[0-9]"]


@pytest.mark.parametrize("pattern", REDOS)
def test_catastrophic_patterns_finish_in_linear_time_on_short_and_10_mb_lines(ctx, pattern):
    (ctx.root / "short.txt").write_text("a" * 28 + "!\n")  # Python's re needs about 30 s for (a+)+$ here
    (ctx.root / "long.txt").write_text("a" * 10_000_000 + "!\n")
    for path in ("short.txt", "long.txt"):
        outcome = within(5, grep, ctx, {"pattern": pattern, "path": path})
        assert "error" not in outcome and outcome["value"].startswith(("no matches", f"{path}:1: aaaa"))


@pytest.mark.parametrize("pattern", [r"(a)\1", "(?=north)n", "(?<=,)10", "(?!south)north", r"(?P<x>n)(?P=x)"])
def test_patterns_re2_cannot_match_in_linear_time_get_a_one_line_error(ctx, pattern):
    with pytest.raises(ToolError) as error:
        grep.run(ctx, {"pattern": pattern})
    message = str(error.value)
    assert "\n" not in message and "not supported" in message and "plain text" in message


def test_a_fifo_is_refused_by_read_file_and_skipped_by_grep_instead_of_blocking(ctx):
    os.mkfifo(ctx.root / "pipe")
    os.makedirs(ctx.root / "logs")
    os.mkfifo(ctx.root / "logs" / "live.fifo")
    (ctx.root / "logs" / "app.log").write_text("north started\n")
    outcome = within(5, read_file, ctx, {"path": "pipe"})
    assert "named pipe (FIFO), not a regular file" in str(outcome["error"])
    outcome = within(5, grep, ctx, {"pattern": "north"})
    assert outcome["value"].splitlines() == [
        "data.txt:2: north,10",
        "logs/app.log:1: north started",
        "[skipped 2 FIFO/socket/device file(s), not regular files: pipe, logs/live.fifo]",
    ]
    assert "skipped 1" in within(5, grep, ctx, {"pattern": "x", "path": "pipe"})["value"]
    assert "pipe" in within(5, list_files, ctx, {})["value"]


def test_a_socket_and_device_files_are_refused_without_being_read(ctx):
    import socket

    server = socket.socket(socket.AF_UNIX)
    server.bind(str(ctx.root / "s.sock"))
    try:
        outcome = within(5, read_file, ctx, {"path": "s.sock"})
        assert "is a socket, not a regular file" in str(outcome["error"])
    finally:
        server.close()
    devices = ToolContext(session="t", namespace={}, root=Path("/dev"))
    for name in ("zero", "null", "urandom"):
        outcome = within(5, read_file, devices, {"path": name})
        assert "is a device file, not a regular file" in str(outcome["error"])
        outcome = within(5, grep, devices, {"pattern": "x", "path": name})
        assert outcome["value"].endswith(f"not regular files: {name}]")


ESCAPING = ["../../**", "../*", "..", "data/../../*", "**/../../**", "/etc/*", "/**", "./../p/*"]


@pytest.mark.parametrize("pattern", ESCAPING)
def test_globs_that_leave_the_folder_are_refused_up_front(ctx, pattern):
    outcome = within(5, list_files, ctx, {"pattern": pattern})
    assert isinstance(outcome["error"], ToolError) and "leaves the folder" in str(outcome["error"])
    assert outcome["seconds"] < 1


def test_a_glob_over_a_huge_tree_stops_after_its_entry_budget(ctx, monkeypatch):
    from monad_notebook.agent.tools import files

    for i in range(30):
        (ctx.root / f"d{i}").mkdir()
        for j in range(10):
            (ctx.root / f"d{i}" / f"f{j}.txt").write_text("x")
    monkeypatch.setattr(files, "_MAX_SCAN", 100)
    out = list_files.run(ctx, {"pattern": "**/*.nomatch"})
    assert out == "[... stopped after scanning 100 entries; narrow the pattern or path ...]"
    assert list_files.run(ctx, {"pattern": "d1/*.txt"}).count(".txt") == 10


def test_a_glob_from_the_filesystem_root_returns_in_bounded_time():
    everything = ToolContext(session="t", namespace={}, root=Path("/"))
    outcome = within(60, list_files, everything, {"pattern": "**/*.no-such-extension"})
    assert outcome["value"].startswith("[... stopped after scanning ")
