"""How fast the embedder goes, as its calls went: what a search waits for, what the status expects, how big a call.

Per chunk (passages) and per word, each a moving mean of its calls; the first call is not
counted, as it loads the model. Until a speed is measured, a chunk is guessed at
``first_guess_seconds``.
"""

from __future__ import annotations


class Throughput:
    """The embedder's measured speed, and the sizes of calls that keep each short."""

    call_seconds = 0.5  # a call takes at most about this: a search's question waits behind a call
    first_guess_seconds = 0.02  # per chunk, until the embedder's own speed is measured

    def __init__(self) -> None:
        self.unit = 0.0  # seconds the last call took
        self.per_chunk: float | None = None  # seconds one embedding input takes, as measured ...
        self.per_word: float | None = None  # ... and one word, learnt for the word ranking
        self._calls = 0

    def measured(self, seconds: float, inputs: int, *, words: bool = False) -> None:
        """A call of ``inputs`` chunks (or words) took ``seconds``."""
        self.unit = seconds
        self._calls += 1
        if inputs and self._calls > 1:
            per, known = seconds / inputs, self.per_word if words else self.per_chunk
            mean = per if known is None else 0.7 * known + 0.3 * per
            if words:
                self.per_word = mean
            else:
                self.per_chunk = mean

    def call_size(self, most: int, *, words: bool = False) -> int:
        """Inputs for the next call: ``most``, fewer when at the measured speed the call would outlast
        ``call_seconds`` (a one-slot server embeds a search's question only after the call in hand)."""
        per_input = self.per_word if words else self.per_chunk
        return most if per_input is None else max(1, min(most, int(self.call_seconds / per_input)))

    def seconds_for(self, inputs: int) -> float:
        """About how long ``inputs`` chunks take to embed."""
        return inputs * (self.per_chunk if self.per_chunk is not None else self.first_guess_seconds)
