"""The public API: bytegraph.compile forms and errors, fullgraph, user exceptions,
wrapper metadata, and what importing bytegraph pulls in."""
import os
import traceback
import warnings

import pytest
import torch

import bytegraph
from helpers import CompileCounter, assert_same, check, line_of

THIS_FILE = os.path.basename(__file__)


def _plain(x):
    """Docstring of _plain."""
    return x.sin() * 2


# ------------------------------------------------------------------ forms


def test_bare_decorator():
    @bytegraph.compile
    def f(x):
        return x + 1

    x = torch.randn(3)
    assert_same(x + 1, f(x), "output")


def test_decorator_with_no_arguments_called():
    @bytegraph.compile()
    def f(x):
        return x * 3

    x = torch.randn(3)
    assert_same(x * 3, f(x), "output")


def test_decorator_with_keywords():
    cnt = CompileCounter()

    @bytegraph.compile(backend=cnt, fullgraph=True)
    def f(x):
        return x.cos()

    x = torch.randn(3)
    assert_same(x.cos(), f(x), "output")
    assert cnt.frame_count == 1


def test_function_call_form_with_backend_name():
    cf = bytegraph.compile(_plain, backend="eager")
    x = torch.randn(3)
    assert_same(_plain(x), cf(x), "output")


def test_compile_bound_method_and_callable_object():
    class Net:
        def __init__(self):
            self.w = torch.randn(3)

        def forward(self, x):
            return x * self.w

    net = Net()
    cnt = CompileCounter()
    cf = bytegraph.compile(net.forward, backend=cnt)
    x = torch.randn(3)
    assert_same(net.forward(x), cf(x), "bound method")
    assert cnt.frame_count == 1


def test_wrapper_metadata():
    cf = bytegraph.compile(_plain)
    assert cf.__name__ == "_plain"
    assert cf.__qualname__ == _plain.__qualname__
    assert cf.__doc__ == "Docstring of _plain."
    assert cf.__module__ == _plain.__module__
    assert cf.__wrapped__ is _plain


def test_wrapper_metadata_with_decorator_arguments():
    @bytegraph.compile(backend="eager")
    def my_function(x):
        """My doc."""
        return x

    assert my_function.__name__ == "my_function"
    assert my_function.__doc__ == "My doc."
    assert callable(my_function.__wrapped__) and my_function.__wrapped__.__name__ == "my_function"


# ------------------------------------------------------------------ argument errors


def test_unknown_backend_name_lists_valid_names():
    with pytest.raises(ValueError) as ei:
        bytegraph.compile(_plain, backend="not_a_backend")
    msg = str(ei.value)
    for name in ("eager", "aot_eager", "inductor"):
        assert name in msg, msg
    assert "not_a_backend" in msg, msg


def test_unknown_backend_name_in_decorator_form():
    with pytest.raises(ValueError):
        bytegraph.compile(backend="nope")


@pytest.mark.parametrize("backend", [3, object(), [print]], ids=["int", "object", "list_of_callable"])
def test_non_callable_backend_is_type_error(backend):
    with pytest.raises(TypeError):
        bytegraph.compile(_plain, backend=backend)


@pytest.mark.parametrize("fn", [3, "f", [1]], ids=["int", "str", "list"])
def test_non_callable_fn_is_type_error(fn):
    with pytest.raises(TypeError):
        bytegraph.compile(fn)


def test_dynamic_true_compiles_one_graph_for_every_size():
    counter = CompileCounter()
    cf = bytegraph.compile(_plain, backend=counter, dynamic=True)
    for n in (3, 3, 4, 7):
        x = torch.randn(n)
        assert_same(_plain(x), cf(x), "output")
    assert counter.frame_count == 1


def test_dynamic_must_be_none_or_bool():
    with pytest.raises(TypeError, match="dynamic must be None, True or False"):
        bytegraph.compile(_plain, dynamic="yes")


@pytest.mark.parametrize("dynamic", [None, False, True])
def test_dynamic_does_not_warn(dynamic):
    with warnings.catch_warnings(record=True) as w:
        warnings.simplefilter("always")
        cf = bytegraph.compile(_plain, dynamic=dynamic)
        cf(torch.randn(3))
    assert not [m for m in w if issubclass(m.category, UserWarning)], [str(m.message) for m in w]


def test_config_defaults():
    assert bytegraph.config.cache_size_limit == 8
    assert issubclass(bytegraph.Unsupported, Exception)


# ------------------------------------------------------------------ fullgraph / unsupported


def _item_in_control_flow(x):
    y = x * 2
    if y.sum().item() > 0:  # MARK_ITEM
        return y + 1
    return y - 1


def _prints(x):
    y = x + 1
    print("value:", y.shape)  # MARK_PRINT
    return y * 2


def _calls_printing_helper(x):
    return _prints(x) - 1


