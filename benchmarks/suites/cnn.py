"""CNN suite: ResNet-50 inference (random weights) per backend against ONNX Runtime and torch,
and a small CNN trained on scikit-learn's digits, in FP32 and INT8, with its accuracy.

- `resnet50[fp32]` per backend: `frontends.nn.resnet.ResNet` (ResNet-50's shape:
  bottlenecks 3-4-6-3, 25.6M parameters) with **random weights** drawn from seed 0 (not
  trained: the logits mean nothing, the check is against a numpy float64 forward of the
  same weights), batch norm in eval mode, the forward through `hal.jit`. Items are images,
  so `items_per_s` is images/s. Sizes (`SIZES`, in each row's params): batch 1 at 224x224
  (MLPerf's single-stream: one query per call, latency percentiles) on cpu, onnxruntime,
  tvm and cuda (a call took 9-34 s on opencl with PoCL); batch 32 at 112x112 (offline; a
  224x224 batch of 32 took 2.6-2.8 s a call on the cpu backend, 1.0 s at 112x112, and a
  measurement is a dozen calls) on cpu, onnxruntime and cuda; batch 256 at 224x224 on
  cuda only (times measured 2026-12-06 on 2 cores shared with other work, HAL_THREADS=2,
  load average 4 to 7.5). Elsewhere a row is skipped with that reason. `--quick` runs (the
  main job's) leave the batch-32 rows out, saying so.
- `resnet50[ort]`: the peer, ONNX Runtime on the graph hal exports (`hal.onnx.export`,
  once per process and shape), on the device under test (`benchmarks.ort_peer`: its CPU
  provider on the host CPU).
- `resnet50[torch]`: torchvision's resnet50 with the same weights loaded (eval mode,
  under `torch.inference_mode`), on the device under test where torch runs there; skipped
  with how to install it where torch or torchvision is missing.

- `digits_cnn[fp32]`, `digits_cnn[int8]` on every backend: `frontends.nn.digits.DigitsCNN`
  trained once per process on the cpu backend (AdamW, `frontends.nn.digits.DEFAULT_CONFIG`,
  seeded; 4 s at load average 3.8) on 80% of scikit-learn's `load_digits`, then run on the
  device under test over the 359 held-out images in one batch (offline); INT8 is every
  layer in int8 with activations quantized per call (`quant_post_dynamic` for the Linear
  head, `quant_post_dynamic_conv` for the convolutions: im2col through quantized_linear).
  The check is the numpy FP32 forward of the trained weights; the quality records the
  top-1 `accuracy` on the held-out labels and, for INT8, `fp32_accuracy` (that of the
  numpy FP32 forward of the same weights) and `retention` (INT8 over FP32). Targets:
  FP32 top-1 >= 95%, retention >= 99% (`accuracy_target`, `top1_goal`, `retention_goal`
  in the params; the report's MLPerf-style section judges them).
"""

from __future__ import annotations

import functools
import tempfile
from pathlib import Path

import numpy as np

import hal
from benchmarks import ort_peer
from benchmarks.suites.int8 import ort_label
from benchmarks.workload import Case, NotMeasuredHere, Workload
from frontends.nn import digits, resnet
from frontends.quant import peers as quant_peers
from frontends.science import peers

WEIGHTS = "random (seed 0), not trained"
# (batch, image side, the backends that measure it)
SIZES = ((1, 224, ("cpu", "onnxruntime", "tvm", "cuda")),
         (32, 112, ("cpu", "onnxruntime", "cuda")), (256, 224, ("cuda",)))
WHY_NOT = {1: "it is timed where a call takes about a second (opencl with PoCL took 9-34 s "
               "a call here, a measurement a dozen calls)",
           32: "a batch of 32 takes seconds a call where the convolutions are not a "
               "vendor library's (a measurement is a dozen calls)",
           256: "a batch of 256 at 224x224 takes minutes a call on a CPU (a measurement "
                "is a dozen calls)"}
QUICK_LEAVES_OUT = {32: "the offline batch of 32 takes a minute a backend on a CPU"}
INPUT_NAME, OUTPUT_NAME = "images", "logits"


@functools.cache
def resnet_model(device: hal.Device) -> resnet.ResNet:
    """ResNet-50 with random weights (seed 0) in eval mode on `device`."""
    return resnet.ResNet(resnet.RESNET50, seed=0).eval().to(device)


@functools.cache
def resnet_forward(device: hal.Device):
    """ResNet-50's forward on `device` through hal.jit."""
    model = resnet_model(device)
    return hal.jit(lambda x: model(x))


