"""Secrets in the shapes that slip past a naive redactor, and the look-alikes that must survive.

Private keys without their armour or behind line numbers, passwords on command lines and in
sentences, tokens wrapped in text shaped like a placeholder; and certificates, public keys,
wrapped base64, ``-p 8080``, "password is required" and sequential ids, which are not secrets.
Keys are fake: the fixed DER or OpenSSH opening of each key type followed by seeded random bytes,
so their base64 starts exactly as a real key's does.
"""

from __future__ import annotations

import base64
import json
import random

from tests.context.secret_corpus import ALNUM, B64, DIGITS, HEX, UPPER, Secret, rand

_RNG = random.Random(20250101)

_KEY_OPENINGS = {
    "rsa-pkcs1": (bytes.fromhex("308204a40201000282010100"), 1192, "RSA PRIVATE KEY"),
    "rsa-pkcs8": (bytes.fromhex("308204be020100300d06092a864886f70d0101010500048204a8"), 1218, "PRIVATE KEY"),
    "dsa": (bytes.fromhex("308201bb02010002818100"), 447, "DSA PRIVATE KEY"),
    "ec-sec1": (bytes.fromhex("307702010104"), 121, "EC PRIVATE KEY"),
    "ec-p384": (bytes.fromhex("3081a402010104"), 167, "EC PRIVATE KEY"),
    "ec-pkcs8": (bytes.fromhex("308187020100301306072a8648ce3d020106082a8648ce3d030107046d306b"), 138, "PRIVATE KEY"),
    "ed25519-pkcs8": (bytes.fromhex("302e020100300506032b657004220420"), 48, "PRIVATE KEY"),
    "encrypted-pkcs8": (bytes.fromhex("30820535305f06092a864886f70d01050d"), 1337, "ENCRYPTED PRIVATE KEY"),
    "openssh": (b"openssh-key-v1\0\0\0\0\x04none\0\0\0\x04none\0\0\0\0\0\0\0\x01", 1500, "OPENSSH PRIVATE KEY"),
}


def _body_lines(kind: str) -> tuple[list[str], str]:
    """The base64 lines of a fake key of ``kind`` (70 wide for OpenSSH, 64 for the rest) and its PEM label."""
    opening, size, label = _KEY_OPENINGS[kind]
    encoded = base64.b64encode(opening + _RNG.randbytes(size - len(opening))).decode()
    width = 70 if kind == "openssh" else 64
    return [encoded[i : i + width] for i in range(0, len(encoded), width)], label


def _armoured(lines: list[str], label: str) -> list[str]:
    return [f"-----BEGIN {label}-----", *lines, f"-----END {label}-----"]


_NUMBERINGS = {
    "read_file": lambda n, line: f"{n:>6}\t{line}",
    "pipe": lambda n, line: f"{n:>4}| {line}",
    "grep -n": lambda n, line: f"keys/id.pem:{n}:{line}",
    "grep -A": lambda n, line: f"{n}-{line}",
}


def _numbered_blocks() -> list[Secret]:
    """Whole PEM blocks where every line carries a viewer's line number: the block from BEGIN to END goes."""
    found = []
    for kind in ("rsa-pkcs1", "openssh", "ec-sec1"):
        lines = _armoured(*_body_lines(kind))
        for number in _NUMBERINGS.values():
            numbered = [number(n, line) for n, line in enumerate(lines, 3)]
            first = numbered[0][: -len(lines[0])]
            value = "\n".join(numbered)[len(first) :]
            after = number(len(lines) + 3, "ok = True")
            found.append(Secret("private-key", f"{number(2, '# deploy key')}\n{first}{value}\n{after}", value))
    return found


