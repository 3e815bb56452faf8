"""The dispatch stack: interpreters, tracing, kernel output checks, operators from one table."""

from __future__ import annotations

import ast
import inspect
import threading

import numpy as np
import pytest

import hal
from hal import dispatch
from hal.compile.trace import Tracer, trace


class Counting(dispatch.Interpreter):
    """Counts the ops and composites it sees, then hands each op on."""

    def __init__(self, log):
        self.log = log

    def process(self, spec, device, args, params, out):
        self.log.append(("op", spec.name, out))
        return self.below.process(spec, device, args, params, out)

    def enter(self, spec, args, params):
        self.log.append(("enter", spec.name))


def test_innermost_interpreter_sees_each_op_with_its_computed_result_shape(cpu):
    x = hal.asarray(np.ones((2, 3)), device=cpu)
    log = []
    with dispatch.interpret(Counting(log)):
        y = hal.sum(x * 2, axis=1)
    np.testing.assert_array_equal(y.numpy(), [6.0, 6.0])
    assert log == [("op", "multiply", ((2, 3), np.dtype("float64"))),
                   ("op", "sum", ((2,), np.dtype("float64")))]
    assert dispatch.interpreters() is dispatch.ALONE


def test_the_stack_is_alone_again_whichever_block_exits_first(cpu):
    """Blocks left out of order still leave the very ALONE tuple (hal.jit's hot path asks
    `interpreters() is ALONE`)."""
    outer, inner = dispatch.interpret(Counting([])), dispatch.interpret(Counting([]))
    first, second = outer.__enter__(), inner.__enter__()
    assert dispatch.interpreters() == (dispatch.EAGER, first, second)
    outer.__exit__(None, None, None)
    assert dispatch.interpreters() == (dispatch.EAGER, second)
    inner.__exit__(None, None, None)
    assert dispatch.interpreters() is dispatch.ALONE


def test_each_thread_has_its_own_interpreter_stack(cpu):
    """A trace in one thread records none of the ops another thread runs meanwhile."""
    x = hal.asarray(np.ones(3), device=cpu)
    started, traced = threading.Event(), threading.Event()
    log, results = [], []

    def other_thread():
        started.wait(10)
        assert dispatch.interpreters() == (dispatch.EAGER,)
        results.append((x * 2).numpy())  # runs eagerly, though the main thread traces
        traced.set()

    worker = threading.Thread(target=other_thread)
    worker.start()
    with dispatch.interpret(Counting(log)):
        started.set()
        assert traced.wait(10)
        hal.exp(x)
    worker.join(10)
    np.testing.assert_array_equal(results[0], [2.0, 2.0, 2.0])
    assert [entry[1] for entry in log] == ["exp"]


def test_composites_announce_their_decomposition_outermost_first(null):
    hal.settings.fallback = "allow"
    x = hal.asarray(np.array([1.0, 2.0]), device=null)
    outer, inner = [], []
    with dispatch.interpret(Counting(outer)), dispatch.interpret(Counting(inner)):
        hal.nn.softmax(x)
    assert outer[:2] == [("op", "softmax", ((2,), np.dtype("float64"))), ("enter", "softmax")]
    assert [e for e in inner if e[0] == "enter"] == [("enter", "softmax")]
    assert ("op", "exp", ((2,), np.dtype("float64"))) in inner


def test_observers_nest_outer_first_and_see_how_each_op_ran(null):
    hal.settings.fallback = "allow"
    seen = []
    x = hal.asarray(np.array([1.0, 2.0]), device=null)
    with hal.observe(lambda s, a, p, o, how: seen.append(("outer", s.name, how))), \
            hal.observe(lambda s, a, p, o, how: seen.append(("inner", s.name, how))):
        hal.nn.softmax(x)
    assert seen[-2:] == [("outer", "softmax", "decomposed"), ("inner", "softmax", "decomposed")]
    assert ("outer", "exp", "fallback") in seen


def test_trace_records_ops_and_answers_with_tracers(cpu):
    x = hal.asarray(np.ones((2, 2), np.float32), device=cpu)
    recorder, out = trace(lambda a: hal.nn.softmax(a * 2.0, axis=-1).sum(axis=0), x)
    assert isinstance(out, Tracer) and out.shape == (2,) and out.dtype == hal.float32
    assert [n.op for n in recorder.nodes] == ["multiply", "softmax", "sum"]  # composite whole
    assert recorder.nodes[0].inputs == (("input", 0), ("const", 0))
    assert recorder.constants[0].numpy() == np.float32(2.0)
    assert recorder.nodes[2].params == {"axis": 0, "keepdims": False}


def test_traced_values_refuse_data_dependent_python(cpu):
    x = hal.asarray(np.ones(3), device=cpu)
    with pytest.raises(hal.HalError, match=r"made by op 'greater'.*hal.where"):
        trace(lambda a: a if hal.sum(a) > 0 else -a, x)
    with pytest.raises(hal.HalError, match="no data while the function is traced"):
        trace(lambda a: a.numpy(), x)


def test_tracers_and_observers_compose(cpu):
    seen = []
    x = hal.asarray(np.ones(3), device=cpu)

    def f(a):
        with hal.observe(lambda s, args, p, o, how: seen.append((s.name, how, type(o)))):
            return hal.exp(a)

    trace(f, x)
    assert seen == [("exp", "traced", Tracer)]


