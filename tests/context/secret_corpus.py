"""Fake secrets in their real formats, and noise that must survive redaction untouched.

Every secret is generated from a seeded RNG: the shapes match what providers issue, the
values were never issued by anyone. ``mixed_tool_output`` builds realistic tool output
(CSV, DataFrame reprs, tracebacks, JSON, logs, notebook JSON with PNGs) for the benchmark.
"""

from __future__ import annotations

import base64
import json
import random
import struct
import zlib
from dataclasses import dataclass

_RNG = random.Random(20240611)
UPPER = "ABCDEFGHIJKLMNOPQRSTUVWXYZ"
LOWER = UPPER.lower()
DIGITS = "0123456789"
ALNUM = UPPER + LOWER + DIGITS
B64 = ALNUM + "+/"
URLSAFE = ALNUM + "-_"
HEX = "0123456789abcdef"


def rand(alphabet: str, n: int, rng: random.Random = _RNG) -> str:
    """``n`` characters from ``alphabet``, always with at least one digit when the alphabet has digits."""
    while True:
        out = "".join(rng.choice(alphabet) for _ in range(n))
        if not set(DIGITS) & set(alphabet) or set(DIGITS) & set(out):
            return out


def _b64url(raw: bytes) -> str:
    return base64.urlsafe_b64encode(raw).rstrip(b"=").decode()


def _jwt() -> str:
    header = _b64url(json.dumps({"alg": "HS256", "typ": "JWT"}).encode())
    payload = _b64url(json.dumps({"sub": rand(DIGITS, 10), "name": "Ada", "iat": 1718000000}).encode())
    return f"{header}.{payload}.{_b64url(_RNG.randbytes(32))}"


def _pem(label: str, lines: int = 6, width: int = 64) -> str:
    body = "\n".join(rand(B64, width) for _ in range(lines))
    return f"-----BEGIN {label}-----\n{body}\n{rand(B64, 20)}==\n-----END {label}-----"


@dataclass(frozen=True)
class Secret:
    """``text`` contains ``value``; redaction must turn it into ``expected`` (only the value replaced)."""

    kind: str
    text: str
    value: str

    @property
    def expected(self) -> str:
        return self.text.replace(self.value, f"[REDACTED:{self.kind}]")

    @property
    def id(self) -> str:
        return f"{self.kind}:{self.text[:24]}"


def _s(kind: str, value: str, template: str) -> Secret:
    return Secret(kind, template.replace("{}", value), value)


_GCP_KEY = _pem("PRIVATE KEY", 8).replace("\n", "\\n")
_ANTHROPIC = "sk-ant-api03-" + rand(URLSAFE, 93) + "AA"

