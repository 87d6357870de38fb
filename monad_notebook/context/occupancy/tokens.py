"""Effective input tokens: how full the model's window is, before and after the provider says.

Occupancy prefers the provider's real ``prompt_tokens`` from the previous step (it alone
sees the system prompt, tool schemas and chat template as the model does). Before any
real count exists, and for the hard overflow guard inside a turn, we estimate: exactly
with the model's own BPE when we know it, with o200k as a proxy for other models, or with
measured characters-per-token ratios per content type when no BPE is available. A session's
window turns these raw counts into the provider's units with ``context.calibration`` (a
ratio, a tool-schema weight and an offset, fitted to the provider's counts).

Encodings load lazily, once per process. The official o200k/cl100k BPE files come from
the ``bpe-openai`` wheel (works offline; checked against tiktoken's own sha256), then from
tiktoken's cache or download, else we fall back to ratios.
"""

from __future__ import annotations

import binascii
import gzip
import hashlib
import importlib.util
import json
import logging
import math
import re
import threading
from collections import Counter, OrderedDict
from collections.abc import Callable
from pathlib import Path
from typing import Any

import tiktoken
from tiktoken_ext.openai_public import ENDOFPROMPT, ENDOFTEXT, FIM_MIDDLE, FIM_PREFIX, FIM_SUFFIX

from monad_notebook.images.image import Image
from monad_notebook.images.vision import Detail, data_url_size, image_tokens

log = logging.getLogger(__name__)

CHARS_PER_TOKEN: dict[str, float] = {"prose": 4.7, "code": 4.3, "json": 3.4, "table": 2.0}

_SHA256 = {
    "o200k_base": "446a9538cb6c348e3516120d7c08b09f57c36495e2acfffe59a5bf8b0cfb1a2d",
    "cl100k_base": "223921b76ee99bde995b7ff738513eef100fb51d18c93597a113bcffe865b2a7",
}
_PAT_STR = {
    "o200k_base": "|".join(
        [
            r"""[^\r\n\p{L}\p{N}]?[\p{Lu}\p{Lt}\p{Lm}\p{Lo}\p{M}]*[\p{Ll}\p{Lm}\p{Lo}\p{M}]+(?i:'s|'t|'re|'ve|'m|'ll|'d)?""",
            r"""[^\r\n\p{L}\p{N}]?[\p{Lu}\p{Lt}\p{Lm}\p{Lo}\p{M}]+[\p{Ll}\p{Lm}\p{Lo}\p{M}]*(?i:'s|'t|'re|'ve|'m|'ll|'d)?""",
            r"""\p{N}{1,3}""",
            r""" ?[^\s\p{L}\p{N}]+[\r\n/]*""",
            r"""\s*[\r\n]+""",
            r"""\s+(?!\S)""",
            r"""\s+""",
        ]
    ),
    "cl100k_base": (
        r"""'(?i:[sdmt]|ll|ve|re)|[^\r\n\p{L}\p{N}]?+\p{L}++|\p{N}{1,3}+| ?[^\s\p{L}\p{N}]++[\r\n]*+"""
        r"""|\s++$|\s*[\r\n]|\s+(?!\S)|\s"""
    ),
}
_SPECIAL_TOKENS = {
    "o200k_base": {ENDOFTEXT: 199999, ENDOFPROMPT: 200018},
    "cl100k_base": {ENDOFTEXT: 100257, FIM_PREFIX: 100258, FIM_MIDDLE: 100259, FIM_SUFFIX: 100260, ENDOFPROMPT: 100276},
}

# Longest prefix wins; names are matched after dropping a router prefix such as "openai/".
_MODEL_PREFIXES: tuple[tuple[str, str], ...] = (
    ("chatgpt-4o", "o200k_base"),
    ("gpt-4o", "o200k_base"),
    ("gpt-4.1", "o200k_base"),
    ("gpt-4.5", "o200k_base"),
    ("gpt-5", "o200k_base"),
    ("gpt-oss", "o200k_base"),
    ("o1", "o200k_base"),
    ("o3", "o200k_base"),
    ("o4", "o200k_base"),
    ("gpt-4", "cl100k_base"),
    ("gpt-3.5", "cl100k_base"),
    ("gpt-35", "cl100k_base"),
    ("text-embedding-3", "cl100k_base"),
    ("text-embedding-ada-002", "cl100k_base"),
)

