"""Which models take images, and what an image costs them in input tokens.

``models.<tier>.vision`` is ``true``, ``false`` or ``"auto"``; ``auto`` turns images on only for
model names known to take them (an unknown endpoint may answer an image with an error, or
worse, ignore it silently). The token formulas are OpenAI's published ones: tiles of 512 px
for the GPT-4o family, 32 px patches for the GPT-4.1 mini/nano and o4-mini family. Other
providers count differently; the session's calibration against the provider's real counts
corrects an estimate built on them, as it does for text.
"""

from __future__ import annotations

import base64
import binascii
import math
import re
import struct
from typing import Literal

Detail = Literal["auto", "low", "high"]
VisionSetting = bool | Literal["auto"]

_SEEING = re.compile(
    r"gpt-4o|gpt-4\.1|gpt-4\.5|gpt-4-turbo|gpt-4-vision|gpt-5|chatgpt-4o|(?:^|/)o1(?!-mini)|(?:^|/)o3(?!-mini)"
    r"|o4-mini|claude-(?:3|sonnet|opus|haiku)|gemini|llava|bakllava|-vl\b|-vl-|vision|pixtral|gemma-?3"
    r"|minicpm-v|moondream|qwen2\.5-omni|llama-?4",
    re.IGNORECASE,
)
_PATCH_MULTIPLIERS = (("gpt-4.1-nano", 2.46), ("gpt-4.1-mini", 1.62), ("o4-mini", 1.72), ("gpt-5-nano", 2.46))
_PATCH = 32
_MAX_PATCHES = 1536
_TILE = 512


def sees_images(setting: VisionSetting, model_name: str, *, declared: bool | None = None) -> bool:
    """Whether a model gets images: the setting, else what the model declares, else its name."""
    if setting is not True and setting is not False:
        if declared is not None:
            return declared
        return bool(_SEEING.search(model_name))
    return setting


def image_tokens(model_name: str, width: int, height: int, detail: Detail = "auto") -> int:
    """Input tokens one image costs ``model_name`` (OpenAI's formulas; ``auto`` counted as ``high``)."""
    if width <= 0 or height <= 0:
        return 0
    name = model_name.lower()
    for prefix, multiplier in _PATCH_MULTIPLIERS:
        if prefix in name:
            return math.ceil(_patches(width, height) * multiplier)
    base, per_tile = (2833, 5667) if "gpt-4o-mini" in name else (70, 140) if "gpt-5" in name else (85, 170)
    if detail == "low":
        return base
    return base + per_tile * _tiles(width, height)


def _patches(width: int, height: int) -> int:
    """32 px patches, the image scaled down until at most 1,536 of them cover it."""
    patches = math.ceil(width / _PATCH) * math.ceil(height / _PATCH)
    if patches <= _MAX_PATCHES:
        return patches
    shrink = math.sqrt(_PATCH * _PATCH * _MAX_PATCHES / (width * height))
    w, h = width * shrink, height * shrink
    w_fit = math.floor(w / _PATCH) / (w / _PATCH)  # whole patches across
    w, h = w * w_fit, h * w_fit
    return min(_MAX_PATCHES, _ceil(w / _PATCH) * _ceil(h / _PATCH))


def _ceil(value: float) -> int:
    """Ceiling that ignores float noise (1408.0000001 px is 44 patches, not 45)."""
    return math.ceil(round(value, 6))


def _tiles(width: int, height: int) -> int:
    """512 px tiles after fitting in 2048 x 2048 and scaling the shortest side to 768."""
    scale = min(1.0, 2048 / max(width, height))
    w, h = width * scale, height * scale
    scale = min(1.0, 768 / min(w, h))
    w, h = w * scale, h * scale
    return math.ceil(w / _TILE) * math.ceil(h / _TILE)


def data_url_size(url: str) -> tuple[int, int] | None:
    """(width, height) of a PNG or JPEG ``data:`` URL, read from its header; None when unknown."""
    head, _, payload = url.partition(",")
    if not head.startswith("data:image/") or not head.endswith(";base64"):
        return None
    try:
        first = base64.b64decode(payload[:32])  # a PNG's size is in its first 24 bytes
        if first[:8] == b"\x89PNG\r\n\x1a\n" and len(first) >= 24:
            return struct.unpack(">II", first[16:24])
        if first[:2] != b"\xff\xd8":
            return None
        return _jpeg_size(base64.b64decode(payload[: 4 * (len(payload[:96_000]) // 4)]))
    except (binascii.Error, ValueError):
        return None


def _jpeg_size(data: bytes) -> tuple[int, int] | None:
    """The frame size from a JPEG's first start-of-frame marker (within the bytes read)."""
    at = 2
    while at + 9 <= len(data):
        if data[at] != 0xFF:
            return None
        marker = data[at + 1]
        if marker in (0xD8, 0x01) or 0xD0 <= marker <= 0xD7:
            at += 2
            continue
        length = struct.unpack(">H", data[at + 2 : at + 4])[0]
        if 0xC0 <= marker <= 0xCF and marker not in (0xC4, 0xC8, 0xCC):
            height, width = struct.unpack(">HH", data[at + 5 : at + 9])
            return width, height
        at += 2 + length
    return None