SECRETS: list[Secret] = [
    _s("aws-access-key", "AKIA" + rand(UPPER + DIGITS, 16), "aws_access_key_id = {}\nregion = us-east-1"),
    _s("aws-access-key", "ASIA" + rand(UPPER + DIGITS, 16), '{"Credentials": {"AccessKeyId": "{}", "Expiration": 1}}'),
    _s("aws-secret-key", rand(B64, 40), "[default]\naws_secret_access_key = {}\noutput = json"),
    _s("aws-secret-key", rand(B64, 40), '    "SecretAccessKey": "{}",'),
    _s(
        "private-key",
        _GCP_KEY,
        '{"type": "service_account", "project_id": "demo-281", "private_key": "{}\\n", "client_email": "x@d.iam"}',
    ),
    _s(
        "gcp-api-key",
        "AIza" + rand(URLSAFE, 35),
        "https://maps.googleapis.com/maps/api/geocode/json?address=Paris&key={}",
    ),
    _s(
        "azure-key",
        rand(B64, 86) + "==",
        "DefaultEndpointsProtocol=https;AccountName=acct1;AccountKey={};EndpointSuffix=core.windows.net",
    ),
    _s(
        "azure-key",
        rand(B64, 43) + "=",
        "Endpoint=sb://ns.servicebus.windows.net/;SharedAccessKeyName=Root;SharedAccessKey={}",
    ),
    _s("azure-sas", rand(B64, 43) + "%3D", "https://acct1.blob.core.windows.net/c/f.csv?sv=2022-11-02&sr=b&sig={}"),
    _s("openai", "sk-proj-" + rand(URLSAFE, 156), "client = OpenAI(api_key='{}')"),
    _s("openai", "sk-" + rand(ALNUM, 48), "Incorrect API key provided: {}. You can find your API key at ..."),
    _s("anthropic", _ANTHROPIC, "ANTHROPIC_API_KEY={}\nMODEL=claude"),
    _s("github", "ghp_" + rand(ALNUM, 36), "remote: https://{}@github.com/org/repo.git"),
    _s("github", "gho_" + rand(ALNUM, 36), "oauth token {} granted"),
    _s("github", "ghu_" + rand(ALNUM, 36), "user-to-server {}"),
    _s("github", "ghs_" + rand(ALNUM, 36), "GITHUB_TOKEN: {}\n"),
    _s("github", "ghr_" + rand(ALNUM, 76), "refresh={}"),
    _s("github", "github_pat_" + rand(ALNUM, 22) + "_" + rand(ALNUM, 59), "gh auth login --with-token <<< {}"),
    _s("gitlab", "glpat-" + rand(URLSAFE, 20), "git clone https://oauth2:{}@gitlab.com/g/p.git"),
    _s("slack", "xoxb-" + rand(DIGITS, 11) + "-" + rand(DIGITS, 13) + "-" + rand(ALNUM, 24), "SLACK_BOT={}"),
    _s("slack", "xoxp-" + rand(DIGITS, 11) + "-" + rand(DIGITS, 12) + "-" + rand(HEX, 32), "token used: {} (user)"),
    _s(
        "slack-webhook",
        f"T{rand(UPPER + DIGITS, 8)}/B{rand(UPPER + DIGITS, 10)}/{rand(ALNUM, 24)}",
        "requests.post('https://hooks.slack.com/services/{}', json=msg)",
    ),
    _s("stripe", "sk_live_" + rand(ALNUM, 99), "stripe.api_key = '{}'"),
    _s("stripe", "rk_live_" + rand(ALNUM, 99), "restricted key {} created"),
    _s("huggingface", "hf_" + rand(UPPER + LOWER, 34), "huggingface-cli login --token {}"),
    _s("npm", "npm_" + rand(ALNUM, 36), "//registry.npmjs.org/:_authToken={}"),
    _s("pypi", "pypi-AgEIcHlwaS5vcmc" + rand(URLSAFE, 120), "[pypi]\n  username = __token__\n  password = {}"),
    _s("twilio", "SK" + rand(HEX, 32), "api key sid {} created"),
    _s("twilio", rand(HEX, 32), "TWILIO_AUTH_TOKEN={}"),
    _s("sendgrid", "SG." + rand(URLSAFE, 22) + "." + rand(URLSAFE, 43), "sg = SendGridAPIClient('{}')"),
    _s("private-key", _pem("RSA PRIVATE KEY", 12), "$ cat ~/.ssh/id_rsa\n{}\n$ ls"),
    _s("private-key", _pem("OPENSSH PRIVATE KEY", 7, 70), "key:\n{}\n"),
    _s("private-key", _pem("EC PRIVATE KEY", 3), "  cert: ok\n  {}\n  done: true"),
    _s("jwt", _jwt(), "set-cookie: session={}; HttpOnly"),
    _s(
        "url-password",
        "s3cr" + rand(ALNUM, 12),
        "engine = create_engine('postgresql://analyst:{}@db.internal:5432/sales')",
    ),
    _s("url-password", rand(ALNUM, 16), "MONGO_URI=mongodb+srv://app:{}@cluster0.ab1cd.mongodb.net/?retryWrites=true"),
    _s("url-password", rand(ALNUM, 10), "Connecting to redis://:{}@127.0.0.1:6379/0"),
    _s("bearer", rand(URLSAFE, 40), "curl -H 'Authorization: Bearer {}' https://api.example.com/v1/items"),
    _s("bearer", rand(B64, 28) + "=", "> GET / HTTP/1.1\n> authorization: Basic {}\n> accept: */*"),
    _s("password", "Tr0ub4dor&3x", "password: Tr0ub4dor&3x\nuser: admin"),
    _s("password", "correct horse battery staple", 'db_password = "{}"'),
    _s("password", rand(ALNUM, 14), "export PGPASSWORD={}"),
    _s("token", rand(HEX, 48), "Jupyter Server is running at http://127.0.0.1:8888/lab?token={}"),
    _s("token", rand(URLSAFE, 43), '{"access_token": "{}", "token_type": "bearer", "expires_in": 3600}'),
    _s("api-key", rand(HEX, 32), "X-Api-Key: {}\nContent-Type: application/json"),
    _s("api-key", rand(ALNUM, 40), "WEATHER_API_KEY={}"),
    _s("secret", rand(URLSAFE, 40), 'client_secret: "{}"'),
    _s("secret", "django-insecure-" + rand(ALNUM + "!@#%^&*", 40), "SECRET = '{}'"),
]