_PROXY_ENCODING = "o200k_base"
_SAMPLE_CHARS = 4096
_EXACT_LIMIT = 2_000_000  # longer texts are counted exactly on evenly spaced slices, then scaled
_SLICES = 16
_SLICE_CHARS = 65_536
_TOKENS_PER_MESSAGE = 3  # <|start|>{role}\n ... <|end|>, per OpenAI's published counting recipe
_TOKENS_PER_NAME = 1
_REPLY_PRIMING = 3
_TOKENS_PER_TOOL_CALL = 4
_IMAGE_TOKENS = 765  # an image whose size cannot be read: one 1024x1024 image at high detail
_CACHE_ENTRIES = 8192
_CACHE_MIN_CHARS = 64


def encoding_name_for(model: str) -> str | None:
    """The BPE a model really uses, or None when we do not know it (local and third-party models)."""
    name = model.strip().lower().rsplit("/", 1)[-1]
    name = name.removeprefix("ft:")
    for prefix, encoding in _MODEL_PREFIXES:
        if name == prefix or name.startswith((prefix + "-", prefix + ":", prefix + ".")):
            return encoding
    return None


def _bundled_data_dir() -> Path | None:
    """Where bpe-openai keeps its BPE files, found without importing it (its import takes ~1 s)."""
    spec = importlib.util.find_spec("bpe_openai")
    if spec is None or not spec.submodule_search_locations:
        return None
    return Path(next(iter(spec.submodule_search_locations))) / "data"


def _parse_ranks(data: bytes) -> dict[bytes, int]:
    """``<base64 token> <rank>`` lines, parsed in C-speed maps (~0.15 s for o200k, 4x faster than a loop)."""
    fields = data.split()
    return dict(zip(map(binascii.a2b_base64, fields[0::2]), map(int, fields[1::2]), strict=True))


class EncodingLoader:
    """Loads each encoding at most once: verified bundled BPE file, then tiktoken, then None.

    ``data_dir`` (default: bpe-openai's data folder) and ``fallback`` (default:
    ``tiktoken.get_encoding``, which reads its cache or downloads) are injectable so that a
    tampered file or an offline machine can be reproduced.
    """

    def __init__(
        self,
        data_dir: Path | None = None,
        fallback: Callable[[str], tiktoken.Encoding] | None = tiktoken.get_encoding,
    ) -> None:
        self._data_dir = data_dir
        self._fallback = fallback
        self._cache: dict[str, tiktoken.Encoding | None] = {}
        self._lock = threading.Lock()

    def get(self, name: str) -> tiktoken.Encoding | None:
        with self._lock:
            if name not in self._cache:
                self._cache[name] = self._load(name)
            return self._cache[name]

    def _load(self, name: str) -> tiktoken.Encoding | None:
        encoding, problem = self._load_bundled(name) if name in _SHA256 else (None, None)
        if encoding is not None:
            return encoding
        encoding, failure = self._load_fallback(name)
        if encoding is None:
            why = "; ".join(filter(None, [problem, failure]))
            log.warning(
                "no %s tokenizer (%s); token counts are estimates: pip install 'monad-notebook[local]'", name, why
            )
        elif problem:
            log.warning("%s; using tiktoken's copy of %s instead: reinstall bpe-openai", problem, name)
        return encoding

    def _load_fallback(self, name: str) -> tuple[tiktoken.Encoding | None, str | None]:
        if self._fallback is None:
            return None, "no tiktoken fallback"
        try:
            return self._fallback(name), None
        except Exception as exc:  # offline, unknown name or a corrupt cache all mean: no encoding
            return None, f"tiktoken: {type(exc).__name__}"

    def _load_bundled(self, name: str) -> tuple[tiktoken.Encoding | None, str | None]:
        """The encoding from bpe-openai's verified file, else None and why (no reason when it is not installed)."""
        data_dir = self._data_dir or _bundled_data_dir()
        if data_dir is None:
            return None, None
        path = data_dir / f"{name}.tiktoken.gz"
        try:
            data = gzip.decompress(path.read_bytes())
        except (OSError, EOFError) as exc:
            return None, f"cannot read {path} ({type(exc).__name__})"
        if hashlib.sha256(data).hexdigest() != _SHA256[name]:
            return None, f"{path} failed its sha256 check and was ignored"
        encoding = tiktoken.Encoding(
            name=name, pat_str=_PAT_STR[name], mergeable_ranks=_parse_ranks(data), special_tokens=_SPECIAL_TOKENS[name]
        )
        return encoding, None


