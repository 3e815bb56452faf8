"""A titled part of the report, independent of the output format."""

from __future__ import annotations

from dataclasses import dataclass, field

import pandas as pd

Block = str | pd.DataFrame | tuple[str, bytes]


@dataclass
class Section:
    """A titled part of the report: paragraphs, tables and PNG images (name, bytes), in
    order."""

    title: str
    blocks: list[Block] = field(default_factory=list)