# --- noise ---------------------------------------------------------------------------------------


def png_base64(side: int = 48, rng: random.Random = _RNG) -> str:
    """A real PNG of random pixels, base64-encoded as Jupyter stores it in ``image/png``."""
    raw = b"".join(b"\x00" + rng.randbytes(side * 3) for _ in range(side))

    def chunk(tag: bytes, data: bytes) -> bytes:
        return struct.pack(">I", len(data)) + tag + data + struct.pack(">I", zlib.crc32(tag + data))

    ihdr = struct.pack(">IIBBBBB", side, side, 8, 2, 0, 0, 0)
    png = b"\x89PNG\r\n\x1a\n" + chunk(b"IHDR", ihdr) + chunk(b"IDAT", zlib.compress(raw)) + chunk(b"IEND", b"")
    return base64.b64encode(png).decode()


def _notebook_json() -> str:
    cell = {
        "cell_type": "code",
        "execution_count": 7,
        "metadata": {"tags": ["token-usage"]},
        "outputs": [
            {
                "data": {"image/png": png_base64(), "text/plain": ["<Figure size 640x480 with 1 Axes>"]},
                "metadata": {},
                "output_type": "display_data",
            },
        ],
        "source": ["plt.plot(df['prompt_tokens'])\n", "plt.show()"],
    }
    return json.dumps({"cells": [cell], "metadata": {}, "nbformat": 4, "nbformat_minor": 5}, indent=1)


_DATAFRAME = """\
        user_id  token_count  password_reset  api_calls       revenue region
0  a3f9c2e18b7d          512           False       1042  12345.678901  north
1  9be71c0d42aa         2048            True         17      0.000123  south
2  0c44d1e7f3b2       131072           False     998877   98765.43210   east
[3 rows x 6 columns]"""

_CODE = """\
import os
from getpass import getpass

password = getpass()
token = os.environ["TOKEN"]
api_key = os.getenv("OPENAI_API_KEY")
client = OpenAI(api_key=api_key)
secret_key = settings.SECRET_KEY
auth_token = request.headers["Authorization"]
password: str = getpass("Password: ")
if password == confirm_password:
    tokens = tokenizer.encode(text, max_tokens=4096)
def check_password(password: str, password_hash: bytes) -> bool:
    return hmac.compare_digest(hash_password(password), password_hash)
DATABASE_URL = f"postgresql://{user}:{password}@{host}/{db}"
access_token = response.json()["access_token"]
token_count: int = len(tokens)
"""

_PROSE = (
    "The tokenizer splits text into tokens; each token costs money, so count your tokens. "
    "If you forgot your password, reset your password from the settings page. A secret is "
    "only a secret if nobody else knows it. Tokens: the units a model reads. "
    "Password: choose something long. API keys are managed in the dashboard."
)

_CONFIG = """\
{
  "auth_type": "oauth2_client_credentials",
  "token_url": "https://login.example.com/oauth2/v2.0/token",
  "password_file": "/etc/app/secrets/db_password.txt",
  "secret_name": "prod/db/credentials-2024",
  "api_key_env": "OPENAI_API_KEY",
  "max_tokens": 4096,
  "prompt_tokens": 123456789,
  "private_key_path": "/home/ada/.ssh/id_ed25519",
  "OPENAI_API_KEY": "<your key here>",
  "password": "${DB_PASSWORD}",
  "token": null,
  "api_key": "YOUR_API_KEY"
}"""

