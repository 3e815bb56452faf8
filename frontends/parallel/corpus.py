"""The text the LM learns: the shipped `data/hardware.txt` as byte ids, and the seeded
random windows of it that make each step's batch (every rank the same window indices, from
the seed; each dp rank takes its slice of the batch).
"""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import numpy as np

import hal
from hal import HalError, Tensor

TEXT = Path(__file__).with_name("data") / "hardware.txt"


class TrainConfigError(HalError):
    """A training config that cannot run (every rank finds the same one): raised by
    `batches` and by the trainer's config check."""


def load_text(path: str | Path = TEXT) -> np.ndarray:
    """The bytes of a text file as uint8 token ids."""
    return np.frombuffer(Path(path).read_bytes(), dtype=np.uint8)


def batches(steps: int, batch: int, seq: int, seed: int = 0, *, part: int = 0,
            parts: int = 1, text: np.ndarray | None = None, device=None,
            ) -> Iterator[tuple[Tensor, Tensor]]:
    """(ids, targets) for each step: `batch` random windows of the text (the shipped one by
    default), int64 (batch // parts, seq) each, targets shifted by one. Every caller with
    the same seed draws the same windows; `part` of `parts` is that slice of the batch."""
    text = load_text() if text is None else text
    if seq + 1 > len(text):
        raise TrainConfigError(f"batches: seq {seq} needs a text of at least {seq + 1} bytes; "
                               f"this one has {len(text)}")
    if batch % parts:
        raise TrainConfigError(f"batches: batch {batch} does not split over {parts} parts")
    rng = np.random.default_rng(seed)
    mine = slice(part * batch // parts, (part + 1) * batch // parts)
    offsets = np.arange(seq + 1)
    for _ in range(steps):
        starts = rng.integers(0, len(text) - seq, size=batch)[mine]
        windows = text[starts[:, None] + offsets].astype(np.int64)
        yield (hal.asarray(windows[:, :-1], device=device),
               hal.asarray(windows[:, 1:], device=device))

