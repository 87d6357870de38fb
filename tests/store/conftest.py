"""The stores the contract tests run against, and an S3-compatible server (moto) on loopback for object storage."""

from __future__ import annotations

import socket
import subprocess
import sys
import time
import urllib.request
from collections.abc import Iterator

import pytest

BUCKETS = ("team-bucket", "notebooks")


@pytest.fixture(scope="session")
def s3_endpoint() -> Iterator[str]:
    """moto's S3 server on an ephemeral 127.0.0.1 port, with the empty buckets the tests use."""
    pytest.importorskip("moto.server")
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        port = sock.getsockname()[1]
    server = subprocess.Popen(
        [sys.executable, "-m", "moto.server", "-H", "127.0.0.1", "-p", str(port)],
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
    )
    endpoint = f"http://127.0.0.1:{port}"
    try:
        for bucket in BUCKETS:
            for _ in range(300):
                try:
                    urllib.request.urlopen(urllib.request.Request(f"{endpoint}/{bucket}", method="PUT"), timeout=1)
                    break
                except OSError:
                    time.sleep(0.1)
            else:
                pytest.fail(f"moto's S3 server did not start on {endpoint}")
        yield endpoint
    finally:
        server.terminate()
        server.wait(timeout=10)


@pytest.fixture(params=["lance", "memory"])
def each_store(request, tmp_path):
    """LanceDB in a temp dir, then the in-memory twin: a contract test runs on both."""
    from monad_notebook.store.lance import LanceStore
    from monad_notebook.testing.memory_store import MemoryStore

    store = LanceStore(tmp_path / "db") if request.param == "lance" else MemoryStore()
    yield store
    store.close()