_LOADER = EncodingLoader()


def get_encoding(name: str) -> tiktoken.Encoding | None:
    """The named encoding, loaded once per process; None when no source has it."""
    return _LOADER.get(name)


_JSON_PUNCT = re.compile(r"[{}\[\]\":,]")
_JSON_KEY = re.compile(r"[\"'][^\"'\n]{1,80}[\"']\s*:")
_ALIGNED_GAP = re.compile(r"\S {2,}\S")
_CODE_LINE = re.compile(
    r"""^\s*(?:def |class |import |from \S+ import|return\b|if .*:$|for .*:$|while .*:$|elif |else:|try:|except"""
    r"""|with .*:$|@\w|function\b|const |let |var |#include|public |private |\}|\{)"""
    r"""|[;{}]\s*$|\)\s*:?\s*$|^\s*\w[\w.\[\]'"]*\s*[-+*/]?=[^=]|->|=>|==|!="""
)
_CODE_SYMBOLS = frozenset("()[]{}=<>;_#*+/\\|&^%$`'\"")


def classify(text: str) -> str:
    """Which of prose, code, json or table the text looks like, judged on its first ~4 KB.

    Tokens per character differ about 2.4x between prose and tables, so the kind picks
    the ratio used when no BPE is available.
    """
    sample = text[:_SAMPLE_CHARS]
    stripped = sample.lstrip()
    if not stripped:
        return "prose"
    lines = [line for line in sample.splitlines() if line.strip()]
    if len(text) > _SAMPLE_CHARS and len(lines) > 1:
        lines.pop()
    if _is_json(stripped, lines):
        return "json"
    if _is_table(lines):
        return "table"
    if _is_code(sample, lines):
        return "code"
    return "prose"


def _most_common_share(values: list[int]) -> tuple[int, float]:
    value, count = Counter(values).most_common(1)[0]
    return value, count / len(values)


def _is_json(stripped: str, lines: list[str]) -> bool:
    """Punctuation-dense text that opens like JSON, or that is mostly ``"key":`` lines (a slice of JSON)."""
    if len(_JSON_PUNCT.findall(stripped)) < 0.06 * len(stripped):
        return False
    return stripped[0] in "{[" or len(_JSON_KEY.findall(stripped)) >= 0.5 * len(lines)


def _is_table(lines: list[str]) -> bool:
    if len(lines) < 3:
        return False
    for delimiter in (",", "\t", "|", ";"):
        columns, share = _most_common_share([line.count(delimiter) for line in lines])
        if columns >= 2 and share >= 0.8:
            return True
    fields, share = _most_common_share([len(line.split()) for line in lines])
    aligned = sum(1 for line in lines if _ALIGNED_GAP.search(line)) / len(lines)
    return fields >= 3 and share >= 0.6 and aligned >= 0.7


def _is_code(sample: str, lines: list[str]) -> bool:
    if not lines:
        return False
    code_lines = sum(1 for line in lines if _CODE_LINE.search(line)) / len(lines)
    symbols = sum(1 for char in sample if char in _CODE_SYMBOLS) / len(sample)
    return code_lines >= 0.3 or symbols >= 0.12


def _utf8_len(text: str) -> int:
    """UTF-8 bytes: equal to chars for ASCII, and closer than chars to BPE cost for other scripts."""
    return len(text) if text.isascii() else len(text.encode("utf-8", "surrogatepass"))


