"""Calibration: from our raw token counts to what the provider will count for a request.

Our counts are raw (o200k, or per-type ratios, over the message text and the tool schemas).
A provider counts with its own tokenizer and chat template, and some servers leave the tool
schemas out of the prompt altogether (llama.cpp's server does), so the relation is not one
ratio but a line over the request's parts:

    provider ≈ ratio * messages + tools_weight * tools + offset

It is fitted by weighted least squares over the last few requests the provider counted,
pulled towards the uncalibrated guess (ratio 1, schemas counted, no offset) by a Gaussian
prior, so that one observation mostly moves the fixed part (schemas and template) and a
second one the ratio, and no pair of close observations can produce a wild slope. The
observations are small plain data: the session keeps them in the store and a new kernel
starts from them.
"""

from __future__ import annotations

import threading
from dataclasses import dataclass
from typing import Any

KEPT = 8  # observations in the fit: enough for a slope, few enough to follow a changing server
_NOISE = 0.02  # relative spread of a provider count around the line (content mix, template)
_NOISE_FLOOR = 2.0  # tokens
_PRIOR = (1.0, 1.0, 0.0)  # ratio, tools weight, offset: the raw count as it is
_PRIOR_SPREAD = (0.5, 1.5)  # ratio and tools weight: the prior's standard deviations
_OFFSET_SPREAD = (0.05, 8.0)  # offset: 5% of the typical request plus 8 tokens
_RATIO_RANGE = (0.25, 4.0)
_TOOLS_RANGE = (0.0, 4.0)


@dataclass(frozen=True)
class Fit:
    """The fitted line: ``ratio * messages + tools_weight * tools + offset``."""

    ratio: float = 1.0
    tools_weight: float = 1.0
    offset: float = 0.0

    def predict(self, messages: int, tools: int) -> int:
        return max(0, round(self.ratio * messages + self.tools_weight * tools + self.offset))


class Calibration:
    """The last few (raw messages, raw tools, provider count) triples, and the line they fit.

    Thread-safe: a background compaction may read the fit while the turn observes.
    """

    def __init__(self, observations: list[tuple[int, int, int]] | None = None) -> None:
        self._observations: list[tuple[int, int, int]] = []
        self._lock = threading.Lock()
        self.fit = Fit()
        self.dirty = False  # observed since the last save
        for messages, tools, real in observations or []:
            self._add(messages, tools, real)
        self.fit = _fit(self._observations)

    @property
    def observations(self) -> list[tuple[int, int, int]]:
        with self._lock:
            return list(self._observations)

    def predict(self, messages: int, tools: int) -> int:
        """What the provider will most likely count for a request of these raw parts."""
        return self.fit.predict(messages, tools)

    def observe(self, messages: int, tools: int, real: int) -> None:
        """Learn from the provider's count of a request whose raw parts were ``messages`` and ``tools``."""
        with self._lock:
            if not self._add(messages, tools, real):
                return
            self.fit = _fit(self._observations)
            self.dirty = True

    def _add(self, messages: int, tools: int, real: int) -> bool:
        if messages <= 0 or tools < 0 or real <= 0:
            return False
        self._observations.append((int(messages), int(tools), int(real)))
        del self._observations[:-KEPT]
        return True

    def to_dict(self) -> dict[str, Any]:
        return {"observations": [list(o) for o in self.observations]}

    @classmethod
    def from_dict(cls, data: dict[str, Any] | None) -> Calibration:
        """A calibration from :meth:`to_dict`'s output; anything malformed is dropped, never raised."""
        rows = (data or {}).get("observations") if isinstance(data, dict) else None
        kept: list[tuple[int, int, int]] = []
        for row in rows if isinstance(rows, list) else []:
            if isinstance(row, list) and len(row) == 3 and all(isinstance(v, int) for v in row):
                kept.append((row[0], row[1], row[2]))
        return cls(kept)


def _fit(observations: list[tuple[int, int, int]]) -> Fit:
    """Weighted ridge regression of the counts on (messages, tools, 1), towards the prior."""
    if not observations:
        return Fit()
    typical = sum(m + t for m, t, _ in observations) / len(observations)
    spreads = (*_PRIOR_SPREAD, _OFFSET_SPREAD[0] * typical + _OFFSET_SPREAD[1])
    matrix = [[0.0] * 3 for _ in range(3)]
    vector = [0.0] * 3
    for j in range(3):
        matrix[j][j] = 1.0 / spreads[j] ** 2
        vector[j] = _PRIOR[j] / spreads[j] ** 2
    for messages, tools, real in observations:
        weight = 1.0 / (_NOISE * real + _NOISE_FLOOR) ** 2
        row = (float(messages), float(tools), 1.0)
        for j in range(3):
            vector[j] += weight * row[j] * real
            for k in range(3):
                matrix[j][k] += weight * row[j] * row[k]
    ratio, tools_weight, _ = _solve(matrix, vector)
    ratio = min(max(ratio, _RATIO_RANGE[0]), _RATIO_RANGE[1])
    tools_weight = min(max(tools_weight, _TOOLS_RANGE[0]), _TOOLS_RANGE[1])
    return Fit(ratio, tools_weight, _offset(observations, ratio, tools_weight, spreads[2]))


def _offset(observations: list[tuple[int, int, int]], ratio: float, tools_weight: float, spread: float) -> float:
    """The offset that best fits once the slopes are fixed (they may have been clamped)."""
    weighted = prior = 1.0 / spread**2
    total = 0.0
    for messages, tools, real in observations:
        weight = 1.0 / (_NOISE * real + _NOISE_FLOOR) ** 2
        total += weight * (real - ratio * messages - tools_weight * tools)
        weighted += weight
    return (total + prior * _PRIOR[2]) / weighted


def _solve(matrix: list[list[float]], vector: list[float]) -> list[float]:
    """Gaussian elimination with partial pivoting; the prior keeps the 3x3 system well posed."""
    n = len(vector)
    a = [[*row, vector[i]] for i, row in enumerate(matrix)]
    for col in range(n):
        pivot = max(range(col, n), key=lambda r: abs(a[r][col]))
        a[col], a[pivot] = a[pivot], a[col]
        for r in range(col + 1, n):
            factor = a[r][col] / a[col][col]
            for c in range(col, n + 1):
                a[r][c] -= factor * a[col][c]
    solution = [0.0] * n
    for r in range(n - 1, -1, -1):
        solution[r] = (a[r][n] - sum(a[r][c] * solution[c] for c in range(r + 1, n))) / a[r][r]
    return solution
