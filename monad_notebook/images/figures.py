"""Images the user's code displays, made ready for the transcript: checked, scaled, described.

Only what the agent's code displays in the notebook becomes an image of a result (a
matplotlib or seaborn figure, a plotly static export, a PIL image, ``IPython.display.Image``,
any ``image/png``/``image/jpeg`` display); a file the agent reads never does. Each image is
decoded once with Pillow (bounded: a decompression bomb, a corrupt file or a vector image is
refused in one line), scaled down to ``context.images.maxSide`` and re-encoded, so the bytes
kept and sent are bounded whatever was displayed. Its one-line description comes from the
code that drew it: the title, the axis labels and the columns plotted.
"""

from __future__ import annotations

import base64
import binascii
import io
import re
import warnings
from collections.abc import Callable
from dataclasses import dataclass, field

from monad_notebook.config_schema import ImagesConfig
from monad_notebook.images.image import Image, new_image_id

RASTER = ("image/png", "image/jpeg", "image/gif", "image/webp")
VECTOR = ("image/svg+xml", "application/pdf")
MAX_INPUT_BYTES = 64 * 1024 * 1024  # a display larger than this is not decoded at all
MAX_PIXELS = 100_000_000  # Pillow refuses larger images (a decompression bomb) before decoding them
PNG_KEPT_BYTES = 1_500_000  # a scaled PNG larger than this (a photo, noise) is kept as JPEG instead
_JPEG_QUALITY = 85
_DESCRIPTION_CHARS = 200

_STRING = r"""[rbfu]{0,2}(["'])(.{1,120}?)\1"""
_TITLE = re.compile(r"\b(?:set_title|suptitle|title|set_text)\s*(?:\(\s*|=\s*)" + _STRING)
_XLABEL = re.compile(r"\b(?:set_xlabel|xlabel|x_label)\s*(?:\(\s*|=\s*)" + _STRING)
_YLABEL = re.compile(r"\b(?:set_ylabel|ylabel|y_label)\s*(?:\(\s*|=\s*)" + _STRING)
_X = re.compile(r"[(,]\s*x\s*=\s*" + _STRING)
_Y = re.compile(r"[(,]\s*y\s*=\s*" + _STRING)
_BY = re.compile(r"[(,]\s*(?:hue|color|by|groupby|facet_col)\s*=\s*" + _STRING)
_KINDS = (
    (re.compile(r"\bkind\s*=\s*[\"'](\w+)[\"']"), None),
    (re.compile(r"\b(?:hist|histplot|displot)\s*\("), "histogram"),
    (re.compile(r"\b(?:scatter|scatterplot)\s*\("), "scatter plot"),
    (re.compile(r"\b(?:bar|barh|barplot|countplot)\s*\("), "bar chart"),
    (re.compile(r"\b(?:heatmap|imshow|matshow|pcolormesh)\s*\("), "heatmap"),
    (re.compile(r"\b(?:boxplot|violinplot|box)\s*\("), "box plot"),
    (re.compile(r"\bpie\s*\("), "pie chart"),
    (re.compile(r"\b(?:plot|lineplot|line|relplot)\s*\("), "line chart"),
)


@dataclass
class Captured:
    """What one run displayed: the images kept, and the ones left out (counted, not kept)."""

    images: list[Image] = field(default_factory=list)
    left_out: int = 0


def describe(code: str) -> str:
    """What the code plotted, in one line: kind, title, axes and grouping when the code names them."""
    kind = _kind(code)
    titles = _all(_TITLE, code)
    axes = [
        f"{axis}: {label}"
        for axis, label in (
            ("x", _first(_XLABEL, code) or _first(_X, code)),
            ("y", _first(_YLABEL, code) or _first(_Y, code)),
            ("by", _first(_BY, code)),
        )
        if label
    ]
    parts = [kind or "image"]
    if titles:
        parts.append(" / ".join(repr(t) for t in titles[:3]))
    if axes:
        parts.append(f"({', '.join(axes)})")
    if not titles and not axes:
        lines = [s.strip() for s in code.splitlines() if s.strip() and not _is_setup(s)]
        line = next((s for s in lines if any(p.search(s) for p, _ in _KINDS)), lines[0] if lines else "")
        if line:
            parts.append(f"drawn by `{line[:80]}`")
    text = " ".join(parts)
    return text if len(text) <= _DESCRIPTION_CHARS else text[: _DESCRIPTION_CHARS - 1] + "…"


def _kind(code: str) -> str:
    for pattern, name in _KINDS:
        found = pattern.search(code)
        if found:
            return name or f"{found.group(1)} chart"
    return ""


def _first(pattern: re.Pattern[str], code: str) -> str:
    found = pattern.search(code)
    return " ".join(found.group(2).split()) if found else ""


