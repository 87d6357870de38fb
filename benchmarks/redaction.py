"""Redaction speed and precision: prints the markdown tables quoted in BENCHMARKS.md.

Run from the repository root: ``python benchmarks/redaction.py``. Times are the best of a few
runs; CPU seconds are shown next to wall seconds because a busy machine inflates wall time.

Precision is measured on text that holds no secret: the noise corpus and the glued look-alikes
(tuning sets, written with the rules), then real text nobody wrote for this test: the Python
standard library, the file paths, wheel RECORD files (file names and url-safe sha256 digests)
and Python sources under site-packages, Debian's package file lists and md5sums, npm's cache
index. Real text holds some real test credentials, so its rows count every placeholder; what a
rule change adds there is read line by line. The rows say which real text was read while a rule
was tuned; the rest is held out.
"""

from __future__ import annotations

import base64
import gzip
import os
import platform
import random
import sys
import sysconfig
import time
from collections.abc import Callable, Iterator
from importlib.metadata import version
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from monad_notebook.redaction.redactor import Redactor
from tests.context.glued_corpus import GLUED, LOOK_ALIKES, RUNS_ON
from tests.context.hostile_corpus import HOSTILE_NOISE, HOSTILE_SECRETS
from tests.context.secret_corpus import NOISE, SECRETS, mixed_tool_output
from tests.context.status_corpus import HELD_OUT_LOGS, HELD_OUT_PASSWORDS, TUNING_LOGS, TUNING_PASSWORDS

MB = 1_000_000
REDACTOR = Redactor(env={})


def timed(text: str, runs: int = 2) -> tuple[float, float, int]:
    """Best wall and CPU seconds over ``runs`` redactions, and how many placeholders were written."""
    best_wall = best_cpu = float("inf")
    found = 0
    for _ in range(runs):
        wall, cpu = time.perf_counter(), time.process_time()
        result = REDACTOR.redact(text)
        best_wall = min(best_wall, time.perf_counter() - wall)
        best_cpu = min(best_cpu, time.process_time() - cpu)
        found = sum(result.counts.values())
    return best_wall, best_cpu, found


def row(name: str, text: str, runs: int = 2) -> str:
    wall, cpu, found = timed(text, runs)
    size = len(text.encode()) / MB
    return f"| {name} | {size:.1f} | {wall:.2f} | {cpu:.2f} | {size / wall:.1f} | {size / cpu:.1f} | {found} |"


