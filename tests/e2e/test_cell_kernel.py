"""A real kernel: what a worker thread says stays out of unrelated cells and shows once at the next %%monad cell."""

from __future__ import annotations

import json
import time

import pytest

pytestmark = pytest.mark.slow

WARN_FROM_A_WORKER = """\
import logging, threading
worker = threading.Thread(
    target=lambda: logging.getLogger("monad_notebook.store.tables").warning("optimize failed: disk is busy"),
    name="monad-store-optimize",
)
worker.start(); worker.join()
print("plain cell done")
"""


def run(kc, code: str) -> list[dict]:
    """The iopub messages of one cell: (msg_type, content)."""
    seen: list[dict] = []
    reply = kc.execute_interactive(code, timeout=60, output_hook=lambda msg: seen.append(msg))
    assert reply["content"]["status"] == "ok", reply["content"]
    return [{"type": m["msg_type"], **m["content"]} for m in seen]


def shown_text(messages: list[dict]) -> str:
    texts = []
    for message in messages:
        if message["type"] == "stream":
            texts.append(message["text"])
        elif message["type"] in ("display_data", "update_display_data"):
            texts.append(message["data"].get("text/plain", ""))
    return "\n".join(texts)


def test_a_worker_threads_warning_skips_the_plain_cell_and_shows_once_at_the_next_monad_cell(isolated_env):
    from jupyter_client.manager import start_new_kernel

    km, kc = start_new_kernel(kernel_name="python3", cwd=str(isolated_env))
    try:
        run(kc, "%load_ext monad_notebook")
        plain = run(kc, WARN_FROM_A_WORKER)
        assert [m["name"] for m in plain if m["type"] == "stream"] == ["stdout"]
        assert "disk is busy" not in shown_text(plain)
        first = shown_text(run(kc, "%%monad --model scripted-demo --session bg\nWhat is in my namespace?"))
        assert first.count("background warning: optimize failed: disk is busy") == 1
        second = shown_text(run(kc, "%%monad --model scripted-demo\nAnd now?"))
        assert "disk is busy" not in second
    finally:
        kc.stop_channels()
        km.shutdown_kernel(now=True)


def test_agent_code_past_the_time_limit_stops_in_a_real_kernel_and_the_next_cell_runs(isolated_env):
    from jupyter_client.manager import start_new_kernel

    from monad_notebook.testing import FakeOpenAIServer, tool_call

    with FakeOpenAIServer() as server:
        agents = {
            "models": {"main": {"model": "m", "baseUrl": server.base_url, "maxRetries": 0}},
            "tools": {"python": {"approval": "auto", "timeoutSeconds": 1}},
        }
        (isolated_env / "agents.json").write_text(json.dumps(agents))
        server.queue(tool_call("python", {"code": "print('spinning')\nwhile True:\n    pass"}), "stopped it")
        server.queue(tool_call("python", {"code": "print(6 * 7)"}), "all done")
        km, kc = start_new_kernel(kernel_name="python3", cwd=str(isolated_env))
        try:
            run(kc, "%load_ext monad_notebook")
            started = time.monotonic()
            first = shown_text(run(kc, "%%monad --session limits\nspin"))
            took = time.monotonic() - started
            second = shown_text(run(kc, "%%monad\nmultiply"))
            plain = shown_text(run(kc, "print('plain cell')"))
        finally:
            kc.stop_channels()
            km.shutdown_kernel(now=True)
    assert took < 20 and "spinning" in first and "42" in second and plain == "plain cell\n"
    results = [m["content"] for r in server.chat_requests for m in r["messages"] if m["role"] == "tool"]
    assert results[0] == "stdout:\nspinning\nerror: stopped after 1 s (tools.python.timeoutSeconds); " + (
        "the output it printed before that is kept above"
    )
    assert results[-1] == "stdout:\n42"


