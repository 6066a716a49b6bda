"""The trace-rules table (`vars/trace_rules.py`), polyfills (`vars/polyfills/`) and the
type-keyed builder registry (`vars/registry.py`)."""
import collections
import copy
import enum
import functools
import inspect
import itertools
import logging
import math
import operator
import os
import time
import types

import pytest
import torch

import bytegraph
from bytegraph.vars import builder, registry, trace_rules
from bytegraph.vars.builtins import HANDLERS, BuiltinVariable
from bytegraph.vars.classes import ClassVariable
from bytegraph.vars.constant import ConstantVariable
from bytegraph.vars.containers import ListVariable, NamedTupleVariable, TupleVariable
from bytegraph.vars.functions import PartialVariable, UserFunctionVariable
from bytegraph.vars.polyfills.registry import POLYFILLS
from bytegraph.vars.polyfills.trackers import PolyfillVariable
from bytegraph.vars.torch_functions import GRAPH_OPS, SPECIAL, TorchFunctionVariable, TorchSpecialVariable
from bytegraph.vars.trace_rules import Kind, lookup
from helpers import check

T = lambda *shape: torch.randn(*shape, requires_grad=True)  # noqa: E731


# ---- polyfills: 1 graph, 0 breaks ----------------------------------------------------------

def test_reduce_polyfill_runs_callbacks_on_tensors():
    def f(xs, x):
        return (functools.reduce(lambda a, b: a * b + 1, xs), functools.reduce(operator.add, xs, x),
                functools.reduce(operator.mul, [2, 3, 4]), functools.reduce(operator.add, [], 7))

    check(f, [T(3) for _ in range(3)], T(3), graphs=1, fullgraph=True)


def test_reduce_polyfill_consumes_an_iterator_lazily():
    def f(x):
        seen = []

        def items():
            for i in range(3):
                seen.append(i)
                yield x * i

        def step(a, b):
            seen.append("step")
            return a + b

        return functools.reduce(step, items()), seen

    check(f, T(2), graphs=1, fullgraph=True)


def test_reduce_polyfill_raises_like_the_c_function():
    check(lambda x: functools.reduce(operator.add, []) + x, T(2))
    check(lambda x: functools.reduce(operator.add, [x], 1, 2), T(2))


def test_math_prod_polyfill_multiplies_tensors_in_the_graph():
    def f(x, n):
        return math.prod([x, 2, x]), math.prod([n, 3], start=x), math.prod(x.shape), math.prod([])

    check(f, T(2, 3), 4, graphs=1, fullgraph=True)


def test_chain_polyfill():
    def f(x, xs):
        out = list(itertools.chain([x], (x + 1,), xs))
        total = 0
        for item in itertools.chain(xs, [x]):
            total = total + item
        return out, total, isinstance(itertools.chain(), itertools.chain), type(itertools.chain()) is itertools.chain

    check(f, T(2), [T(2), T(2)], graphs=1, fullgraph=True)


def test_chain_from_iterable_polyfill_is_lazy_in_the_outer_iterable():
    def f(x):
        order = []

        def groups():
            for i in range(3):
                order.append(("group", i))
                yield [x * i, x + i]

        for item in itertools.chain.from_iterable(groups()):
            order.append("item")
            x = x + item
        return x, order

    check(f, T(2), graphs=1, fullgraph=True)


def test_count_of_and_index_of_polyfills():
    def f(x, xs):
        return x * operator.countOf(xs, 2) + operator.indexOf((5, 6, 7), 7) + operator.countOf("abca", "a")

    check(f, T(2), [1, 2, 2, 3], graphs=1, fullgraph=True)
    check(lambda x: x + operator.indexOf([1, 2], 3), T(2))


# ---- the table keeps every earlier decision ------------------------------------------------

MOVED_TO_POLYFILLS = {functools.reduce, math.prod, itertools.repeat}  # were builtins.HANDLERS entries


