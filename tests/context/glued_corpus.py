"""Issued keys glued to a word, and the glued look-alikes that must survive: the tuning set of the prefix rules.

People put keys where names go: a backup file (``backup_ghp_....json``), a column
(``openai_sk-proj-...``), a variable or a concatenation (``tokghp_...``, ``2024AKIA...``). Every
prefix rule's key is glued here after a letter, a digit and ``_``, and before ``_``. The
look-alikes are what a notebook really prints around such prefixes: file names, pod and task
names, identifiers and constants ending in ``sk``/``ASIA``/``pnpm``, hashes and url-safe digests.
The held-out check is real text nobody wrote for this (``benchmarks/redaction.py``).
"""

from __future__ import annotations

import base64
import hashlib
import random

from tests.context.secret_corpus import ALNUM, DIGITS, HEX, LOWER, UPPER, URLSAFE, Secret, rand

_RNG = random.Random(20251207)


def _r(alphabet: str, n: int) -> str:
    return rand(alphabet, n, _RNG)


ISSUED: dict[str, list[str]] = {
    "aws-access-key": ["AKIA" + _r(UPPER + DIGITS, 16), "ASIA" + _r(UPPER + DIGITS, 16)],
    "gcp-api-key": ["AIza" + _r(URLSAFE, 35)],
    "anthropic": ["sk-ant-api03-" + _r(URLSAFE, 93) + "AA"],
    "openai": ["sk-proj-" + _r(URLSAFE, 156), "sk-svcacct-" + _r(URLSAFE, 74), "sk-" + _r(ALNUM, 48)],
    "github": [
        "ghp_" + _r(ALNUM, 36),
        "gho_" + _r(ALNUM, 36),
        "ghs_" + _r(ALNUM, 36),
        "github_pat_" + _r(ALNUM, 22) + "_" + _r(ALNUM, 59),
    ],
    "gitlab": ["glpat-" + _r(URLSAFE, 20)],
    "slack": ["xoxb-" + _r(DIGITS, 11) + "-" + _r(DIGITS, 13) + "-" + _r(ALNUM, 24)],
    "stripe": ["sk_live_" + _r(ALNUM, 99), "rk_test_" + _r(ALNUM, 24), "whsec_" + _r(ALNUM, 32)],
    "huggingface": ["hf_" + _r(UPPER + LOWER, 34)],
    "npm": ["npm_" + _r(ALNUM, 36)],
    "pypi": ["pypi-AgEIcHlwaS5vcmc" + _r(URLSAFE, 120)],
    "twilio": ["SK" + _r(HEX, 32)],
    "sendgrid": ["SG." + _r(ALNUM, 22) + "." + _r(ALNUM, 43)],
    "jwt": [
        "eyJhbGciOiJIUzI1NiIsInR5cCI6IkpXVCJ9.eyJzdWIiOiI0MiIsImlhdCI6MTcxODAwMDAwMH0." + _r(URLSAFE, 43),
    ],
}

# Where a glued key sits: after "_", after a letter, after a digit; and with "_" after it too.
BEFORE = ["saved to backup_{}.json", "creds_{}.csv", "columns: ['region', 'openai_{}', 'units']", "value = tok{}\n"]
BEFORE += ["2024{} was rotated"]
AFTER = ["mv keys/{}_old.txt /tmp", "prod_{}_v2.env"]
# Keys whose alphabet holds "_" and has no fixed length: "_old" after one reads as more of the key.
OPEN_ENDED = {"anthropic", "openai", "gitlab", "pypi", "jwt"}


def _glued(kind: str, key: str, place: str) -> Secret:
    return Secret(kind, place.replace("{}", key), key)


def _open_ended(kind: str, key: str) -> bool:
    return kind in OPEN_ENDED or key.startswith("github_pat_")


