"""A real kernel: what a worker thread says stays out of unrelated cells and shows once at the next %%monad cell."""

from __future__ import annotations

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
