"""An image a tool result carries: its bytes, its handle, and the line that names it in the result's text.

Every model is told of an image by that line (``[image img_...: what was plotted (WxH png)]``);
a model that sees images is also sent the bytes (``images/vision.py`` says which and what they
cost). The line is also what a summary, the panel and ``recall`` keep of it.
"""

from __future__ import annotations

import base64
import functools
import re
import uuid
from dataclasses import dataclass, field

IMAGE_PREFIX = "img_"
IMAGES_CLEARED = "[images cleared from the prompt"  # how an image-only eviction's note starts


def new_image_id() -> str:
    """A short handle the model can quote back (``img_3f9a2c41d0``)."""
    return IMAGE_PREFIX + uuid.uuid4().hex[:10]


_IMAGE_LINE = re.compile(r"\[image img_[0-9a-f]{10}\b[^\n]{0,400}?\)\]")


def image_lines(text: str) -> list[str]:
    """The ``[image img_...: description (WxH png)]`` lines a result's text names its images by."""
    return _IMAGE_LINE.findall(text) if "[image img_" in text else []


@dataclass(frozen=True)
class Image:
    """One image a tool result carries: scaled bytes and the line that describes it."""

    id: str  # the handle: view_image(id) shows it again
    mime: str  # image/png or image/jpeg
    width: int
    height: int
    data: bytes = field(repr=False)
    description: str = ""  # what was plotted, in one line (from the code's title and axis labels)

    @functools.cached_property
    def data_url(self) -> str:
        """The image as Chat Completions' ``image_url`` takes it inline (encoded once: every request sends it)."""
        return f"data:{self.mime};base64,{base64.b64encode(self.data).decode('ascii')}"

    def line(self) -> str:
        """How the image appears in its result's text, for every model and for recall."""
        about = f": {self.description}" if self.description else ""
        return f"[image {self.id}{about} ({self.width}x{self.height} {self.mime.split('/')[-1]})]"
