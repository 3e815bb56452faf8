"""What the figure scripts (`*_figures.py`) share: load averages around each figure, and the
JSON file and printed text they end with."""

from __future__ import annotations

import json
import os
from collections.abc import Callable


def load() -> list[float]:
    """The 1, 5 and 15-minute load averages (as `uptime` prints them)."""
    return [round(x, 2) for x in os.getloadavg()]


def measured(figure: Callable[[], dict]) -> dict:
    """figure() with the load averages before and after it under "load"."""
    before = load()
    out = figure()
    out["load"] = {"before": before, "after": load()}
    return out


def finish(results: dict, json_path: str | None, text: Callable[[dict], str]) -> None:
    """Write the results as JSON (when a path is given), then print them as text."""
    if json_path:
        with open(json_path, "w") as f:
            json.dump(results, f, indent=1)
    print(text(results))
