"""What the agent's code shows in the cell holds no secret: IPython's real shell, its output as a frontend gets it.

IPython's own ``capture_output`` stands where the frontend is: it replaces stdout, stderr and the
shell's display publisher, and keeps what the kernel would send. The model's copy is checked too.
"""

from __future__ import annotations

import base64
import sys

import pytest
from IPython.utils.capture import capture_output

from monad_notebook.agent.tools.base import ToolContext
from monad_notebook.agent.tools.python import python
from monad_notebook.redaction.redactor import Redactor
from tests.agent.tools.test_python import LiveStream

GITHUB = "ghp_" + "Zq8Lr2Xw9Kp4Tn7V" * 2 + "aB3d"
AWS = "AKIA" + "QX7ZL2MPK4RT6WV3"
PASSWORD = "Tr0ub4dor&3x"
SETTINGS = f"GITHUB_TOKEN={GITHUB}\naws_access_key_id = {AWS}\nDB_PASSWORD={PASSWORD}\nregion = eu-west-1\n"
SECRETS = (GITHUB, AWS, PASSWORD)
PNG = base64.b64encode(b"\x89PNG\r\n\x1a\n" + GITHUB.encode()).decode()


@pytest.fixture
def ctx(ip, tmp_path, isolated_env, monkeypatch):
    monkeypatch.setattr(ip.display_formatter, "active_types", ["text/plain", "text/html", "text/markdown", "image/png"])
    (isolated_env / "settings.env").write_text(SETTINGS)
    return ToolContext(
        session="t", namespace=ip.user_ns, root=tmp_path, shell=ip, python_approval="auto", redactor=Redactor()
    )


def shown(captured) -> str:
    """Everything the frontend received: both streams and every form of every display."""
    return captured.stdout + captured.stderr + "".join(repr(output.data) for output in captured.outputs)


def leaked(text: str) -> list[str]:
    return [secret for secret in SECRETS if secret in text]


def test_the_environment_printed_by_the_agent_reaches_the_cell_redacted(ctx, monkeypatch):
    monkeypatch.setenv("GITHUB_TOKEN", GITHUB)
    with capture_output() as captured:
        out = python.run(ctx, {"code": "import os\nprint(os.environ)"})
    assert "'GITHUB_TOKEN': '[REDACTED:env:GITHUB_TOKEN]'" in captured.stdout
    assert GITHUB not in captured.stdout and GITHUB in out  # the model's copy is redacted whole by the cascade


@pytest.mark.parametrize(
    "code",
    [
        "for line in open('settings.env'):\n    print(line[:9], end='')\n    print(line[9:], end='')",
        "import shutil, sys\nshutil.copyfileobj(open('settings.env'), sys.stdout, 7)",
        "import sys\nfor piece in open('settings.env').read():\n    sys.stderr.write(piece)",
        "text = open('settings.env').read()\nprint(text[:20], end='', flush=True)\nprint(text[20:], end='')",
    ],
    ids=["two-prints-a-line", "copied-in-7-char-chunks", "one-char-at-a-time-to-stderr", "flushed-mid-key"],
)
def test_a_key_written_in_pieces_is_still_caught(ctx, code):
    with capture_output() as captured:
        python.run(ctx, {"code": code})
    assert not leaked(shown(captured))
    assert "region = eu-west-1" in shown(captured) and "[REDACTED:github]" in shown(captured)


def test_displays_and_the_last_value_reach_the_cell_redacted_and_images_pass_as_they_are(ctx):
    code = (
        "from IPython.display import HTML, JSON, Markdown, Image, display\n"
        f"key = {GITHUB[:8]!r} + {GITHUB[8:]!r}\n"
        "display(HTML(f'<b>{key}</b>'), Markdown(f'`{key}`'))\n"
        f"display({{'application/json': {{'password': {PASSWORD!r}, 'id': 7}}, 'text/plain': 'settings'}}, raw=True)\n"
        f"display({{'image/png': {PNG!r}, 'text/plain': 'a plot'}}, raw=True)\n"
        "key"
    )
    with capture_output() as captured:
        python.run(ctx, {"code": code})
    bundles = [output.data for output in captured.outputs]
    assert bundles[0]["text/html"] == "<b>[REDACTED:github]</b>"
    assert bundles[1]["text/markdown"] == "`[REDACTED:github]`"
    assert bundles[2]["application/json"] == {"password": "[REDACTED:password]", "id": 7}
    assert bundles[3]["image/png"] == PNG
    assert "Out[" in captured.stdout and "'[REDACTED:github]'" in captured.stdout
    assert not leaked(captured.stdout + "".join(repr(bundle) for bundle in bundles[:3]))


