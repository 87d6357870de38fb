"""llama-server on a benchmark fixture, run as users run it, for as long as a ``with`` block lasts.

The build is found, and its environment set, as ``monad_notebook.testing.llama`` does for the
tests: the installed builds in its order, the next one tried when this CPU lacks the
instructions of one (the server dies of SIGILL while warming up). One thread for prompt and
generation by default, one slot, a free 127.0.0.1 port unless one is given.
"""

from __future__ import annotations

import shlex
import signal
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from types import ModuleType


class FixtureError(RuntimeError):
    """A fixture cannot be had, is not what was pinned, or its server died: the message says what to do."""


def say(text: str) -> None:
    print(f"[fixtures] {text}", flush=True)


@dataclass
class RunningServer:
    """A llama-server process started for a fixture, its address and its log."""

    process: subprocess.Popen[bytes]
    port: int
    log: Path

    @property
    def base_url(self) -> str:
        return f"http://127.0.0.1:{self.port}/v1"

    def log_tail(self, lines: int = 3) -> str:
        text = self.log.read_text(errors="replace").strip().splitlines()
        return " | ".join(text[-lines:]) or "(no output)"

    def died(self) -> str:
        return f"llama-server exited with code {self.process.poll()}: {self.log_tail()}"

    def stop(self) -> None:
        llama_module().stop_process(self.process)


def chat_arguments(ctx: int = 8192, threads: int = 1) -> list[str]:
    """As users run a chat model: ``--jinja`` so that tool calls are parsed; one slot."""
    return ["-c", str(ctx), "--jinja", "-fa", "on", "-np", "1", *thread_arguments(threads)]


def embedding_arguments(threads: int = 1) -> list[str]:
    """An OpenAI ``/v1/embeddings`` endpoint over the model's whole 2048-token context, one slot."""
    return ["--embeddings", "-c", "2048", "-b", "512", "-ub", "512", "-np", "1", *thread_arguments(threads)]


def thread_arguments(threads: int) -> list[str]:
    """The same count for prompt and generation: one is fastest on a busy 2-core machine."""
    return ["-t", str(threads), "-tb", str(threads)]


@contextmanager
def chat_server(path: Path, *, ctx: int = 8192, threads: int = 1, port: int | None = None) -> Iterator[str]:
    """A chat server on the GGUF at ``path``; yields its OpenAI base URL (``http://127.0.0.1:P/v1``)."""
    with running(path, chat_arguments(ctx, threads), port) as server:
        yield server.base_url


@contextmanager
def embedding_server(path: Path, *, threads: int = 1, port: int | None = None) -> Iterator[str]:
    """An embedding server on the GGUF at ``path``; yields its OpenAI base URL."""
    with running(path, embedding_arguments(threads), port) as server:
        yield server.base_url


@contextmanager
def running(path: Path, arguments: list[str], port: int | None = None) -> Iterator[RunningServer]:
    """llama-server on ``path``, ready; the first installed build this CPU can run (a build whose
    kernels it lacks dies of SIGILL while warming up, and the next one is tried)."""
    llama = llama_module()
    try:
        binaries = [binary for binary in llama.find_binaries() if binary not in _UNRUNNABLE]
    except llama.LlamaUnavailable as error:
        raise FixtureError(str(error)) from None
    for binary in binaries:
        server = launch(binary, path, arguments, port or llama.free_port(), llama.server_environment(binary))
        try:
            code = wait_until_ready(server, llama.is_healthy)
            if code == -signal.SIGILL and binary != binaries[-1]:
                _UNRUNNABLE.add(binary)
                say(f"this CPU cannot run {binary.parent.parent.name}'s kernels (illegal instruction): next build")
                continue
            if code == -1:
                raise FixtureError(f"llama-server did not load {path.name} within 300 s: {server.log_tail()}")
            if code is not None:
                raise FixtureError(f"llama-server did not start on {path.name}: {server.died()}")
            say(f"serving {path.name} at {server.base_url}")
            try:
                yield server
            except Exception as error:
                if server.process.poll() is not None:
                    raise FixtureError(f"the server on {path.name} stopped: {server.died()}") from error
                raise
            return
        finally:
            server.stop()
            server.log.unlink(missing_ok=True)
    raise FixtureError("no installed llama-server build runs on this CPU (illegal instruction in each)")


_UNRUNNABLE: set[Path] = set()


def llama_module() -> ModuleType:
    """``monad_notebook.testing.llama`` (imported when a server starts: it takes a second)."""
    root = str(Path(__file__).resolve().parents[1])
    if root not in sys.path:
        sys.path.insert(0, root)
    from monad_notebook.testing import llama

    return llama


def launch(binary: Path, model: Path, arguments: list[str], port: int, environment: dict[str, str]) -> RunningServer:
    command = [str(binary), "-m", str(model), "--host", "127.0.0.1", "--port", str(port), *arguments]
    library_path = environment.get("LD_LIBRARY_PATH")
    say("$ " + (f"LD_LIBRARY_PATH={library_path} " if library_path else "") + shlex.join(command))
    log = Path(tempfile.mkstemp(prefix="fixture-server-", suffix=".log")[1])
    with log.open("ab") as out:
        process = subprocess.Popen(command, env=environment, stdout=out, stderr=out)
    return RunningServer(process, port, log)


def wait_until_ready(server: RunningServer, healthy: Callable[[int], bool], timeout: float = 300.0) -> int | None:
    """None once the model is loaded, else the exit code of the process that died (-1 on a timeout)."""
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        code = server.process.poll()
        if code is not None:
            return code
        if healthy(server.port):
            return None
        time.sleep(0.2)
    return -1