def _images(batch: int, side: int):
    def build(dtype) -> Case:
        rng = np.random.default_rng(batch)
        return Case([rng.standard_normal((batch, 3, side, side)).astype(np.float32)],
                    items=batch)

    return build


def resnet_reference(images) -> np.ndarray:
    """ResNet-50's logits in numpy float64 (kept per input: hal and its peers share them)."""
    images = np.asarray(images, np.float32)
    return _reference(images.tobytes(), images.shape)


@functools.lru_cache(maxsize=2)
def _reference(data: bytes, shape: tuple[int, ...]) -> np.ndarray:
    images = np.frombuffer(data, np.float32).reshape(shape)
    out = resnet.reference_forward(resnet_model(hal.device("cpu")), images)
    out.flags.writeable = False
    return out


def _only_on(backends, batch: int, device: hal.Device) -> None:
    if device.backend.name not in backends:
        raise NotMeasuredHere(f"resnet50 batch {batch} is measured on {', '.join(backends)} "
                              f"only, not {device.backend.name}: {WHY_NOT[batch]}")


def _hal_resnet(batch: int, backends):
    def run(x: hal.Tensor) -> hal.Tensor:
        _only_on(backends, batch, x.device)
        return resnet_forward(x.device)(x)

    return run


@functools.cache
def ort_resnet(shape: tuple[int, ...], provider: str):
    """An ONNX Runtime session of hal's exported ResNet-50 for images of `shape`."""
    cpu = hal.device("cpu")
    example = hal.asarray(np.zeros(shape, np.float32), device=cpu)
    model = resnet_model(cpu)
    with tempfile.TemporaryDirectory(prefix="hal-cnn-") as directory:
        path = Path(directory) / "resnet50.onnx"
        hal.onnx.export(lambda x: model(x), example, path=path, input_names=[INPUT_NAME],
                        output_names=[OUTPUT_NAME])
        return quant_peers.ort_session(path, provider=provider)


def _ort_resnet(batch: int, backends):
    def run(x: hal.Tensor) -> hal.Tensor:
        _only_on(backends, batch, x.device)
        session = ort_resnet(tuple(x.shape), ort_peer.provider(x.device))
        return hal.asarray(session.run(None, {INPUT_NAME: x.numpy()})[0])

    return run


# -- torch: torchvision's resnet50 with hal's weights ------------------------------------------
_TORCH_PARTS = {"reduce": ("conv1", "bn1"), "spatial": ("conv2", "bn2"),
                "expand": ("conv3", "bn3"), "shortcut": ("downsample.0", "downsample.1")}


def torch_state(model: resnet.ResNet) -> dict[str, np.ndarray]:
    """hal's ResNet-50 weights under torchvision's resnet50 names (fc's weight transposed:
    torch keeps (out, in))."""
    state = {}
    for name, tensor in model.state_dict().items():
        parts = name.split(".")
        if parts[0] == "stem":
            key = ("conv1" if parts[1] == "conv" else "bn1") + "." + parts[2]
        elif parts[0] == "stages":
            conv, bn = _TORCH_PARTS[parts[3]]
            key = (f"layer{int(parts[1]) + 1}.{parts[2]}."
                   f"{conv if parts[4] == 'conv' else bn}.{parts[5]}")
        else:
            key = name
        value = tensor.numpy()
        state[key] = value.T.copy() if key == "fc.weight" else value
    return state


@functools.cache
def torch_resnet(device_name: str):
    """(torch module, torch device): torchvision's resnet50 with hal's weights, eval mode."""
    try:
        import torch
        import torchvision
    except ImportError as exc:
        raise peers.PeerUnavailable(f"peer torch/torchvision is not importable ({exc}); pip "
                                    "install torch torchvision (on a GPU, a CUDA build)") from None
    target = torch.device(device_name)
    module = torchvision.models.resnet50(weights=None)
    state = {k: torch.from_numpy(np.ascontiguousarray(v))
             for k, v in torch_state(resnet_model(hal.device("cpu"))).items()}
    missing, unexpected = module.load_state_dict(state, strict=False)
    if unexpected or any(not k.endswith("num_batches_tracked") for k in missing):
        raise hal.HalError(f"torch resnet50: weights do not match torchvision's (missing "
                           f"{missing[:4]}, unexpected {unexpected[:4]})")
    return module.eval().to(target), target