ALL_KEYS = [(kind, key) for kind, keys in ISSUED.items() for key in keys]
GLUED: list[Secret] = [_glued(kind, key, place) for kind, key in ALL_KEYS for place in BEFORE]
GLUED += [_glued(kind, key, place) for kind, key in ALL_KEYS for place in AFTER if not _open_ended(kind, key)]
# Found, but the redaction may run on over the "_..." that follows: only the key's absence is certain.
RUNS_ON: list[Secret] = [
    _glued(kind, key, place) for kind, key in ALL_KEYS for place in AFTER if _open_ended(kind, key)
]


def _digest() -> str:
    return base64.urlsafe_b64encode(hashlib.sha256(_RNG.randbytes(64)).digest()).rstrip(b"=").decode()


def _record_lines(count: int) -> str:
    """Lines shaped like a wheel's RECORD: a path, ``sha256=`` and a url-safe digest, a size."""
    names = ["task_runner", "disk_usage", "flask_app", "risk_model", "mask_utils", "hf_hub", "npm_bridge"]
    return "\n".join(
        f"pkg/{_RNG.choice(names)}_{i}.py,sha256={_digest()},{_RNG.randrange(100, 90_000)}" for i in range(count)
    )


LOOK_ALIKES: dict[str, str] = {
    "file names": "\n".join(
        [
            "disk-usage-report-20240611.csv",
            "task-runner-worker-2024-06-11T10-00-00.log",
            "risk-model-v2-final-20240611.parquet",
            "desk-booking-export-2024Q2-v3.xlsx",
            "flask-sqlalchemy-3.1.1-py3-none-any.whl",
            "whisk-taker-experiment-42-results.json",
            "kiosk-telemetry-2024-06-11-part-00017.csv.gz",
            "disk_test_results_v2_20240611.csv",
            "mask_test_accuracy_epoch_0042.png",
            "task_live_metrics_2024_06_11.json",
            "SOUTHEAST_ASIA_REVENUE_2024Q2.xlsx",
            "TIMEZONE_ASIA_KOLKATA",
            "graph_hf_export_2024_06_11_final_v2.pkl",
            "node_modules/.pnpm/npm_registry_cache_2024_06_11",
            "MSG.ProcessingComplete.20240611T100000Z.eml",
        ]
    ),
    "pod and task names": "\n".join(
        [
            "flask-app-deployment-5d8f7b9c6d-x2k4p   1/1   Running   0   3d",
            "task-scheduler-7f9c8d6b5-qwz8n         1/1   Running   2   7d",
            "celery-task-3f2a1b4c-9d8e-4f7a-b6c5-1234567890ab SUCCESS",
            "task-e3b0c44298fc1c149afbf4c8996fb924 queued",
            "risk-engine-worker-84b7c9d5f6-2mq7z   0/1   CrashLoopBackOff",
            "helpdesk-admin-portal-7d9f8b6c5-x2k4p   1/1   Running   0   1d",
            "ask-service-canary-20240611-1",
        ]
    ),
    "identifiers": "\n".join(
        [
            "def askForHelpWithTask2Now(self): ...",
            "self.disk_live_usage_bytes_2024 = 0",
            "task_test_ProcessOrderHandler2.run()",
            "mask-RCNN-ResNet50-FPN-3x-coco-2017",
            "TASK9f86d081884c7d659a2feaa0c55ad015 = 'md5 of the task spec'",
            "REGION_ASIAPACIFICSOUTHEAST = 'ap-southeast-1'",
            "class WhiskTaskScheduler2024Manager: pass",
            "risk_sk_test_weights_layer_12_bias",
            "openai_model_gpt4o_mini_2024_07_18",
            "github_repo_stars_2024_06_11_snapshot",
        ]
    ),
    "glued hashes": "\n".join(
        [
            "sha256_e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855",
            "md5d41d8cd98f00b204e9800998ecf8427e",
            "commit-sha-9fceb02d0ae598e95dc970b74767f19372d61af8",
            "disk-" + hashlib.sha1(b"disk").hexdigest(),
            "etag_W/" + hashlib.md5(b"etag").hexdigest(),
        ]
    ),
    "wheel RECORD lines": _record_lines(400),
}