def _decision_before(fn):
    """The decision the builder made before the table existed: SPECIAL, then GRAPH_OPS, then
    HANDLERS, each tried in that order."""
    if fn in SPECIAL:
        return Kind.BUILTIN, TorchSpecialVariable
    if fn in GRAPH_OPS:
        return Kind.GRAPH_OP, TorchFunctionVariable
    if fn in HANDLERS:
        return Kind.BUILTIN, BuiltinVariable
    return None


class _Tx:
    """Just enough translator for `builder.wrap(tx, value)` of a value without a source."""

    def unsupported(self, reason, category="", hint=""):
        raise AssertionError(reason)

    def wrap(self, value, source=None, guard=True):
        return builder.wrap(self, value, source, guard)


@pytest.mark.parametrize("table", ["SPECIAL", "GRAPH_OPS", "HANDLERS"])
def test_every_old_table_entry_keeps_its_decision(table):
    entries = {"SPECIAL": SPECIAL, "GRAPH_OPS": GRAPH_OPS, "HANDLERS": HANDLERS}[table]
    assert entries
    for fn in entries:
        kind, tracker = _decision_before(fn)
        rule = lookup(fn)
        assert (rule.kind, rule.tracker) == (kind, tracker), fn
        if kind is Kind.BUILTIN:
            handlers = SPECIAL if tracker is TorchSpecialVariable else HANDLERS
            assert rule.handler is handlers[fn], fn
        vt = builder.wrap(_Tx(), fn)
        assert type(vt) is tracker and vt.fn is fn, fn


def test_tables_are_disjoint_and_polyfills_replace_handlers():
    tables = [set(SPECIAL), set(GRAPH_OPS), set(HANDLERS), set(POLYFILLS)]
    for i, a in enumerate(tables):
        for b in tables[i + 1:]:
            assert not a & b
    for fn in MOVED_TO_POLYFILLS:
        assert lookup(fn).kind is Kind.POLYFILL and type(builder.wrap(_Tx(), fn)) is PolyfillVariable
    for fn in POLYFILLS:
        assert lookup(fn).polyfill is POLYFILLS[fn]


def test_equal_bound_builtins_find_one_rule():
    assert itertools.chain.from_iterable is not itertools.chain.from_iterable
    assert lookup(itertools.chain.from_iterable).kind is Kind.POLYFILL


def _user_function():
    return 1


@pytest.mark.parametrize("fn, kind", [
    (_user_function, Kind.INLINE),
    (torch.nn.Module.__call__, Kind.INLINE),
    (POLYFILLS[functools.reduce].body, Kind.INLINE),
    (logging.getLevelName, Kind.BREAK),
    (logging.info, Kind.BUILTIN),  # replayed after the graph (vars/logging_calls.py)
    (copy._reconstruct, Kind.BREAK),  # copy.copy/deepcopy themselves are polyfilled
    (copy.deepcopy, Kind.POLYFILL),
    (torch.autograd.profiler.record_function.__init__, Kind.BREAK),
    (time.time, Kind.BREAK),
    (os.getpid, Kind.BREAK),
])
def test_python_and_c_functions_outside_the_tables(fn, kind):
    rule = lookup(fn)
    assert rule.kind is kind and rule.reason
    if isinstance(fn, types.FunctionType):
        assert trace_rules.is_traceable(fn) == (kind is Kind.INLINE)


def test_values_the_rules_do_not_decide():
    class Callable:
        def __call__(self):
            return 1

    for value in (Callable(), functools.partial(int), Callable, [].append.__self__, {}):
        assert lookup(value) is None


