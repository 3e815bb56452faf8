"""The records of a conformance run: a Cell per op x dtype, a GraphCell per jitted graph, a
Layer per runtime layer, the Report of one backend, and the statuses a cell ends in."""

from __future__ import annotations

from dataclasses import asdict, dataclass, field

PASS, FAIL, FALLBACK, UNSUPPORTED = "pass", "fail", "fallback", "unsupported"


@dataclass
class Cell:
    """The outcome of one op on one dtype."""

    op: str
    dtype: str
    status: str
    examples: int = 0
    seconds: float = 0.0
    error: str = ""
    repro: str = ""
    ran: str = ""  # how the op itself ran: kernel, decomposed or fallback ('' if it never did)


@dataclass
class GraphCell:
    """The outcome of one graph workload jitted on the device (graphs.py)."""

    graph: str
    dtype: str
    status: str
    path: str = ""  # graph (Backend.compile's executable), fused (compile_fused) or replay
    counts: dict[str, int] = field(default_factory=dict)  # the executable's counts()
    seconds: float = 0.0
    error: str = ""
    repro: str = ""


@dataclass
class Layer:
    """The outcome of one runtime-protocol layer."""

    name: str
    ok: bool
    detail: str = ""


@dataclass
class Report:
    """Everything one conformance run found about one backend."""

    backend: str
    device: str | None = None
    layers: list[Layer] = field(default_factory=list)
    cells: list[Cell] = field(default_factory=list)
    graphs: list[GraphCell] = field(default_factory=list)
    seconds: float = 0.0

    @property
    def ok(self) -> bool:
        """True when every layer passed and no cell, op or graph, failed."""
        return all(layer.ok for layer in self.layers) and all(
            c.status != FAIL for c in [*self.cells, *self.graphs])

    def counts(self) -> dict[str, int]:
        """Cells per status."""
        out = {PASS: 0, FAIL: 0, FALLBACK: 0, UNSUPPORTED: 0}
        for c in self.cells:
            out[c.status] += 1
        return out

    def to_dict(self) -> dict:
        """A JSON-ready dict."""
        return {"backend": self.backend, "device": self.device, "ok": self.ok,
                "seconds": round(self.seconds, 3), "counts": self.counts(),
                "layers": [asdict(x) for x in self.layers],
                "cells": [asdict(c) for c in self.cells],
                "graphs": [asdict(g) for g in self.graphs]}