def pathological() -> dict[str, Callable[[], str]]:
    rng = random.Random(5)
    return {
        "mixed tool output (49 planted secrets)": lambda: mixed_tool_output(10 * MB),
        "whitespace": lambda: " \n\t" * (10 * MB // 3),
        "one line, no newline": lambda: "x1,y2;" * (10 * MB // 6),
        "base64 run": lambda: base64.b64encode(rng.randbytes(10 * MB * 3 // 4)).decode(),
        "a=a=a=...": lambda: "a=" * (5 * MB),
        "token: token: ... (dense rejected candidates)": lambda: "token: " * (10 * MB // 7),
        "password=password=... (one 10 MB value)": lambda: "password=" * (10 * MB // 9),
        "PASS: ... lines (dense test statuses)": lambda: "PASS: abcdefgh1\n" * (10 * MB // 16),
        "worst case: a secret every 19 bytes": lambda: "token=abc123XYZ789 " * (10 * MB // 19),
        "worst case: one 10 MB query string, a=...&a=...": lambda: "password=abcdefgh123&a=" * (10 * MB // 23),
    }


def throughput_table() -> list[str]:
    lines = [
        "| input (10 MB) | MB | wall s | CPU s | MB/s wall | MB/s CPU | placeholders |",
        "|---|---|---|---|---|---|---|",
    ]
    for name, make in pathological().items():
        lines.append(row(name, make(), runs=1 if name.startswith("worst") else 2))
    return lines


def linearity_table() -> list[str]:
    lines = ["| mixed output MB | wall s | CPU s | MB/s CPU | CPU s / (1 MB CPU s) |", "|---|---|---|---|---|"]
    base = None
    for size in (1, 2, 4, 8):
        wall, cpu, _ = timed(mixed_tool_output(size * MB), runs=3)
        base = base or cpu
        lines.append(f"| {size} | {wall:.2f} | {cpu:.2f} | {size / cpu:.1f} | {cpu / base:.2f} |")
    return lines


def precision_table() -> list[str]:
    lines = ["| noise corpus | bytes | false positives |", "|---|---|---|"]
    total_bytes = total_fp = 0
    for name, text in sorted(NOISE.items()):
        fp = sum(REDACTOR.redact(text).counts.values())
        total_bytes += len(text.encode())
        total_fp += fp
        lines.append(f"| {name} | {len(text.encode())} | {fp} |")
    noise_only = mixed_tool_output(10 * MB, secrets_every=100 * MB)
    fp = sum(REDACTOR.redact(noise_only).counts.values())
    lines.append(f"| 10 MB of the above, shuffled | {len(noise_only.encode())} | {fp} ({fp / 10:.2f} per MB) |")
    caught = sum(REDACTOR.redact(s.text).text == s.expected for s in SECRETS)
    lines.append(f"| fake-secret corpus: exact redactions | {len(SECRETS)} samples | {caught}/{len(SECRETS)} caught |")
    return lines + glued_rows() + hostile_rows() + status_rows() + real_text_rows()


def glued_rows() -> list[str]:
    """Every prefix rule's key glued to a word (tuning set), and the glued look-alikes that must survive."""
    exact = sum(REDACTOR.redact(s.text).text == s.expected for s in GLUED)
    leaked = sum(s.value in REDACTOR.redact(s.text).text for s in [*GLUED, *RUNS_ON])
    look_alikes = "\n".join(LOOK_ALIKES.values())
    fp = sum(REDACTOR.redact(look_alikes).counts.values())
    return [
        f"| glued keys: every prefix rule after a letter, digit or `_`, and before `_` "
        f"| {len(GLUED) + len(RUNS_ON)} samples | {exact}/{len(GLUED)} exact, {leaked} leaked |",
        f"| glued look-alikes: file, pod and task names, identifiers, glued hashes, RECORD-like digests "
        f"| {len(look_alikes.encode())} | {fp} |",
    ]


def status_rows() -> list[str]:
    """Test-run logs that must survive (``PASS: <test>``) and the passwords written with the same words, each set
    as chosen on (tuning) and as written apart (held out)."""
    rows = []
    for label, logs, passwords in (
        ("tuning", TUNING_LOGS, TUNING_PASSWORDS),
        ("held out", HELD_OUT_LOGS, HELD_OUT_PASSWORDS),
    ):
        text = "\n".join(logs.values())
        fp = sum(REDACTOR.redact(text).counts.values())
        rows.append(f"| {label}: test-run logs (DejaGnu, automake, Go, pytest, TAP...) | {len(text.encode())} | {fp} |")
        redacted = [REDACTOR.redact(s.text).text for s in passwords]
        caught = sum(text == s.expected for text, s in zip(redacted, passwords, strict=True))
        leaked = sum(s.value in text for text, s in zip(redacted, passwords, strict=True))
        rows.append(
            f"| {label}: passwords beside the same words (`PASS: ...`, `DB_PASS=`, `pass:`) "
            f"| {len(passwords)} samples | {caught}/{len(passwords)} caught, {leaked} leaked |"
        )
    return rows


def real_text_rows() -> list[str]:
    """Real text on this machine, each row's placeholders and their rate per MB; rows read while a rule was tuned
    say so, the others are held out."""
    rows = []
    for name, texts in real_texts().items():
        size = finds = 0
        for text in texts:
            size += len(text.encode())
            finds += sum(REDACTOR.redact(text).counts.values())
        rows.append(f"| {name} | {size} | {finds} ({finds / (size / MB):.2f} per MB) |")
    return rows


def real_texts() -> dict[str, Iterator[str]]:
    stdlib = Path(sysconfig.get_paths()["stdlib"])
    site = Path(sysconfig.get_paths()["purelib"])
    dpkg, npm = Path("/var/lib/dpkg/info"), Path.home() / ".npm/_cacache/index-v5"
    docs, jdk = Path("/usr/share/doc"), Path("/usr/share/doc/openjdk-17-jre-headless/test-amd64")
    seen = "real text, read while the glued rules were tuned:"
    return {
        "held out: Python stdlib sources and data (test passwords included)": _texts(_stdlib_files(stdlib)),
        f"{seen} file paths under site-packages": iter(
            ["\n".join(sorted(str(p) for p in site.rglob("*") if p.is_file()))]
        ),
        f"{seen} wheel RECORD files (file names, url-safe sha256 digests)": _texts(
            sorted(site.glob("*.dist-info/RECORD"))
        ),
        f"{seen} Python sources under site-packages (test credentials included)": _texts(sorted(site.rglob("*.py"))),
        "held out: Debian package file lists and md5sums": _texts(
            sorted(dpkg.glob("*.list")) + sorted(dpkg.glob("*.md5sums"))
        ),
        "held out: npm cache index (urls, sha512 integrity)": _texts(sorted(p for p in npm.rglob("*") if p.is_file())),
        "real text, read while the status rule was tuned: binutils' test summary (DejaGnu)": _texts(
            [docs / "binutils/test-summary-amd64.gz"]
        ),
        "held out: gdb's test log (DejaGnu, `make check`)": _texts([docs / "gdb/check.log.gz"]),
        "held out: OpenJDK's test logs (jtreg)": _texts(sorted(jdk.glob("*.log*"))),
    }


def _texts(paths: list[Path]) -> Iterator[str]:
    for path in paths:
        try:
            yield gzip.decompress(path.read_bytes()).decode() if path.suffix == ".gz" else path.read_text("utf-8")
        except (UnicodeDecodeError, OSError):
            continue


def _stdlib_files(stdlib: Path) -> list[Path]:
    """The interpreter's own library (site-packages left out): text nobody wrote for this test."""
    found = []
    for folder, subfolders, files in os.walk(stdlib):
        subfolders[:] = [d for d in subfolders if d != "site-packages"]
        found += [Path(folder, name) for name in files if name.endswith(_TEXT_SUFFIXES)]
    return sorted(found)


_TEXT_SUFFIXES = (".py", ".txt", ".json", ".rst", ".cfg", ".toml", ".ini", ".html", ".xml")


def hostile_rows() -> list[str]:
    """Look-alikes that must survive, then each kind of hostile secret: exact redactions and leaks."""
    look_alikes = "".join(HOSTILE_NOISE.values())
    fp = sum(sum(REDACTOR.redact(text).counts.values()) for text in HOSTILE_NOISE.values())
    rows = [
        f"| hostile look-alikes: certificates, public keys, wrapped base64, `-p 8080`, "
        f"'password is required', sequential ids | {len(look_alikes.encode())} | {fp} |"
    ]
    for kind, secrets in HOSTILE_SECRETS.items():
        redacted = [REDACTOR.redact(s.text).text for s in secrets]
        caught = sum(text == s.expected for text, s in zip(redacted, secrets, strict=True))
        leaked = sum(s.value in text for text, s in zip(redacted, secrets, strict=True))
        rows.append(f"| hostile: {kind} | {len(secrets)} samples | {caught}/{len(secrets)} caught, {leaked} leaked |")
    return rows


def main() -> None:
    load = os.getloadavg()[0] if hasattr(os, "getloadavg") else float("nan")
    print(
        f"Python {platform.python_version()}, google-re2 {version('google-re2')}, "
        f"{os.cpu_count()} cores, load average {load:.1f}\n"
    )
    for title, table in (
        ("Throughput and pathological inputs", throughput_table),
        ("Linearity", linearity_table),
        ("Precision", precision_table),
    ):
        print(f"### {title}\n")
        print("\n".join(table()))
        print()


if __name__ == "__main__":
    main()