# -- kernels' results are checked, their errors named -------------------------------------------
def _fake_backend(name, register):
    table = hal.KernelTable(name)
    register(table)

    class Device(hal.Device):
        def upload(self, array):
            return np.array(array)

        def download(self, native):
            return np.asarray(native)

    class Backend(hal.Backend):
        kernels = table

        def _open_device(self, index):
            return Device(self, index)

    Backend.name = name
    return Backend().open(0)


def test_a_kernel_of_the_wrong_shape_or_dtype_is_a_kernel_error():
    def register(table):
        table.register("exp", [hal.float64], device_arg=False)(lambda x: np.exp(x)[:1])
        table.register("sqrt", [hal.float64], device_arg=False)(
            lambda x: np.sqrt(x).astype(np.float32))

    device = _fake_backend("wrongshape", register)
    x = hal.asarray(np.ones(3), device=device)
    with pytest.raises(hal.KernelError, match=r"exp on wrongshape:0 \(wrongshape backend\) for "
                       r"float64\(3,\).*returned float64\(1,\).*float64\(3,\)"):
        hal.exp(x)
    with pytest.raises(hal.KernelError, match=r"returned float32\(3,\).*float64\(3,\)"):
        hal.sqrt(x)


def test_a_kernels_own_exception_is_wrapped_with_backend_op_dtypes_and_shapes():
    def broken(x, y):
        raise ValueError("operands could not be broadcast")

    device = _fake_backend("raising", lambda t: t.register("add", [hal.int32],
                                                             device_arg=False)(broken))
    x = hal.asarray(np.ones((2, 3), np.int32), device=device)
    with pytest.raises(hal.KernelError) as info:
        hal.add(x, x)
    text = str(info.value)
    assert "add on raising:0 (raising backend) for int32(2, 3), int32(2, 3)" in text
    assert "ValueError: operands could not be broadcast" in text
    assert isinstance(info.value.__cause__, ValueError)


def test_a_kernel_declaring_out_shape_and_out_dtype_receives_them():
    got = []

    def add(device, a, b, *, out_shape, out_dtype):
        got.append((out_shape, out_dtype))
        out = np.empty(out_shape, out_dtype)
        np.add(a, b, out=out)
        return out

    device = _fake_backend("withmeta", lambda t: t.register("add", [hal.float32])(add))
    a = hal.asarray(np.ones((2, 1), np.float32), device=device)
    b = hal.asarray(np.ones(3, np.float32), device=device)
    np.testing.assert_array_equal(hal.add(a, b).numpy(), np.full((2, 3), 2, np.float32))
    assert got == [((2, 3), np.dtype("float32"))]


# -- bad input is a HalError ------------------------------------------------------------------
@pytest.mark.parametrize(("call", "match"), [
    (lambda x: hal.exp(None), "exp: operand 0 is None"),
    (lambda x: hal.exp("1.0"), "exp: operand 0 is a str"),
    (lambda x: hal.add(x, [1, 2]), "add: operand 1 is a list"),
    (lambda x: hal.op("exp", x, foo=1), r"exp: bad arguments \(got an unexpected keyword "
                                        r"argument 'foo'\); it takes exp\(x\)"),
    (lambda x: hal.op("sum", x, 0), r"sum: bad arguments \(takes 1 positional argument but 2 "
                                    r"were given\); it takes sum\(x, \*, axis=None"),
    (lambda x: hal.concat([]), r"concat: needs at least 1 operand\(s\), got 0"),
    (lambda x: hal.reshape(x, (3,) + (1,) * 32), "33 axes exceed hal's limit of 32"),
    (lambda x: hal.asarray(np.zeros((1,) * 33)), "tensor: 33 axes exceed hal's limit of 32"),
    (lambda x: hal.nn.layer_norm(x, eps=None), "layer_norm: eps must be a positive number"),
])
def test_bad_input_is_a_clear_hal_error(cpu, call, match):
    x = hal.asarray(np.ones(3), device=cpu)
    with pytest.raises(hal.HalError, match=match):
        call(x)


def test_a_python_bool_condition_selects_like_numpy(cpu):
    x, y = hal.asarray([1.0, 2.0], device=cpu), hal.asarray([3.0, 4.0], device=cpu)
    np.testing.assert_array_equal(hal.where(True, x, y).numpy(), [1.0, 2.0])
    np.testing.assert_array_equal(hal.where(False, x, 0.5).numpy(), [0.5, 0.5])
    with pytest.raises(hal.UnsupportedDType, match="where: condition dtype int64"):
        hal.where(1, x, y)


def test_optional_operands_may_be_none(cpu):
    x = hal.asarray(np.ones((2, 3)), device=cpu)
    w = hal.asarray(np.ones((3, 4)), device=cpu)
    np.testing.assert_array_equal(hal.nn.linear(x, w, None).numpy(), np.full((2, 4), 3.0))


# -- Tensor's operators come from one table ------------------------------------------------------
def test_tensor_module_imports_no_functions_and_operators_come_from_the_table():
    tree = ast.parse(inspect.getsource(hal.tensor))
    imported = {a.name for n in ast.walk(tree) if isinstance(n, ast.ImportFrom)
                for a in n.names} | {n.module for n in ast.walk(tree)
                                      if isinstance(n, ast.ImportFrom) and n.module}
    assert "functions" not in imported and "dispatch" not in imported
    for name, fn in hal.functions.METHODS.items():
        assert getattr(hal.Tensor, name) is fn
    x = hal.asarray([1.0, 2.0])
    np.testing.assert_array_equal((2 ** x - x / 2).numpy(), [1.5, 3.0])