def test_a_break_rule_carries_its_reason_and_hint():
    rule = lookup(time.time)
    assert rule.kind is Kind.BREAK
    assert "time" in rule.reason and "does not know" in rule.reason
    assert rule.category == "unsupported call" and "outside the compiled function" in rule.hint
    io_rule = lookup(logging.getLevelName)
    assert io_rule.kind is Kind.BREAK and "I/O" in io_rule.reason and io_rule.hint

    def f(x):
        x = x + 1
        time.time()
        logging.getLogger("bytegraph.test").debug("quiet")
        return x * 2

    report = bytegraph.explain(f)(T(2))
    reasons = [b.reason for b in report.break_reasons]
    assert any(rule.reason in r for r in reasons), reasons
    assert any("call to logging" in r and io_rule.reason in r for r in reasons), reasons


# ---- the builder registry ------------------------------------------------------------------

class _Point(collections.namedtuple("_Point", "x y")):
    pass


class _PlainTuple(tuple):
    pass


class _MyList(list):
    pass


class _Color(enum.IntEnum):
    RED = 1


class _Meta(type):
    pass


class _WithMeta(metaclass=_Meta):
    pass


@pytest.mark.parametrize("value, tracker", [
    ((1, 2), ConstantVariable),
    (_Point(1, 2), NamedTupleVariable),
    ([1, 2], ListVariable),
    (_Color.RED, ConstantVariable),
    (_WithMeta, ClassVariable),
    (list, BuiltinVariable),
    (torch.Size, TorchSpecialVariable),
    (torch.relu, TorchFunctionVariable),
    (_user_function, UserFunctionVariable),
    (functools.partial(max, 1), PartialVariable),
])
def test_builder_resolves_by_type(value, tracker):
    assert type(builder.wrap(_Tx(), value)) is tracker


def test_exact_entries_leave_subclasses_to_the_user_object_builder():
    assert registry.resolve(_MyList) is registry.resolve(object)
    assert registry.resolve(_PlainTuple) is registry.resolve(object)
    assert registry.resolve(torch.nn.Parameter) is registry.resolve(torch.Tensor)
    assert registry.resolve(_Meta) is registry.resolve(type)


def test_a_new_kind_registers_itself_by_type():
    class Celsius:
        def __init__(self, degrees):
            self.degrees = degrees

    class Hot(Celsius):
        pass

    @registry.register(Celsius)
    def build_celsius(tx, value, source, do_guard):
        return ConstantVariable(value.degrees, source)

    assert registry.resolve(Hot) is build_celsius
    vt = builder.wrap(_Tx(), Hot(40))
    assert type(vt) is ConstantVariable and vt.value == 40
    assert type(builder.wrap(_Tx(), (Celsius(1), 2))) is TupleVariable


def test_fresh_bound_c_methods_do_not_recompile():
    chain_from = itertools.chain.from_iterable

    def f(x):
        return sum(chain_from([[x], [x, x]]))

    check(f, T(2), graphs=1, fullgraph=True)  # read from a closure cell
    check(lambda x: sum(itertools.chain.from_iterable([[x], [x]])), T(2), graphs=1, fullgraph=True)


def test_a_break_inside_a_polyfill_body_keeps_eager_semantics():
    def f(x):
        def step(a, b):
            print("step", b)
            return a + b

        return functools.reduce(step, [x, x * 2, x * 3]) * 2

    check(f, T(2))  # print() breaks inside the inlined body: stdout and results as eager


def _binding_shape(sig):
    """What decides which arguments bind: each parameter's kind, its name where a keyword can
    name it, whether it has a default."""
    return tuple((p.kind, None if p.kind is p.POSITIONAL_ONLY else p.name, p.default is not p.empty)
                 for p in sig.parameters.values())


def test_polyfill_bodies_take_the_arguments_their_c_function_takes():
    """A polyfilled call binds by the body's public signature (arguments it does not take
    break the graph): where the C function's signature is inspectable, it is the same."""
    checked = 0
    for target, polyfill in POLYFILLS.items():
        try:
            c_signature = inspect.signature(target)
        except (TypeError, ValueError):  # no text signature (itertools.product, functools.reduce)
            continue
        assert _binding_shape(polyfill.signature) == _binding_shape(c_signature), (target, polyfill.signature)
        checked += 1
    assert checked >= 20
