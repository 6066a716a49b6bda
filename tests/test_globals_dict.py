"""A module's globals read and written as a dict (`globals()`, `vars(module)`, `module.__dict__`)
and by name in the same function: one view, guarded by the presence of each key read, replayed
once. Each program runs three calls from fresh state eagerly, then three compiled, and every
result and the module's state after each call must agree (a global the first call creates
steers the second)."""
import sys

import pytest
import torch

import bytegraph
from tests.helpers import compile_counted

_MOD = sys.modules[__name__]
_NAMES = ("NEWG", "COUNT", "TEMP")


def _fresh():
    for name in _NAMES:
        globals().pop(name, None)


def _state():
    """The module's globals of `_NAMES`, in the dict's own order (visible to `list(globals())`)."""
    return [(name, value) for name, value in globals().items() if name in _NAMES]


def _three_calls(fn, graphs=None, fullgraph=False):
    runs = []
    compiled, counter = compile_counted(fn, fullgraph=fullgraph)
    for run in (fn, compiled):
        _fresh()
        results = []
        for _ in range(3):
            out = run(torch.zeros(2))
            results.append((out.tolist(), _state()))
        runs.append(results)
    _fresh()
    assert runs[1] == runs[0]
    if graphs is not None:
        assert counter.frame_count == graphs
    return counter


def test_global_created_and_read_back_through_globals_get():
    def fn(x):
        global NEWG
        NEWG = globals().get("NEWG", 0) + 1
        return x + NEWG

    _three_calls(fn, fullgraph=True)


def test_write_through_the_dict_read_by_name():
    def fn(x):
        g = globals()
        g["NEWG"] = g.get("NEWG", 0) + 1
        return x + NEWG + ("NEWG" in g)

    _three_calls(fn, fullgraph=True)


def test_write_by_name_read_through_the_dict():
    def fn(x):
        global COUNT
        if "COUNT" not in globals():
            COUNT = 0
        COUNT += 1
        return x + globals()["COUNT"]

    _three_calls(fn, fullgraph=True)


def test_vars_of_the_module_and_its_dict():
    def fn(x):
        vars(_MOD)["NEWG"] = vars(_MOD).get("NEWG", 10) * 2
        _MOD.__dict__.setdefault("COUNT", 0)
        return x + _MOD.NEWG + _MOD.COUNT

    _three_calls(fn, fullgraph=True)


def test_pop_and_delete_through_the_dict():
    def fn(x):
        global TEMP
        TEMP = 4
        left = globals().pop("NEWG", -1)
        del globals()["TEMP"]
        globals()["NEWG"] = 7
        return x + left + ("TEMP" in globals())

    _three_calls(fn, fullgraph=True)


def test_global_made_and_deleted_in_one_call():
    def fn(x):
        global TEMP
        TEMP = 5
        y = x + TEMP
        del TEMP
        return y + ("TEMP" in globals())

    _three_calls(fn, fullgraph=True)


def test_globals_dict_across_a_graph_break():
    """The dict left on the stack at a break is the module's globals in the resumed code."""
    def fn(x):
        g = globals()
        bytegraph.graph_break()
        g["NEWG"] = g.get("NEWG", 0) + 1
        return x + NEWG

    _three_calls(fn)


def test_a_missing_key_raises_as_eager():
    def fn(x):
        return x + globals()["NEWG"]

    _fresh()
    with pytest.raises(KeyError, match="NEWG"):
        fn(torch.zeros(1))
    with pytest.raises(KeyError, match="NEWG"):
        bytegraph.compile(fn)(torch.zeros(1))


def test_iterating_the_globals_is_a_graph_break():
    def fn(x):
        global NEWG
        NEWG = 1
        return x + sum(1 for name in globals() if name in _NAMES)

    _three_calls(fn)
    explained = bytegraph.explain(fn, torch.zeros(1))
    reasons = [r.reason for r in explained.break_reasons]
    assert reasons[0] == f"iterating over the globals of module {__name__}"
    assert all(f"the globals of module {__name__}" in reason for reason in reasons), reasons


def test_a_global_deleted_and_made_again_moves_to_the_end_as_eagerly():
    def fn(x):
        for i in range(3):
            if "NEWG" in globals():
                globals()["NEWG"] += i + 1
            else:
                globals()["NEWG"] = 1
            if NEWG % 2 == 0:
                globals().pop("NEWG")
        globals()["COUNT"] = 1
        return x + 1

    _three_calls(fn)


def test_globals_made_in_the_call_keep_eagers_order_across_a_delete():
    def fn(x):
        global TEMP, NEWG, COUNT
        TEMP = 1
        NEWG = 2
        del TEMP
        COUNT = 3
        TEMP = 4
        return x + 1

    _three_calls(fn)
