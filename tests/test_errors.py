"""Errors raised by user code while it runs compiled: same type, same message, same
side effects as eager (helpers.check compares all three)."""
import pytest
import torch

import bytegraph
from helpers import assert_same, check

ERRORS = {
    "name_error": lambda x: x + _THIS_GLOBAL_DOES_NOT_EXIST,  # noqa: F821
    "attribute_error_tensor": lambda x: x.no_such_attribute,
    "attribute_error_module": lambda x: torch.no_such_function(x),
    "torch_arg_type_error": lambda x: torch.add(x, "a"),
    "torch_missing_arg": lambda x: torch.matmul(x),
    "method_bad_dim": lambda x: x.sum(dim=5),
    "view_incompatible": lambda x: x.view(7),
    "index_out_of_range": lambda x: x[100],
    "cat_mismatch": lambda x: torch.cat([x, torch.zeros(3, 3)], dim=1),
    "broadcast_mismatch": lambda x: x + torch.ones(5),
    "int_tensor_div_zero": lambda x: (x * 10).long() // torch.zeros(2, dtype=torch.long),
    "tuple_item_assignment": lambda x: (x, 1).__setitem__(0, 2),
    "call_non_callable": lambda x: x.shape[0](x),
    "len_of_int": lambda x: len(x.shape[0]),
    "unhashable_key": lambda x: {[1]: x},
    "str_plus_int": lambda x: "a" + x.shape[0],
}


@pytest.mark.parametrize("name", list(ERRORS))
def test_error_matches_eager(name):
    check(ERRORS[name], torch.randn(2, 2))


def test_unbound_local():
    def f(x, flag):
        if flag:
            y = x * 2
        return y + 1

    check(f, torch.randn(2), False)


def test_error_in_inlined_function_from_other_module():
    from support import other_module

    def f(x):
        return other_module.affine(x, scale="bad")

    check(f, torch.randn(2))


def test_name_error_then_global_defined():
    def f(x):
        return x * _LATE_DEFINED_GLOBAL  # noqa: F821

    cf = bytegraph.compile(f)
    x = torch.randn(2)
    with pytest.raises(NameError) as e:
        cf(x)
    assert "_LATE_DEFINED_GLOBAL" in str(e.value)
    globals()["_LATE_DEFINED_GLOBAL"] = 3
    try:
        assert_same(f(x), cf(x), "after the global was defined")
    finally:
        del globals()["_LATE_DEFINED_GLOBAL"]
    with pytest.raises(NameError):
        cf(x)


def test_assertion_error_message():
    def f(x, n):
        y = x.sum(0)
        assert y.shape[0] == n, f"want {n}, got {y.shape[0]}"
        return y

    check(f, torch.randn(3, 4), 3)


def test_exception_class_and_args_preserved():
    class Custom(Exception):
        pass

    def f(x):
        raise Custom(x.shape[0], "second arg")

    cf = bytegraph.compile(f)
    with pytest.raises(Custom) as e:
        cf(torch.randn(4))
    assert e.value.args == (4, "second arg")


def test_stop_iteration_from_next_without_default():
    def f(x):
        it = iter([x])
        a = next(it)
        return next(it) + a

    check(f, torch.randn(2))


def test_error_then_success_with_other_shape():
    def f(x):
        return x.view(2, 3) * 2

    cf = bytegraph.compile(f)
    with pytest.raises(RuntimeError) as ce:
        cf(torch.randn(5))
    with pytest.raises(RuntimeError) as ee:
        f(torch.randn(5))
    assert str(ce.value) == str(ee.value)
    x = torch.randn(6)
    assert_same(f(x), cf(x), "valid shape after an error")


def test_shape_error_logs_nothing_from_torch_fake_tensors():
    import io
    import logging

    log = logging.getLogger("torch._subclasses.fake_tensor")
    handler = logging.StreamHandler(out := io.StringIO())
    log.addHandler(handler)
    try:
        with pytest.raises(RuntimeError):
            bytegraph.compile(lambda x, y: x @ y)(torch.randn(2, 3), torch.randn(4, 5))
    finally:
        log.removeHandler(handler)
    assert out.getvalue() == ""  # the eager run raises the user's error; no internal traceback
    assert log.level == logging.NOTSET and not log.disabled  # quieted only while a capture runs