_PLACEHOLDERS = """\
# .env.example
OPENAI_API_KEY=
DB_PASSWORD=changeme
SECRET_KEY=<generate one>
GITHUB_TOKEN=${GITHUB_TOKEN}
export TOKEN=$(cat ~/.token)
postgres://user:password@localhost:5432/db
password: ********
token: xxxxxxxxxxxxxxxx
"""


def _git_log(rng: random.Random = _RNG) -> str:
    lines = []
    for i in range(12):
        sha = rand(HEX, 40, rng)
        lines.append(f"commit {sha}\nAuthor: Ada <ada@example.com>\n\n    Fix token refresh #{i}\n")
    return "\n".join(lines)


def _hashes(rng: random.Random = _RNG) -> str:
    files = ["data/sales.csv", "model.pkl", "requirements.txt", "report.pdf"]
    return "\n".join(f"{rand(HEX, 64, rng)}  {f}" for f in files) + (
        "\nnumpy==2.0.0 --hash=sha256:" + rand(HEX, 64, rng) + "\nintegrity sha512-" + rand(B64, 86, rng) + "=="
    )


def _uuids(rng: random.Random = _RNG) -> str:
    def uuid() -> str:
        h = rand(HEX, 32, rng)
        return f"{h[:8]}-{h[8:12]}-4{h[13:16]}-a{h[17:20]}-{h[20:]}"

    return "\n".join(f"request_id={uuid()} session={uuid()} trace {uuid()}" for _ in range(8))


_TRACEBACK = """\
Traceback (most recent call last):
  File "/home/ada/project/etl.py", line 42, in <module>
    df = load(path, token_col="token_count")
  File "/home/ada/.venv/lib/python3.11/site-packages/pandas/io/parsers/readers.py", line 912, in read_csv
    return _read(filepath_or_buffer, kwds)
KeyError: 'password_reset'
"""

_CSV = "date,region,units,revenue,token_count\n" + "\n".join(
    f"2024-0{m}-{d:02d},{r},{m * d * 7},{m * d * 13.37:.2f},{m * 1000 + d}"
    for m in range(1, 10)
    for d in range(1, 29, 3)
    for r in ("north", "south")
)

_LOG = "\n".join(
    f"2024-06-11T10:{i:02d}:00.123Z INFO  worker-{i % 4} refreshed token cache in {i * 3} ms (tokens=128000)"
    for i in range(30)
)

_PATHS = """\
/home/ada/.cache/huggingface/hub/models--bert-base-uncased/snapshots/86b5e0934494bd15c9632b12f734a8a67f723594
/home/ada/project/secrets/README.md
C:\\Users\\ada\\AppData\\Local\\pip\\cache\\http\\a\\b\\c\\d\\e3b0c44298fc1c149afbf4c8996fb924
./tokenizer/vocab.json
"""

NOISE: dict[str, str] = {
    "git-log": _git_log(),
    "hashes": _hashes(),
    "uuids": _uuids(),
    "notebook-json": _notebook_json(),
    "png-base64": "data:image/png;base64," + png_base64(),
    "dataframe": _DATAFRAME,
    "csv": _CSV,
    "code": _CODE,
    "prose": _PROSE,
    "config": _CONFIG,
    "placeholders": _PLACEHOLDERS,
    "traceback": _TRACEBACK,
    "log": _LOG,
    "paths": _PATHS,
}


def mixed_tool_output(size: int, *, secrets_every: int = 200_000, seed: int = 7) -> str:
    """About ``size`` characters of realistic tool output, one corpus secret roughly every ``secrets_every``."""
    rng = random.Random(seed)
    pieces, total, next_secret = [], 0, secrets_every
    noise = list(NOISE.values())
    while total < size:
        piece = rng.choice(noise)
        if total >= next_secret:
            piece = rng.choice(SECRETS).text
            next_secret += secrets_every
        pieces.append(piece)
        total += len(piece) + 1
    return "\n".join(pieces)[:size]
