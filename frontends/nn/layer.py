"""Layer: a model part holding parameters (hal Tensors) and sub-layers, as PyTorch's Module.

Assigning a Tensor to an attribute makes it a parameter, assigning a Layer makes it a
sub-layer; `register_buffer` keeps a tensor that is state but not trained. Tensors are
immutable, so training does not write into parameters: a step computes new tensors and
`update` puts them in place. `call_with(params, ...)` runs the forward pass with other
tensors in place of the parameters (PyTorch's `functional_call`), which is how gradients
are taken (`ag.grad`) and how a whole training step becomes one `hal.jit` graph with the
parameters as inputs rather than baked-in constants.

    model = Linear(4, 2)
    params = model.trainable()                        # {"weight": ..., "bias": ...}
    loss = lambda p, x: hal.sum(model.call_with(p, x) ** 2)
    grads = ag.grad(loss)(params, x)
    model.update(optimizer.step(params, grads))
    model.save("m.safetensors"); model.load("m.safetensors")
"""

from __future__ import annotations

import contextlib
import copy
from collections.abc import Iterator, Mapping
from pathlib import Path

import numpy as np

import hal
from hal import HalError, Tensor


class Layer:
    """Base class of every layer: parameters, buffers and sub-layers found by attribute."""

    def __init__(self) -> None:
        object.__setattr__(self, "_params", {})
        object.__setattr__(self, "_buffers", {})
        object.__setattr__(self, "_layers", {})
        object.__setattr__(self, "_frozen", set())
        object.__setattr__(self, "training", True)

    # -- registration -------------------------------------------------------------------
    def __setattr__(self, name: str, value) -> None:
        if "_params" not in self.__dict__:
            raise HalError(f"{type(self).__name__}: call Layer.__init__ before assigning "
                           f"attribute {name!r}")
        if isinstance(value, Tensor):  # a buffer stays a buffer (BatchNorm's statistics)
            target = self._buffers if name in self._buffers else self._params
        else:
            target = self._layers if isinstance(value, Layer) else None
        for table in (self._params, self._buffers, self._layers):
            if table is not target:
                table.pop(name, None)
        if target is None:
            object.__setattr__(self, name, value)
        else:
            target[name] = value  # a replaced entry keeps its place (a Sequential's order)

    def __getattr__(self, name: str):
        for table in ("_params", "_buffers", "_layers"):
            found = self.__dict__.get(table, {})
            if name in found:
                return found[name]
        raise AttributeError(f"{type(self).__name__} has no attribute {name!r}")

    def register_buffer(self, name: str, value: Tensor) -> None:
        """Keep `value` as state that is saved and loaded but not trained."""
        self._params.pop(name, None)
        self._buffers[name] = value

    def freeze(self, *names: str) -> Layer:
        """Exclude the named parameters (dotted names, or prefixes of them) from `trainable()`."""
        known = dict(self.named_parameters())
        for name in names:
            if not any(n == name or n.startswith(name + ".") for n in known):
                raise HalError(f"{type(self).__name__}.freeze: no parameter {name!r}; "
                               f"it has {', '.join(known) or 'none'}")
            self._frozen.add(name)
        return self

    # -- reading ------------------------------------------------------------------------
    def named_layers(self, prefix: str = "") -> Iterator[tuple[str, Layer]]:
        """(dotted name, layer) for this layer ("" for itself) and every sub-layer, pre-order."""
        yield prefix, self
        for name, layer in self._layers.items():
            yield from layer.named_layers(f"{prefix}.{name}" if prefix else name)

    def named_parameters(self) -> Iterator[tuple[str, Tensor]]:
        """(dotted name, tensor) of every parameter, in registration order."""
        for path, layer in self.named_layers():
            for name, value in layer._params.items():
                yield (f"{path}.{name}" if path else name), value

    def parameters(self) -> dict[str, Tensor]:
        """Every parameter by dotted name."""
        return dict(self.named_parameters())

    def trainable(self) -> dict[str, Tensor]:
        """The parameters an optimizer updates: all but the frozen ones."""
        frozen = self._frozen
        return {n: t for n, t in self.named_parameters()
                if not any(n == f or n.startswith(f + ".") for f in frozen)}

    def state_dict(self) -> dict[str, Tensor]:
        """Parameters and buffers by dotted name: what `save` writes."""
        state = {}
        for path, layer in self.named_layers():
            for name, value in (*layer._params.items(), *layer._buffers.items()):
                state[f"{path}.{name}" if path else name] = value
        return state

    # -- writing ------------------------------------------------------------------------
    def _owner(self, dotted: str) -> tuple[Layer, str]:
        *path, leaf = dotted.split(".")
        layer = self
        for part in path:
            layer = layer._layers.get(part)
            if layer is None:
                break
        if layer is None or (leaf not in layer._params and leaf not in layer._buffers):
            raise HalError(f"{type(self).__name__}: no parameter or buffer {dotted!r}")
        return layer, leaf

    def update(self, tensors: Mapping[str, Tensor]) -> None:
        """Put new tensors in place of the named parameters/buffers (same shape and dtype)."""
        for name, value in tensors.items():
            layer, leaf = self._owner(name)
            table = layer._params if leaf in layer._params else layer._buffers
            old = table[leaf]
            if not isinstance(value, Tensor):
                raise HalError(f"{type(self).__name__}.update: {name!r} got "
                               f"{type(value).__name__}, not a hal Tensor")
            if value.shape != old.shape or value.dtype != old.dtype:
                raise HalError(
                    f"{type(self).__name__}: parameter {name!r} is {old.dtype.name}"
                    f"{tuple(old.shape)}; got {value.dtype.name}{tuple(value.shape)}")
            table[leaf] = value

    def load_state_dict(self, state: Mapping[str, Tensor | np.ndarray], strict: bool = True,
                        ) -> None:
        """Load tensors by dotted name, cast to each parameter's dtype on its device.

        A shape mismatch names the parameter; with `strict`, missing and unexpected names
        are an error listing them.
        """
        own = self.state_dict()
        if strict:
            missing = [n for n in own if n not in state]
            extra = [n for n in state if n not in own]
            if missing or extra:
                raise HalError(
                    f"{type(self).__name__}.load_state_dict: "
                    + "; ".join(f"{what}: {', '.join(names[:8])}"
                                + (f" (+{len(names) - 8} more)" if len(names) > 8 else "")
                                for what, names in (("missing", missing), ("unexpected", extra))
                                if names)
                    + "; pass strict=False to load a subset")
        new = {}
        for name, value in state.items():
            if name not in own:
                continue
            old = own[name]
            array = value.numpy() if isinstance(value, Tensor) else np.asarray(value)
            if tuple(array.shape) != tuple(old.shape):
                raise HalError(f"{type(self).__name__}.load_state_dict: parameter {name!r} "
                               f"has shape {tuple(old.shape)}, the file/state has "
                               f"{tuple(array.shape)}")
            new[name] = Tensor.from_host(np.array(array, dtype=old.dtype, order="C"),
                                         old.device)
        self.update(new)

    def save(self, path: str | Path) -> None:
        """Write the state dict as a safetensors file."""
        from safetensors.numpy import save_file

        state = self.state_dict()
        save_file({n: np.require(t.numpy(), requirements="C") for n, t in state.items()},
                  str(path))

    def load(self, path: str | Path, strict: bool = True) -> Layer:
        """Read a safetensors file written by `save` (or any with matching names)."""
        from safetensors.numpy import load_file

        path = Path(path)
        if not path.is_file():
            raise HalError(f"{type(self).__name__}.load: no file {path}")
        self.load_state_dict(load_file(str(path)), strict=strict)
        return self

    def copy(self) -> Layer:
        """A new layer tree of the same structure sharing the (immutable) tensors: replacing a
        sub-layer or updating a parameter of the copy leaves this one unchanged."""
        new = copy.copy(self)
        for table in ("_params", "_buffers", "_frozen"):
            object.__setattr__(new, table, copy.copy(self.__dict__[table]))
        object.__setattr__(new, "_layers", {n: l.copy() for n, l in self._layers.items()})
        return new

    def to(self, device) -> Layer:
        """Move every parameter and buffer to `device` (in place); returns self."""
        device = hal.device(device)
        for _, layer in self.named_layers():
            for table in (layer._params, layer._buffers):
                for name, value in table.items():
                    table[name] = value.to(device)
        return self

    def cast(self, dtype) -> Layer:
        """Cast every floating parameter and buffer to `dtype` (in place); integer ones
        stay. Returns self."""
        for _, layer in self.named_layers():
            for table in (layer._params, layer._buffers):
                for name, value in table.items():
                    if hal.isdtype(value.dtype, "real floating"):
                        table[name] = hal.astype(value, dtype)
        return self

    def train(self, mode: bool = True) -> Layer:
        """Set training mode (dropout active) on this layer and its sub-layers."""
        for _, layer in self.named_layers():
            object.__setattr__(layer, "training", mode)
        return self

    def eval(self) -> Layer:
        """Set inference mode (dropout off)."""
        return self.train(False)

    # -- running ------------------------------------------------------------------------
    def forward(self, *args, **kwargs):
        """The layer's computation; subclasses define it."""
        raise NotImplementedError(f"{type(self).__name__} defines no forward")

    def __call__(self, *args, **kwargs):
        return self.forward(*args, **kwargs)

    def call_with(self, params: Mapping[str, Tensor], *args, **kwargs):
        """forward(*args, **kwargs) with `params` (dotted names) in place of those parameters.

        The layer is unchanged afterwards. Used to differentiate with respect to the
        parameters and to trace them as graph inputs.
        """
        with self._swapped(params):
            return self.forward(*args, **kwargs)

    @contextlib.contextmanager
    def _swapped(self, params: Mapping[str, Tensor]):
        saved = []
        try:
            for name, value in params.items():
                layer, leaf = self._owner(name)
                table = layer._params if leaf in layer._params else layer._buffers
                saved.append((table, leaf, table[leaf]))
                table[leaf] = value
            yield
        finally:
            for table, leaf, value in reversed(saved):
                table[leaf] = value

    def __repr__(self) -> str:
        own = ", ".join(f"{n}={t.dtype.name}{tuple(t.shape)}" for n, t in self._params.items())
        subs = "".join(f"\n  ({n}): " + repr(l).replace("\n", "\n  ")
                       for n, l in self._layers.items())
        return f"{type(self).__name__}({own}){subs}"
