"""Quantization options (keywords or a PaddleSlim-style config dict), which layers of a model
they select, swapping those in a copy, and a summary of what a conversion did."""

from __future__ import annotations

from collections.abc import Callable, Iterable, Mapping

from hal import HalError

from ..nn import Layer, Linear
from .layers import QuantizedLinear

_OPTIONS = {"skip": "names or dotted prefixes of layers to keep in float",
            "layer_types": "Linear subclasses to quantize (default: Linear)",
            "per_channel": "one weight scale per output channel (default) or per tensor"}
_WEIGHT_TYPES = {"channel_wise_abs_max": True, "abs_max": False}
_OP_TYPES = {"Linear", "linear", "matmul", "mul"}  # every name means hal's Linear
_CONFIG = {"weight_bits": "8", "weight_quantize_type": " | ".join(_WEIGHT_TYPES),
           "quantizable_op_type": "a list of " + ", ".join(sorted(_OP_TYPES)),
           "skip": "a list of layer names or dotted prefixes"}


def options_from(config: Mapping | None, options: dict) -> dict:
    """{skip, layer_types, per_channel}: the defaults, then a config dict's (PaddleSlim's
    keys), then the keyword options; anything not understood is a HalError listing what is
    accepted."""
    unknown = sorted(set(options) - set(_OPTIONS))
    if unknown:
        raise HalError(f"quantization: unknown option(s) {', '.join(unknown)}; accepted: "
                       + "; ".join(f"{k} ({v})" for k, v in _OPTIONS.items()))
    merged = {"skip": (), "layer_types": (Linear,), "per_channel": True}
    for key, value in dict(config or {}).items():
        if key == "weight_bits" and value == 8:
            continue
        elif key == "weight_quantize_type" and value in _WEIGHT_TYPES:
            merged["per_channel"] = _WEIGHT_TYPES[value]
        elif key == "quantizable_op_type" and not isinstance(value, str) \
                and set(value) <= _OP_TYPES and value:
            merged["layer_types"] = (Linear,)
        elif key == "skip" and not isinstance(value, str):
            merged["skip"] = tuple(value)
        else:
            raise HalError(f"quantization config: {key!r}: {value!r} is not accepted; the keys "
                           "and values are " + "; ".join(f"{k}: {v}" for k, v in _CONFIG.items()))
    return {**merged, **options}


def _under(name: str, prefix: str) -> bool:
    return name == prefix or name.startswith(prefix + ".")


def selected(model: Layer, skip: Iterable[str] = (), layer_types: tuple = (Linear,),
             ) -> list[tuple[str, Layer]]:
    """(dotted name, layer) of every layer of `layer_types` not under a `skip` prefix (a
    dotted name: "encoder.0" skips "encoder.0" and "encoder.0.fc", not "encoder.01")."""
    skip = (skip,) if isinstance(skip, str) else tuple(skip)
    types = tuple(layer_types) if isinstance(layer_types, (tuple, list)) else (layer_types,)
    if not types or not all(isinstance(t, type) and issubclass(t, Linear) for t in types):
        raise HalError(f"quantization: layer_types {layer_types!r} must be Linear or its "
                       "subclasses (the layers with an int8 form)")
    names = [n for n, _ in model.named_layers()]
    for prefix in skip:
        if not any(_under(n, prefix) for n in names):
            raise HalError(f"quantization: skip {prefix!r} names no layer of "
                           f"{type(model).__name__}; its layers are {', '.join(names[1:9])}"
                           + (" ..." if len(names) > 9 else ""))
    return [(n, layer) for n, layer in model.named_layers()
            if isinstance(layer, types) and not any(_under(n, p) for p in skip)]


def replaced(model: Layer, chosen: Iterable[tuple[str, Layer]],
             make: Callable[[str, Layer], Layer]) -> Layer:
    """A copy of `model` with each chosen (name, layer) replaced by make(name, layer); the
    model itself is unchanged (a chosen root is returned converted)."""
    out = model.copy()
    for name, layer in chosen:
        if not name:
            return make(name, layer)
        *path, leaf = name.split(".")
        parent = out
        for part in path:
            parent = getattr(parent, part)
        setattr(parent, leaf, make(name, layer))
    return out


def summary(model: Layer) -> dict:
    """What quantization made of a model: each int8 layer (name, kind, shape, bytes as
    float32 and as int8 with its scales) and the totals."""
    layers = []
    for name, layer in model.named_layers():
        if isinstance(layer, QuantizedLinear):
            k, n = layer.in_features, layer.out_features
            float_bytes = 4 * (k * n + (0 if layer.bias is None else n))
            int8_bytes = sum(t.size * t.dtype.itemsize for t in layer.state_dict().values())
            layers.append({"name": name, "kind": type(layer).__name__, "in_features": k,
                           "out_features": n, "float32_bytes": float_bytes,
                           "int8_bytes": int8_bytes})
    return {"layers": layers,
            "float32_bytes": sum(r["float32_bytes"] for r in layers),
            "int8_bytes": sum(r["int8_bytes"] for r in layers)}