def _all(pattern: re.Pattern[str], code: str) -> list[str]:
    seen: list[str] = []
    for found in pattern.finditer(code):
        text = " ".join(found.group(2).split())
        if text and text not in seen:
            seen.append(text)
    return seen


def _is_setup(line: str) -> bool:
    stripped = line.strip()
    return stripped.startswith(("import ", "from ", "#", "%"))


class ImageRefused(ValueError):
    """An image that is not kept; the message is the one line the model and the user read."""


def decode(value: object) -> bytes:
    """A display's image payload as bytes: base64 text (what IPython publishes) or raw bytes."""
    if isinstance(value, (bytes, bytearray, memoryview)):
        data = bytes(value)
        if len(data) > MAX_INPUT_BYTES:
            raise ImageRefused(f"{len(data) // 1_000_000} MB, larger than {MAX_INPUT_BYTES // 1_000_000} MB")
        return data
    if not isinstance(value, str):
        raise ImageRefused(f"its data is a {type(value).__name__}, not base64 text or bytes")
    if len(value) * 3 // 4 > MAX_INPUT_BYTES:
        raise ImageRefused(f"{len(value) * 3 // 4_000_000} MB, larger than {MAX_INPUT_BYTES // 1_000_000} MB")
    try:
        return base64.b64decode("".join(value.split()), validate=False)
    except (binascii.Error, ValueError):
        raise ImageRefused("its base64 data is corrupt") from None


def scaled(data: bytes, max_side: int) -> tuple[bytes, str, int, int]:
    """``data`` decoded, scaled to fit ``max_side`` and re-encoded: (bytes, mime, width, height)."""
    from PIL import Image as PILImage
    from PIL import UnidentifiedImageError

    PILImage.MAX_IMAGE_PIXELS = MAX_PIXELS
    try:
        with warnings.catch_warnings():
            warnings.simplefilter("error", PILImage.DecompressionBombWarning)
            with PILImage.open(io.BytesIO(data)) as opened:
                source_format = opened.format
                opened.draft("RGB", (max_side, max_side))  # JPEG: decode at a reduced size
                picture = opened.convert("RGBA" if _has_alpha(opened) else "RGB")
    except (PILImage.DecompressionBombError, PILImage.DecompressionBombWarning):
        raise ImageRefused(f"more than {MAX_PIXELS // 1_000_000} million pixels") from None
    except (UnidentifiedImageError, OSError, ValueError, SyntaxError, EOFError):
        raise ImageRefused("it could not be read: corrupt or not an image") from None
    picture.thumbnail((max_side, max_side), PILImage.Resampling.LANCZOS)
    if source_format != "JPEG":
        out = io.BytesIO()
        picture.save(out, format="PNG")
        if out.tell() <= PNG_KEPT_BYTES:
            return out.getvalue(), "image/png", picture.width, picture.height
    out = io.BytesIO()
    picture.convert("RGB").save(out, format="JPEG", quality=_JPEG_QUALITY)
    return out.getvalue(), "image/jpeg", picture.width, picture.height


def _has_alpha(picture: object) -> bool:
    mode = getattr(picture, "mode", "")
    info = getattr(picture, "info", {})
    return mode in ("RGBA", "LA", "PA") or (mode == "P" and "transparency" in info)


class FigureRecorder:
    """Turns what one run displays into images and the lines its result text carries.

    ``redact`` cleans a description (it comes from the code, which may hold a secret) before
    it is kept beside the image.
    """

    def __init__(self, config: ImagesConfig, code: str, redact: Callable[[str], str] = lambda s: s) -> None:
        self.config = config
        self.code = code
        self.redact = redact
        self.captured = Captured()
        self._description: str | None = None

    def record(self, data: dict[str, object]) -> str | None:
        """The line a display's image stands as in the result text ('' when it shows none; None when
        it is one more image than ``maxPerResult``, counted in :meth:`summary_line` instead)."""
        mime = next((m for m in RASTER if m in data), None)
        if mime is None:
            vector = next((m for m in VECTOR if m in data), None)
            return f"[{vector} shown to the user; vector images are not kept or sent]" if vector else ""
        if len(self.captured.images) >= self.config.max_per_result:
            self.captured.left_out += 1
            return None
        try:
            payload, kept_mime, width, height = scaled(decode(data[mime]), self.config.max_side)
        except ImageRefused as refused:
            return f"[{mime} shown to the user, not kept: {refused}]"
        image = Image(new_image_id(), kept_mime, width, height, payload, self._describe())
        self.captured.images.append(image)
        return image.line()

    def _describe(self) -> str:
        if self._description is None:
            self._description = self.redact(describe(self.code))
        return self._description

    def summary_line(self) -> str:
        """One line for the images left out of this result ('' when none were)."""
        left = self.captured.left_out
        if not left:
            return ""
        return (
            f"[{left} more image(s) shown to the user, not kept: at most "
            f"context.images.maxPerResult={self.config.max_per_result} per result]"
        )