def _headerless() -> list[Secret]:
    """Bodies without armour: the first line alone, the whole body, the tail with END, a middle run."""
    found = []
    for kind in _KEY_OPENINGS:
        lines, label = _body_lines(kind)
        found.append(Secret("private-key", f"keys/id.pem:2:{lines[0]}\nkeys/id.pem:9:# rotated", lines[0]))
        body = "\n".join(lines)
        found.append(Secret("private-key", f"$ sed -n 2,99p id\n{body}\n$ ls", body))
        if len(lines) >= 8:
            tail = "\n".join([*lines[-5:], f"-----END {label}-----"])
            found.append(Secret("private-key", f"$ tail -n 6 id\n{tail}\n$ ls", tail))
            middle = "\n".join(lines[2:8])
            found.append(Secret("private-key", f"$ sed -n 4,9p id\n{middle}\n$ wc -l id", middle))
            numbered = [f"{n:>6}\t{line}" for n, line in enumerate(lines[2:8], 4)]
            found.append(Secret("private-key", "\n".join(numbered), "\n".join(numbered)[7:]))
    lines, _ = _body_lines("rsa-pkcs8")
    escaped = "\\n".join(lines) + "\\n"
    found.append(Secret("private-key", f'{{"type": "service_account", "private_key": "{escaped}", "id": 7}}', escaped))
    found.append(_putty())
    return found


def _putty() -> Secret:
    public = "\n".join(
        ["AAAAB3NzaC1yc2EAAAADAQABAAABAQ" + rand(B64, 34, _RNG), *(rand(B64, 64, _RNG) for _ in range(5))]
    )
    private = "\n".join(
        ["AAABAQ" + rand(B64, 58, _RNG), *(rand(B64, 64, _RNG) for _ in range(12)), rand(B64, 20, _RNG)]
    )
    text = (
        "PuTTY-User-Key-File-3: ssh-rsa\nEncryption: none\nComment: rsa-key-20240611\n"
        f"Public-Lines: 6\n{public}\nPrivate-Lines: 14\n{private}\nPrivate-MAC: {rand(HEX, 64, _RNG)}"
    )
    return Secret("private-key", text, private)


def _pw() -> str:
    return rand(ALNUM, 10, _RNG) + "!7"


def _passwords() -> list[Secret]:
    """Passwords given to a command or said in a sentence."""
    shapes = [
        "mysql -u root -p{} sales",
        "mysql -p{}",
        "$ mysqldump -h db.internal -u app -p'{}' sales > dump.sql",
        'subprocess.run(["mysql", "-u", "root", "-p{}"])',
        "psql --host db --password {} --dbname sales",
        "wget --user=ada --password={} https://files.example.com/a.csv",
        "pg_dump --db-password='{}' sales",
        "curl -u admin:{} https://api.example.com/v1/items",
        "curl -s --user ada:{} https://api.example.com/v1/items",
        "curl -sSf -u'ada:{}' https://api.example.com",
        "sshpass -p '{}' ssh ada@host",
        "docker login -u ada -p {} registry.example.com",
        "openssl pkcs12 -in cert.p12 -passin pass:{} -nodes",
        "keytool -list -keystore ks.jks -storepass {}",
        "the password is {}",
        "My password was: {}, please rotate it.",
        "ok so the password: {}",
        "passwd = {}",
        "Your new passphrase is '{}'.",
        "wifi password is {} (guest network)",
    ]
    return [Secret("password", shape.replace("{}", value), value) for shape, value in ((s, _pw()) for s in shapes)]


_TOKENS = [
    ("github", "ghp_" + rand(ALNUM, 36, _RNG)),
    ("openai", "sk-proj-" + rand(ALNUM, 48, _RNG)),
    ("aws-access-key", "AKIA" + rand(UPPER + DIGITS, 16, _RNG)),
    ("slack", "xoxb-" + rand(DIGITS, 11, _RNG) + "-" + rand(ALNUM, 24, _RNG)),
]


def _wrapped_tokens() -> list[Secret]:
    """Tokens inside text shaped like a placeholder: only a placeholder with a real kind label is skipped."""
    shapes = ["[REDACTED:{}]", "[REDACTED:env:{}]", "[REDACTED:x:{}]", "[REDACTED:x]{}", "[REDACTED:github]{}"]
    return [Secret(kind, shape.replace("{}", token), token) for kind, token in _TOKENS for shape in shapes]


