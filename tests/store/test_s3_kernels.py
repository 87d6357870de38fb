"""Two Jupyter kernels of one team share a history on S3 (moto on loopback).

Real kernels, real ``%%monad`` cells, the team's agents.json with no secret in it: the
key pair comes from the AWS_* variables of the environment the kernels start in. The
prefix is fresh, so both kernels create the tables in the same moment.
"""

from __future__ import annotations

import json
import os
import uuid
from pathlib import Path
from typing import Any

import pytest

from monad_notebook.demo import dataset_path
from monad_notebook.store.lance import LanceStore

pytestmark = pytest.mark.slow

BUCKET = "notebooks"
KEYS = {"AWS_ACCESS_KEY_ID": "team-key", "AWS_SECRET_ACCESS_KEY": "team-secret-from-the-spawner"}
QUESTIONS = ("Load data/sales.csv and tell me what's in it.", "Which region grew fastest last quarter?")


class Kernel:
    """A started kernel and its client; ``send`` queues a cell, ``collect`` waits for its outputs."""

    def __init__(self, workdir: Path, env: dict[str, str]) -> None:
        from jupyter_client.manager import start_new_kernel

        self.manager, self.client = start_new_kernel(kernel_name="python3", cwd=str(workdir), env=env)

    def send(self, code: str) -> str:
        return self.client.execute(code)

    def collect(self, msg_id: str, timeout: float = 180) -> str:
        """What the cell shows: its printed text, then the latest state of each of its displays."""
        printed: list[str] = []
        shown: dict[str, str] = {}
        while True:
            msg = self.client.get_iopub_msg(timeout=timeout)
            if msg["parent_header"].get("msg_id") != msg_id:
                continue
            kind, content = msg["msg_type"], msg["content"]
            if kind == "error":
                pytest.fail("\n".join(content["traceback"]))
            if kind == "stream":
                printed.append(content["text"])  # one print may arrive in several chunks
            elif kind in ("display_data", "update_display_data", "execute_result"):
                data: dict[str, Any] = content["data"]
                key = content.get("transient", {}).get("display_id") or str(len(shown))  # updated in place
                shown[key] = data.get("text/markdown") or data.get("text/plain", "")
            elif kind == "status" and content["execution_state"] == "idle":
                return "".join(printed) + "\n".join(shown.values())

    def run(self, code: str) -> str:
        return self.collect(self.send(code))

    def stop(self) -> None:
        self.client.stop_channels()
        self.manager.shutdown_kernel(now=True)


def team_notebook_dir(root: Path, user: str, endpoint: str, prefix: str) -> Path:
    """A hub user's home: the dataset and the team's agents.json (endpoint and region only)."""
    home = root / user
    (home / "data").mkdir(parents=True)
    (home / "data" / "sales.csv").write_bytes(dataset_path().read_bytes())
    options = {"aws_endpoint": endpoint, "aws_region": "us-east-1", "allow_http": "true"}
    config = {
        "store": {"uri": f"s3://{BUCKET}/{prefix}", "storageOptions": options},
        "models": {"main": {"model": "scripted-demo"}},
        "tools": {"python": {"approval": "auto"}},
    }
    (home / "agents.json").write_text(json.dumps(config))
    return home


def test_two_kernels_start_a_fresh_team_database_at_once_and_pick_up_each_others_sessions(
    s3_endpoint: str, isolated_env: Path, tmp_path: Path
) -> None:
    prefix = f"hub-{uuid.uuid4().hex[:8]}"
    env = {**os.environ, **KEYS}
    kernels = {
        user: Kernel(team_notebook_dir(tmp_path / "homes", user, s3_endpoint, prefix), env) for user in ("alice", "bob")
    }
    try:
        for kernel in kernels.values():
            kernel.run("%load_ext monad_notebook")
        queued = {  # both kernels run their turns at the same time, from the very first write
            user: [kernel.send(f"%%monad --session {user}/eda\n{q}") for q in QUESTIONS]
            for user, kernel in kernels.items()
        }
        answers = {user: [kernels[user].collect(msg_id) for msg_id in ids] for user, ids in queued.items()}
        for user in kernels:
            assert "936 rows" in answers[user][0] and "South" in answers[user][1]

        listed = kernels["bob"].run("%monad sessions")
        assert "alice/eda" in listed and "bob/eda" in listed
        recap = kernels["bob"].run("%%monad --session alice/eda\nRecap what we found so far.")
        assert "Which region grew fastest last quarter?" in recap  # alice's turns, read by bob's kernel
    finally:
        for kernel in kernels.values():
            kernel.stop()

    options = {"aws_endpoint": s3_endpoint, "aws_region": "us-east-1", "allow_http": "true"}
    store = LanceStore(
        f"s3://{BUCKET}/{prefix}", storage_options={**options, **{k.lower(): v for k, v in KEYS.items()}}
    )
    asked = {
        name: [m.content for m in store.load_messages(name) if m.role == "user"] for name in ("alice/eda", "bob/eda")
    }
    assert asked == {"alice/eda": [*QUESTIONS, "Recap what we found so far."], "bob/eda": list(QUESTIONS)}
    assert sorted(s.name for s in store.list_sessions()) == ["alice/eda", "bob/eda"]
    everything = [m for name in ("alice/eda", "bob/eda") for m in store.load_messages(name)]
    assert len({m.id for m in everything}) == len(everything)  # nothing written twice
    assert not any(KEYS["AWS_SECRET_ACCESS_KEY"] in m.content for m in everything)
    assert not (isolated_env.parent / "monad-home" / "db").exists()  # nothing fell back to a local database
    store.close()
