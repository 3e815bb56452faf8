"""Static post-training quantization: activation ranges fixed once by calibration.

    qmodel = quant_post_static(model, [(x,) for x in batches])              # min/max
    qmodel = quant_post_static(model, loader, algo="percentile", batches=16)

The calibration pass runs a copy of the model in eval mode with every selected Linear
wrapped in an observer that records the range of its inputs; each Linear then becomes a
StaticQuantizedLinear with the uint8 scale and zero point of that range.
"""

from __future__ import annotations

import itertools
import math
from collections.abc import Iterable, Mapping

import numpy as np

import hal
from hal import HalError, Tensor

from ..nn import Layer, Linear
from .convert import options_from, replaced, selected
from .layers import StaticQuantizedLinear

ALGOS = ("minmax", "percentile")


class Range:
    """The range of the values seen: their min and max ("minmax"), or per batch the
    (100 - percentile)-th and percentile-th percentiles, widest over batches ("percentile",
    which ignores rare outliers)."""

    def __init__(self, algo: str = "minmax", percentile: float = 99.99) -> None:
        self.algo, self.percentile = algo, percentile
        self.lo, self.hi = math.inf, -math.inf

    def observe(self, x: Tensor) -> None:
        """Widen the range by a batch of values."""
        if not x.size:
            return
        if self.algo == "minmax":
            lo, hi = float(hal.min(x).numpy()), float(hal.max(x).numpy())
        else:
            lo, hi = np.percentile(x.numpy(), (100 - self.percentile, self.percentile))
        self.lo, self.hi = min(self.lo, float(lo)), max(self.hi, float(hi))


class _Observer(Layer):
    """A Linear that records the range of its inputs, then runs."""

    def __init__(self, linear: Linear, seen: Range) -> None:
        super().__init__()
        self.linear = linear
        self.seen = seen

    def forward(self, x: Tensor) -> Tensor:
        """The Linear's output; x's range recorded."""
        self.seen.observe(x)
        return self.linear(x)


def calibrate(model: Layer, calibration_data: Iterable,
              chosen: list[tuple[str, Layer]] | None = None, *, algo: str = "minmax",
              percentile: float = 99.99, batches: int | None = None) -> dict[str, Range]:
    """The input range of each chosen (name, layer) (default: every Linear) over the
    calibration batches (argument tuples, keyword dicts or single tensors), run through an
    observing copy of `model` in eval mode."""
    if chosen is None:
        chosen = selected(model)
    if algo not in ALGOS:
        raise HalError(f"quant_post_static: algo {algo!r} is not one of {', '.join(ALGOS)}")
    if not 50 < percentile <= 100:
        raise HalError(f"quant_post_static: percentile {percentile!r} must be in (50, 100]")
    if batches is not None and (not isinstance(batches, int) or batches < 1):
        raise HalError(f"quant_post_static: batches={batches!r} must be a positive int or None")
    if calibration_data is None or isinstance(calibration_data, (Tensor, str, bytes)) \
            or not isinstance(calibration_data, Iterable):
        raise HalError("quant_post_static: static PTQ needs calibration batches (an iterable "
                       "of argument tuples, keyword dicts or tensors); got "
                       f"{type(calibration_data).__name__}. quant_post_dynamic needs none")
    ranges = {name: Range(algo, percentile) for name, _ in chosen}
    observing = replaced(model, chosen, lambda name, linear: _Observer(linear, ranges[name]))
    observing.eval()
    count = 0
    for batch in itertools.islice(calibration_data, batches):
        if isinstance(batch, Mapping):
            observing(**batch)
        elif isinstance(batch, (tuple, list)):
            observing(*batch)
        else:
            observing(batch)
        count += 1
    if not count:
        raise HalError("quant_post_static: the calibration data is empty; static PTQ needs "
                       "calibration batches (quant_post_dynamic needs none)")
    unseen = [name for name, r in ranges.items() if r.lo > r.hi]
    if unseen:
        raise HalError(f"quant_post_static: layer(s) {', '.join(unseen)} saw no input during "
                       "calibration; pass batches that reach them or skip=(...) them")
    return ranges


def quant_post_static(model: Layer, calibration_data: Iterable, *, algo: str = "minmax",
                      percentile: float = 99.99, batches: int | None = None,
                      config: Mapping | None = None, **options) -> Layer:
    """A copy of `model` with every selected Linear replaced by a StaticQuantizedLinear whose
    input scale and zero point come from the range its inputs had on the calibration data
    (the first `batches` batches if given); `model` itself is unchanged. algo: "minmax" or
    "percentile" (`percentile`-th). options and config as quant_post_dynamic's."""
    opts = options_from(config, options)
    chosen = selected(model, opts["skip"], opts["layer_types"])
    ranges = calibrate(model, calibration_data, chosen, algo=algo, percentile=percentile,
                       batches=batches)
    return replaced(model, chosen, lambda name, linear: StaticQuantizedLinear.from_linear(
        linear, opts["per_channel"], lo=ranges[name].lo, hi=ranges[name].hi))