HOSTILE_SECRETS: dict[str, list[Secret]] = {
    "private key behind line numbers": _numbered_blocks(),
    "private key without armour": _headerless(),
    "password on a command line or in a sentence": _passwords(),
    "token wrapped in a placeholder look-alike": _wrapped_tokens(),
}

# --- look-alikes that are not secrets ------------------------------------------------------------


def _pem(label: str, opening: str, lines: int) -> str:
    body = [opening + rand(B64, 64 - len(opening), _RNG), *(rand(B64, 64, _RNG) for _ in range(lines - 1))]
    return "\n".join([f"-----BEGIN {label}-----", *body, rand(B64, 20, _RNG) + "==", f"-----END {label}-----"])


_CERTIFICATE = _pem("CERTIFICATE", "MIIDXTCCAkWgAwIBAgIJ", 18)
_SESSIONS = [{"session_key": f"sess_{i:08d}", "user_id": f"user_{i:04d}", "rows": i * 3} for i in range(1, 51)]

HOSTILE_NOISE: dict[str, str] = {
    "certificate": _CERTIFICATE,
    "certificate behind line numbers": "\n".join(
        f"{n:>6}\t{line}" for n, line in enumerate(_CERTIFICATE.splitlines(), 1)
    ),
    "ca bundle": "\n".join([_pem("CERTIFICATE", "MIIFazCCA1OgAwIBAgIR", 30), _pem("TRUSTED CERTIFICATE", "MIIB", 9)]),
    "public keys": "\n".join(
        [
            _pem("PUBLIC KEY", "MIIBIjANBgkqhkiG9w0BAQEFAAOCAQ8AMIIBCgKCAQEA", 6),
            _pem("RSA PUBLIC KEY", "MIIBCgKCAQEA", 5),
            "ssh-ed25519 AAAAC3NzaC1lZDI1NTE5AAAAI" + rand(B64, 33, _RNG) + " ada@laptop",
            "github.com ssh-rsa AAAAB3NzaC1yc2EAAAADAQABAAABgQ" + rand(B64, 300, _RNG),
        ]
    ),
    "mime attachment": "Content-Transfer-Encoding: base64\n\n" + base64.encodebytes(_RNG.randbytes(900)).decode(),
    "short wrapped base64": "$ openssl base64 -in nonce.bin\n" + "\n".join(rand(B64, 64, _RNG) for _ in range(3)),
    "hex digests": "\n".join(rand(HEX, 64, _RNG) for _ in range(8)),
    "command lines": """\
ssh -p 2222 ada@host
mysql -u root -p 8080
mysql -u root -p sales
mysql --port=3306 -h db -u app
mkdir -p /tmp/out && cp -p a b
echo $TOKEN | docker login --username ada --password-stdin registry.example.com
psql --no-password --host db sales
ansible-playbook site.yml --ask-pass --ask-become-pass
app --password-file /run/secrets/db_password
app --password PASSWORD --user USER
app --password "$DB_PASSWORD"
app --password=<your password>
curl -u ada: https://api.example.com
curl -u "$API_USER:$API_PASS" https://api.example.com
curl --user-agent 'monad/1.0: test' https://example.com
openssl rsa -passin env:KEY_PASS -in key.pem
openssl rsa -passin file:/run/secrets/pass -in key.pem
""",
    "password prose": """\
Error: password is required.
The password is incorrect, try again.
Password is too short: use at least 12 characters.
Your password was successfully changed.
A good password is long, not complicated.
the password: choose something long
password is 100% yours to pick
if password is None:
password = getpass.getpass("Password: ")
password: Optional[str] = None
def login(user: str, password: str) -> bool:
password = self.password or default_password
password = db_pass_1
""",
    "sequential ids": "\n".join(
        [
            json.dumps(_SESSIONS[:25], indent=1),
            *(f"INFO session_key={s['session_key']} user_id={s['user_id']}" for s in _SESSIONS[25:]),
            '{"api_key": "key_0000000000000001", "access_token": "aaaa1111aaaa1111"}',
        ]
    ),
    "genuine placeholders": "token [REDACTED:github] and [REDACTED:env:GH_TOKEN]; password: [REDACTED:password]",
}