class KernelTraceback:
    """What a kernel's ``_showtraceback`` sends the frontend: the traceback's lines and ``str`` of the exception."""

    def __init__(self) -> None:
        self.sent: list[str] = []

    def __call__(self, etype, evalue, stb) -> None:
        self.sent += [etype.__name__, str(evalue), *stb]


def test_a_traceback_holding_a_key_reaches_the_frontend_redacted(ctx, ip, monkeypatch):
    kernel = KernelTraceback()
    monkeypatch.setattr(ip, "_showtraceback", kernel)
    code = f"token = {GITHUB[:8]!r} + {GITHUB[8:]!r}\nraise ValueError(f'bad token {{token}}')"
    out = python.run(ctx, {"code": code})
    assert kernel.sent[:2] == ["ValueError", "bad token [REDACTED:github]"]
    assert not leaked("".join(kernel.sent)) and any("ValueError" in line for line in kernel.sent[2:])
    assert out.startswith(f"error: ValueError: bad token {GITHUB}")  # the model's copy: the cascade redacts it


def test_output_stays_live_line_by_line_while_the_code_runs(ctx, monkeypatch):
    stream = LiveStream()
    monkeypatch.setattr(sys, "stdout", stream)
    ctx.namespace["py_stream"] = stream
    code = (
        "import time\npy_seen = []\n"
        "for epoch in range(3):\n    print(f'epoch {epoch}')\n    py_seen.append(''.join(py_stream.writes))\n"
        "    time.sleep(0.06)\n"
        "for step in range(2000):\n    print(f'step {step}')\n"
        "time.sleep(0.2)\npy_seen.append(''.join(py_stream.writes))"
    )
    python.run(ctx, {"code": code})
    seen = ctx.namespace["py_seen"]
    assert [f"epoch {n}\n" in seen[n] for n in range(3)] == [True] * 3 and "epoch 1" not in seen[0]
    assert "step 1999\n" in seen[3]  # a burst is shown while the code sleeps, before the call ends


def test_a_progress_bar_redrawn_with_carriage_returns_shows_as_it_goes(ctx, monkeypatch):
    stream = LiveStream()
    monkeypatch.setattr(sys, "stdout", stream)
    ctx.namespace["py_stream"] = stream
    code = (
        "import sys, time\npy_bar = []\n"
        "for done in range(0, 101, 20):\n"
        "    sys.stdout.write(f'\\r[{\"#\" * (done // 10):<10}] {done}%')\n    sys.stdout.flush()\n"
        "    time.sleep(0.06)\n    py_bar.append(''.join(py_stream.writes))\n"
        "print()"
    )
    python.run(ctx, {"code": code})
    during = ctx.namespace["py_bar"]
    assert "60%" in during[-1] and "40%" not in during[1]
    assert "".join(stream.writes).split("\r")[-1] == "[##########] 100%\n"


def test_the_users_own_cells_are_never_touched(ctx, ip, monkeypatch):
    monkeypatch.setenv("GITHUB_TOKEN", GITHUB)
    with capture_output() as captured:
        python.run(ctx, {"code": "import logging, sys\npy_handler = logging.StreamHandler(sys.stdout)"})
        ip.run_cell("import os\nprint(os.environ['GITHUB_TOKEN'])")
        ctx.namespace["py_handler"].stream.write(f"later: {GITHUB}\n")
    assert captured.stdout == f"{GITHUB}\nlater: [REDACTED:env:GITHUB_TOKEN]\n"  # the agent's handler still is


def test_with_redaction_off_the_cell_shows_what_the_code_printed(ctx):
    ctx.redactor = Redactor(enabled=False)
    with capture_output() as captured:
        python.run(ctx, {"code": "print(open('settings.env').read())"})
    assert leaked(captured.stdout) == list(SECRETS)


def test_a_long_line_written_in_pieces_is_shown_as_it_comes_and_a_key_at_a_cut_is_caught(ctx, monkeypatch):
    stream = LiveStream()
    monkeypatch.setattr(sys, "stdout", stream)
    ctx.namespace["py_stream"] = stream
    code = (
        f"key = {GITHUB[:8]!r} + {GITHUB[8:]!r}\n"
        "for n in range(200):\n    print('x' * 997 + ' ' + key + ' ', end='')\n"
        "import time\ntime.sleep(0.2)\npy_during = ''.join(py_stream.writes)"
    )
    python.run(ctx, {"code": code})
    assert len(ctx.namespace["py_during"]) > 100_000 and not leaked("".join(stream.writes))
    assert "".join(stream.writes).count("[REDACTED:github]") == 200