@pytest.mark.parametrize(
    "fn, marker",
    [
        (_item_in_control_flow, "# MARK_ITEM"),
        (_prints, "# MARK_PRINT"),
        (_calls_printing_helper, "# MARK_PRINT"),
    ],
    ids=["item_control_flow", "print", "print_in_inlined_helper"],
)
def test_fullgraph_unsupported_names_user_location(fn, marker):
    line = line_of(marker, __file__)
    cf = bytegraph.compile(fn, fullgraph=True)
    with pytest.raises(bytegraph.Unsupported) as ei:
        cf(torch.ones(3))
    e = ei.value
    assert THIS_FILE in str(e) and f":{line}" in str(e), str(e)
    assert isinstance(e.reason, str) and e.reason
    assert e.location.endswith(f"{THIS_FILE}:{line}"), e.location


@pytest.mark.parametrize("fn", [_item_in_control_flow, _prints, _calls_printing_helper],
                         ids=["item_control_flow", "print", "print_in_inlined_helper"])
@pytest.mark.parametrize("x", [torch.ones(3), -torch.ones(3)], ids=["pos", "neg"])
def test_unsupported_without_fullgraph_gives_eager_result(fn, x):
    check(fn, x)


def test_fullgraph_wrapper_not_fooled_by_lenient_wrapper_of_same_function():
    lenient = bytegraph.compile(_prints)
    strict = bytegraph.compile(_prints, fullgraph=True)
    lenient(torch.ones(2))
    with pytest.raises(bytegraph.Unsupported):
        strict(torch.ones(2))


def test_fullgraph_supported_function_compiles_once():
    cnt = CompileCounter()
    cf = bytegraph.compile(_plain, backend=cnt, fullgraph=True)
    x = torch.randn(3)
    assert_same(_plain(x), cf(x), "output")
    assert cnt.frame_count == 1


# ------------------------------------------------------------------ user exceptions


def _raises_value_error(x):
    y = x + 1
    if y.shape[0] == 3:
        raise ValueError("boom")
    return y


def _matmul_mismatch(x, y):
    z = x * 2
    return z @ y


def _raise_in_inlined(x):
    return _raises_value_error(x) * 2


@pytest.mark.parametrize("fullgraph", [False, True], ids=["graph_breaks_ok", "fullgraph"])
@pytest.mark.parametrize(
    "fn, args, exc_type",
    [
        (_raises_value_error, (torch.randn(3),), ValueError),
        (_matmul_mismatch, (torch.randn(2, 3), torch.randn(4, 5)), RuntimeError),
        (_raise_in_inlined, (torch.randn(3),), ValueError),
    ],
    ids=["raise", "matmul_shape_mismatch", "raise_in_inlined_callee"],
)
def test_user_exception_propagates(fn, args, exc_type, fullgraph):
    with pytest.raises(exc_type) as eager:
        fn(*args)
    cf = bytegraph.compile(fn, fullgraph=fullgraph)
    with pytest.raises(exc_type) as comp:
        cf(*args)
    assert type(comp.value) is type(eager.value)
    assert str(comp.value) == str(eager.value)
    names = [fr.name for fr in traceback.extract_tb(comp.value.__traceback__)]
    assert fn.__name__ in names, names
    files = [os.path.basename(fr.filename) for fr in traceback.extract_tb(comp.value.__traceback__)]
    assert THIS_FILE in files, files


def test_user_exception_then_normal_call_works():
    cnt = CompileCounter()
    cf = bytegraph.compile(_raises_value_error, backend=cnt)
    with pytest.raises(ValueError):
        cf(torch.randn(3))
    x = torch.randn(4)
    assert_same(_raises_value_error(x), cf(x), "size 4")


def test_user_exception_type_subclass_and_attributes():
    class MyError(KeyError):
        def __init__(self, msg, code):
            super().__init__(msg)
            self.code = code

    def f(x):
        raise MyError("custom", code=x.shape[0])

    cf = bytegraph.compile(f)
    with pytest.raises(MyError) as ei:
        cf(torch.randn(5))
    assert ei.value.code == 5 and ei.value.args == ("custom",)


# ------------------------------------------------------------------ import hygiene


def test_public_names():
    for name in ("compile", "reset", "Unsupported", "config"):
        assert hasattr(bytegraph, name), name


def test_fullgraph_unsupported_in_other_module_names_that_file():
    from support import other_module

    def f(x):
        return other_module.noisy(x + 1)

    line = line_of("# MARK_NOISY", other_module.__file__)
    cf = bytegraph.compile(f, fullgraph=True)
    with pytest.raises(bytegraph.Unsupported) as ei:
        cf(torch.ones(2))
    assert ei.value.location.endswith(f"other_module.py:{line}"), ei.value.location


def test_fullgraph_unsupported_raises_before_running_user_code():
    log = []

    def f(x):
        log.append("ran")
        print("unsupported")
        return x

    cf = bytegraph.compile(f, fullgraph=True)
    with pytest.raises(bytegraph.Unsupported):
        cf(torch.ones(2))
    assert log == [], log  # fullgraph: the failure is found while tracing, before anything runs


def test_unsupported_frame_runs_user_code_exactly_once():
    log = []

    def f(x):
        log.append("ran")
        print("unsupported")
        return x + 1

    cf = bytegraph.compile(f)
    cf(torch.ones(2))
    assert log == ["ran"], log
    cf(torch.ones(2))
    assert log == ["ran", "ran"], log