class TokenCounter:
    """Counts raw tokens for one model; a window calibrates them to the provider's counts.

    ``loader`` maps an encoding name to an Encoding or None (default: :func:`get_encoding`);
    pass ``lambda name: None`` to force the per-type ratio estimate.
    """

    def __init__(self, model: str, *, loader: Callable[[str], tiktoken.Encoding | None] = get_encoding) -> None:
        self.model = model
        self.encoding_name = encoding_name_for(model)
        self._loader = loader
        self._encoding: tiktoken.Encoding | None = None
        self._resolved = False
        self._lock = threading.Lock()
        self._cache: OrderedDict[tuple[int, int], int] = OrderedDict()

    def _resolve(self) -> tiktoken.Encoding | None:
        """Load the encoding on first use: a Session should not pay for it until it counts."""
        if not self._resolved:
            with self._lock:
                if not self._resolved:
                    self._encoding = self._loader(self.encoding_name or _PROXY_ENCODING)
                    self._resolved = True
        return self._encoding

    @property
    def exact(self) -> bool:
        """True when counting with the model's own encoding, not a proxy or ratios."""
        return self.encoding_name is not None and self._resolve() is not None

    def count_text(self, text: str) -> int:
        """Tokens in ``text``: exact up to 2 M chars, ratio-based without a BPE.

        Longer texts are counted exactly on 16 evenly spaced 64 K-char slices and scaled by
        length (within ~2% on mixed text), which caps the cost at about 1 MB of tokenizing.
        Counts are cached by (length, hash), so re-counting an unchanged window each step is free.
        """
        if len(text) < _CACHE_MIN_CHARS:
            return self._count_uncached(text)
        key = (len(text), hash(text))
        with self._lock:
            if key in self._cache:
                self._cache.move_to_end(key)
                return self._cache[key]
        count = self._count_uncached(text)
        with self._lock:
            self._cache[key] = count
            if len(self._cache) > _CACHE_ENTRIES:
                self._cache.popitem(last=False)
        return count

    def _count_uncached(self, text: str) -> int:
        if not text:
            return 0
        encoding = self._resolve()
        if encoding is None:
            return math.ceil(_utf8_len(text) / CHARS_PER_TOKEN[classify(text)])
        if len(text) <= _EXACT_LIMIT:
            return len(encoding.encode_ordinary(text))
        step = len(text) // _SLICES
        slices = [text[i * step : i * step + _SLICE_CHARS] for i in range(_SLICES)]
        sampled = sum(len(tokens) for tokens in encoding.encode_ordinary_batch(slices))
        return round(sampled * len(text) / sum(map(len, slices)))

    def count_messages(self, messages: list[dict[str, Any]], tools: list[dict[str, Any]] | None = None) -> int:
        """Raw (uncalibrated) tokens of a chat request in OpenAI format, reply priming included."""
        total = _REPLY_PRIMING
        for message in messages:
            total += _TOKENS_PER_MESSAGE + self.count_text(str(message.get("role", "")))
            total += self._count_content(message.get("content"))
            if message.get("name"):
                total += _TOKENS_PER_NAME + self.count_text(str(message["name"]))
            for call in message.get("tool_calls") or ():
                function = call.get("function", {})
                total += _TOKENS_PER_TOOL_CALL + self.count_text(str(function.get("name", "")))
                total += self.count_text(str(function.get("arguments", "")))
        if tools:
            total += self.count_text(json.dumps(tools, separators=(",", ":"), ensure_ascii=False))
        return total

    def _count_content(self, content: Any) -> int:
        if content is None:
            return 0
        if isinstance(content, str):
            return self.count_text(content)
        total = 0
        for part in content:
            kind = part.get("type") if isinstance(part, dict) else None
            if kind == "text":
                total += self.count_text(str(part.get("text", "")))
            elif kind == "image_url":
                total += self._count_image_part(part.get("image_url"))
            else:
                total += self.count_text(json.dumps(part, ensure_ascii=False, default=str))
        return total

    def count_image(self, image: Image, detail: str = "auto") -> int:
        """Input tokens one image costs this model (the provider's formula; see ``provider.vision``)."""
        return image_tokens(self.model, image.width, image.height, _detail(detail))

    def _count_image_part(self, value: Any) -> int:
        url = value.get("url", "") if isinstance(value, dict) else ""
        size = data_url_size(url) if isinstance(url, str) else None
        if size is None:
            return _IMAGE_TOKENS
        detail = value.get("detail", "auto") if isinstance(value, dict) else "auto"
        return image_tokens(self.model, *size, _detail(detail))


def _detail(value: Any) -> Detail:
    return value if value in ("low", "high") else "auto"


def effective_input_tokens(last_real: int | None, estimate: int) -> int:
    """Window occupancy: the provider's last real input count when there is one, else the estimate.

    The real count is one step old: it misses whatever the last step appended (tool
    results, the assistant's message). That lag is accepted for the soft and eviction
    triggers, which only need to fire roughly on time, in exchange for true occupancy
    (system prompt, tool schemas and chat template included). The hard overflow guard
    must not lag: it uses ``Occupancy.guard_tokens``, the real count plus the growth since.
    A count of 0 means a provider that reports nothing useful and is treated as unknown.
    """
    if last_real is not None and last_real > 0:
        return last_real
    return estimate