def _torch_resnet(batch: int, backends):
    def run(x: hal.Tensor) -> hal.Tensor:
        _only_on(backends, batch, x.device)
        kinds = peers.device_kinds(x.device)
        if "cpu" not in kinds and "cuda" not in kinds:
            raise peers.PeerNotHere(f"peer torch runs on cpu and cuda devices here; "
                                    f"{x.device.name} is {' and '.join(kinds)}")
        module, target = torch_resnet("cpu" if "cpu" in kinds else "cuda")
        import torch

        with torch.inference_mode():
            out = module(torch.from_numpy(x.numpy()).to(target))
        return hal.asarray(out.cpu().numpy())

    return run


def resnet_workloads() -> list[Workload]:
    """ResNet-50 at each size in hal, ONNX Runtime and torch."""
    out = []
    for batch, side, backends in SIZES:
        params = {"model": "ResNet-50", "weights": WEIGHTS, "batch": batch,
                  "image": f"3x{side}x{side}", "precision": "fp32",
                  "backends": ", ".join(backends)}
        for name, run, extra in (
                ("resnet50[fp32]", _hal_resnet, {}),
                ("resnet50[ort]", _ort_resnet, {"peer": ort_label()}),
                ("resnet50[torch]", _torch_resnet, {"peer": "torch (torchvision resnet50)"})):
            out.append(Workload(name, {**params, **extra},
                                ("float32",), _images(batch, side), run(batch, backends),
                                resnet_reference, tolerance_scale=10.0,
                                quality=_cosine_quality, single_stream=batch == 1,
                                full_only=QUICK_LEAVES_OUT.get(batch)))
    return out


def _cosine_quality(out: np.ndarray, expected: np.ndarray) -> dict[str, float]:
    a, b = np.asarray(out, np.float64), np.asarray(expected, np.float64)
    cos = np.sum(a * b, axis=-1) / (np.linalg.norm(a, axis=-1) * np.linalg.norm(b, axis=-1))
    return {"cosine_min": float(cos.min())}


# -- the digits CNN: accuracy FP32 and INT8 -----------------------------------------------------
DIGITS_TARGET = (f"top-1 >= {digits.ACCURACY_TARGET:.0%}; INT8 >= "
                 f"{digits.RETENTION_TARGET:.0%} of FP32")


@functools.cache
def trained_digits():
    """The DigitsCNN trained on the cpu backend (once per process)."""
    return digits.train(device="cpu").model


@functools.cache
def digits_model(device: hal.Device, precision: str):
    """The trained DigitsCNN on `device` in eval mode, FP32 or INT8, its forward jitted."""
    model = trained_digits().copy().to(device).eval()
    chosen = digits.quantized(model) if precision == "int8" else model
    return hal.jit(lambda x: chosen(x))


def _digits_case(dtype) -> Case:
    images, _ = digits.test_split()
    return Case([images], items=len(images))


def digits_reference(images) -> np.ndarray:
    """The trained model's FP32 logits in numpy float64."""
    return digits.reference_logits(trained_digits(), np.asarray(images))


def _digits_run(precision: str):
    def run(x: hal.Tensor) -> hal.Tensor:
        return digits_model(x.device, precision)(x)

    return run


def _top1(out: np.ndarray) -> float:
    return float(np.mean(np.argmax(out, axis=-1) == digits.test_split()[1]))


def _digits_quality(precision: str):
    def quality(out: np.ndarray, expected: np.ndarray) -> dict[str, float]:
        found = {"accuracy": _top1(out), "reference_accuracy": _top1(expected)}
        if precision == "int8":
            found["fp32_accuracy"] = found["reference_accuracy"]
            found["retention"] = found["accuracy"] / found["fp32_accuracy"]
        return found

    return quality


def digits_workloads() -> list[Workload]:
    """The trained digits CNN over the held-out images, FP32 and INT8, on every backend."""
    images, _ = digits.test_split()
    params = {"model": "digits CNN", "dataset": "scikit-learn load_digits (8x8)",
              "batch": len(images), "accuracy_target": DIGITS_TARGET,
              "top1_goal": digits.ACCURACY_TARGET, "retention_goal": digits.RETENTION_TARGET,
              "train": ", ".join(f"{k}={v}" for k, v in digits.DEFAULT_CONFIG.items())}
    # INT8 logits differ from FP32 by quantization (~1% of their range)
    return [Workload(f"digits_cnn[{p}]", {**params, "precision": p}, ("float32",),
                     _digits_case, _digits_run(p), digits_reference,
                     tolerance_scale=1.0 if p == "fp32" else 500.0,
                     quality=_digits_quality(p)) for p in ("fp32", "int8")]


def workloads() -> list[Workload]:
    """ResNet-50 per size and runtime, then the digits CNN in FP32 and INT8."""
    return resnet_workloads() + digits_workloads()