HEAP = """\
import gc, json, time, weakref
class Node: pass
first = Node(); second = Node(); first.other = second; second.other = first
cycle = weakref.ref(first)
del first, second
started = time.perf_counter(); gc.collect(); took = time.perf_counter() - started
print(json.dumps({"scanned": len(gc.get_objects()), "frozen": gc.get_freeze_count(), "cycle_freed": cycle() is None,
                  "ms": round(1000 * took, 1)}))
"""


def heap(kc) -> dict:
    printed = shown_text(run(kc, HEAP))
    return json.loads(printed.strip().splitlines()[-1])


def test_after_the_first_monad_cell_full_collections_skip_what_the_kernel_loaded_and_still_free_new_cycles(
    isolated_env,
):
    from jupyter_client.manager import start_new_kernel

    km, kc = start_new_kernel(kernel_name="python3", cwd=str(isolated_env))
    try:
        run(kc, "%load_ext monad_notebook")
        before = heap(kc)
        run(kc, "%%monad --model scripted-demo --session heap\nWhat is in my namespace?")
        after = heap(kc)
        run(kc, "%%monad --model scripted-demo\nAnd now?")
        later = heap(kc)
    finally:
        kc.stop_channels()
        km.shutdown_kernel(now=True)
    print("full collection:", before, after, later)
    assert before["frozen"] == 0 and before["cycle_freed"]
    assert after["frozen"] > 50_000  # LanceDB, onnxruntime, IPython and the extension, loaded by the first cell
    assert after["scanned"] < after["frozen"] / 5  # what a full collection still scans
    assert after["cycle_freed"] and later["cycle_freed"]  # garbage made after the freeze is still collected
    assert later["frozen"] <= after["frozen"]  # once per kernel; reference counting still frees frozen objects


TOKEN = "ghp_" + "Zq8Lr2Xw9Kp4Tn7V" * 2 + "aB3d"
SHOWS_THE_TOKEN = """\
import os, time
print(os.environ)
token = os.environ["GITHUB_TOKEN"]
for step in range(3):
    print(f"progress {step}")
    time.sleep(0.5)
print(token[:9], end="")
print(token[9:])
from IPython.display import Markdown, display
display(Markdown(f"the token is `{token}`"))
raise ValueError(f"rejected {token}")
"""


def test_what_the_agents_code_shows_reaches_a_real_frontend_with_no_key_and_its_progress_arrives_live(isolated_env):
    from jupyter_client.manager import start_new_kernel

    from monad_notebook.testing import FakeOpenAIServer, tool_call

    seen: list[tuple[float, dict]] = []
    with FakeOpenAIServer() as server:
        agents = {
            "models": {"main": {"model": "m", "baseUrl": server.base_url, "maxRetries": 0}},
            "tools": {"python": {"approval": "auto"}},
        }
        (isolated_env / "agents.json").write_text(json.dumps(agents))
        server.queue(tool_call("python", {"code": SHOWS_THE_TOKEN}), "shown")
        km, kc = start_new_kernel(kernel_name="python3", cwd=str(isolated_env))
        try:
            run(kc, f"%load_ext monad_notebook\nimport os\nos.environ['GITHUB_TOKEN'] = {TOKEN!r}")
            kc.execute_interactive(
                "%%monad --session shown\nshow me", timeout=90, output_hook=lambda m: seen.append((time.monotonic(), m))
            )
        finally:
            kc.stop_channels()
            km.shutdown_kernel(now=True)
    sent = json.dumps([message["content"] for _, message in seen])
    errors = [message["content"] for _, message in seen if message["msg_type"] == "error"]
    assert TOKEN not in sent and sent.count("[REDACTED:env:GITHUB_TOKEN]") >= 4
    assert errors[0]["ename"] == "ValueError" and errors[0]["evalue"] == "rejected [REDACTED:env:GITHUB_TOKEN]"
    arrived = [
        next(at for at, m in seen if m["msg_type"] == "stream" and f"progress {n}" in m["content"]["text"])
        for n in range(3)
    ]
    assert arrived[1] - arrived[0] > 0.3 and arrived[2] - arrived[1] > 0.3  # each line as it was printed
