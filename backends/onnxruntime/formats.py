"""The ONNX formats the installed onnxruntime loads: its newest IR version and opset.

onnx and onnxruntime are released apart, so the installed onnx may write newer models
than the installed onnxruntime reads (onnx 1.23 writes IR version 14, which onnxruntime
1.30 refuses: "max supported IR version: 13"). No onnxruntime call says what it reads,
and a table by version would miss every release after it, so `accepted` asks once: it
loads a one-node model stamped with each IR version, then each opset, newest first.
Models stamp the oldest IR version their opset allows (`helper.find_min_ir_version_for`).
"""

from __future__ import annotations

import functools
from typing import NamedTuple

import onnx
import onnxruntime as ort
from onnx import TensorProto, helper

import hal

OLDEST_OPSET = 17  # the oldest hal.onnx writes


class Accepted(NamedTuple):
    """The newest IR version and ai.onnx opset onnxruntime loads (within what onnx writes)."""

    ir_version: int
    opset: int


def identity_model(opset: int = OLDEST_OPSET, ir_version: int | None = None) -> bytes:
    """A one-node float32 Identity model at an opset, stamped with the oldest IR version
    that opset allows unless ir_version says another."""
    value = helper.make_tensor_value_info("x", TensorProto.FLOAT, [1])
    out = helper.make_tensor_value_info("y", TensorProto.FLOAT, [1])
    graph = helper.make_graph([helper.make_node("Identity", ["x"], ["y"])], "identity",
                              [value], [out])
    opsets = [helper.make_opsetid("", opset)]
    ir = helper.find_min_ir_version_for(opsets) if ir_version is None else ir_version
    return helper.make_model(graph, opset_imports=opsets, ir_version=ir).SerializeToString()


def _loads(model: bytes) -> bool:
    try:
        ort.InferenceSession(model, providers=["CPUExecutionProvider"])
    except Exception:  # Fail / InvalidGraph: "Unsupported model IR version", unknown opset
        return False
    return True


@functools.cache
def accepted() -> Accepted:
    """What the installed onnxruntime loads, found once per process."""
    ir = next((v for v in range(onnx.IR_VERSION, 2, -1) if _loads(identity_model(ir_version=v))),
              None)
    opset = next((v for v in range(onnx.defs.onnx_opset_version(), OLDEST_OPSET - 1, -1)
                  if _loads(identity_model(v))), None)
    if ir is None or opset is None:
        raise hal.BackendUnavailable(f"onnxruntime {ort.__version__} loads no model that onnx "
                           f"{onnx.__version__} writes at opset {OLDEST_OPSET} or later; "
                           "install matching onnx and onnxruntime releases")
    return Accepted(ir, opset)
