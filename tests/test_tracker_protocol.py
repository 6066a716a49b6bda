"""The tracker protocol (Note [Tracker protocol] in bytegraph/vars/base.py): behaviour lives
on the value's kind. The output graph, the codegen and the translator ask the tracker
through its methods and never test its concrete class; a new kind of value is one module
(a tracker that overrides the slots it models, and a builder registered by type)."""
from __future__ import annotations

import ast
import dataclasses
import pathlib

import pytest
import torch

import bytegraph

from bytegraph.guards.guard import GuardKind
from bytegraph.vars import registry
from bytegraph.vars.base import VariableTracker
from bytegraph.vars.constant import ConstantVariable
from bytegraph.vars.iterators import SequenceIteratorVariable
from tests.helpers import check

PACKAGE = pathlib.Path(__file__).resolve().parent.parent / "bytegraph"
LAYERS_ASKING_TRACKERS = ("graph", "translate")
# file name -> reason; every entry is a known debt
ALLOWED: dict[str, str] = {}


def _class_names(node: ast.expr):
    """The class names a class-info argument of `isinstance` (or a `type(x) is C` operand) spells."""
    if isinstance(node, ast.Tuple):
        for elt in node.elts:
            yield from _class_names(elt)
    elif isinstance(node, ast.Name):
        yield node.id
    elif isinstance(node, ast.Attribute):
        yield node.attr


def _is_tracker_class(name: str) -> bool:
    return name.endswith("Variable") and name != "VariableTracker"


def _class_tests(tree: ast.AST):
    """(line, class name) of every `isinstance(x, <tracker class>)` and `type(x) is <tracker class>`."""
    for node in ast.walk(tree):
        if isinstance(node, ast.Call) and isinstance(node.func, ast.Name) and node.func.id == "isinstance" \
                and len(node.args) == 2:
            for name in _class_names(node.args[1]):
                if _is_tracker_class(name):
                    yield node.lineno, name
        elif isinstance(node, ast.Compare) and isinstance(node.left, ast.Call) \
                and isinstance(node.left.func, ast.Name) and node.left.func.id == "type":
            for op, right in zip(node.ops, node.comparators):
                if isinstance(op, (ast.Is, ast.IsNot, ast.Eq, ast.NotEq, ast.In, ast.NotIn)):
                    for name in _class_names(right):
                        if _is_tracker_class(name):
                            yield node.lineno, name


def _files():
    for layer in LAYERS_ASKING_TRACKERS:
        yield from sorted((PACKAGE / layer).rglob("*.py"))


@pytest.mark.parametrize("path", list(_files()), ids=lambda p: f"{p.parent.name}/{p.name}")
def test_graph_and_translate_ask_the_tracker_not_its_class(path):
    found = list(_class_tests(ast.parse(path.read_text(), str(path))))
    if path.name in ALLOWED:
        assert found, f"{path.name} no longer tests tracker classes: drop it from ALLOWED"
        return
    assert not found, "\n".join(f"{path.parent.name}/{path.name}:{line} tests the tracker class {name}; "
                                "ask the tracker (a slot in vars/base.py) instead" for line, name in found)


def test_the_counter_sees_class_tests():
    tree = ast.parse("isinstance(vt, (ListVariable, int))\nisinstance(vt, VariableTracker)\n"
                     "type(vt) is m.DictVariable\nisinstance(x, str)\n")
    assert [name for _, name in _class_tests(tree)] == ["ListVariable", "DictVariable"]


# ---- a new kind of value is one module ----------------------------------------------------

@dataclasses.dataclass(frozen=True)
class Interval:
    """A toy value kind: the integers lo..hi-1, with len, in, [], iteration and truth."""

    lo: int
    hi: int

    def __len__(self):
        return max(0, self.hi - self.lo)

    def __contains__(self, n):
        return self.lo <= n < self.hi

    def __getitem__(self, i):
        if not 0 <= i < len(self):
            raise IndexError("Interval index out of range")
        return self.lo + i

    def __iter__(self):
        return iter(range(self.lo, self.hi))


class IntervalVariable(VariableTracker):
    """The tracker of an `Interval` from the caller: its bounds are constants (guarded by value)."""

    __slots__ = ("lo", "hi")

    def __init__(self, lo: int, hi: int, source=None):
        super().__init__(source)
        self.lo = lo
        self.hi = hi

    def python_type(self) -> type:
        return Interval

    def _ints(self) -> range:
        return range(self.lo, self.hi)

    def len_impl(self, tx):
        return ConstantVariable(len(self._ints()))

    def contains_impl(self, tx, item):
        return ConstantVariable(item.as_python_constant() in self._ints())

    def getitem_impl(self, tx, key):
        try:
            return ConstantVariable(self._ints()[key.as_python_constant()])
        except IndexError as e:
            tx.raise_user_error(e)

    def unpack(self, tx):
        return [ConstantVariable(i) for i in self._ints()]

    def iterate(self, tx):
        return SequenceIteratorVariable.over_items(self.unpack(tx))

    def truth(self, tx):
        return bool(self._ints())

    def hasattr_impl(self, tx, name):
        return hasattr(Interval, name) or name in ("lo", "hi")

    def var_getattr(self, tx, name):
        if name in ("lo", "hi"):
            return ConstantVariable(getattr(self, name))
        return super().var_getattr(tx, name)


@registry.register(Interval, exact=True)
def _build_interval(tx, value, source, do_guard):
    registry.guard(tx, do_guard, GuardKind.CONSTANT_MATCH, source, value)
    return IntervalVariable(value.lo, value.hi, source)


def test_a_new_kind_answers_the_builtins_through_its_slots():
    def f(x, r):
        total = x * len(r) + r[1]
        for i in r:
            total = total + i
        return total, 3 in r, 9 in r, bool(r), hasattr(r, "lo"), hasattr(r, "width"), list(reversed(r))

    check(f, torch.ones(3), Interval(2, 6), graphs=1, fullgraph=True)


def test_a_new_kind_keeps_eager_errors():
    def f(x, r):
        return x + r[10]

    check(f, torch.ones(3), Interval(2, 6))  # IndexError, as eager


def test_a_slot_the_kind_does_not_model_breaks():
    def f(x, r):
        y = x + 1
        d = {}
        d[r] = r.lo  # no `key_impl`: the default breaks, the store runs eagerly
        return y * 2, d

    check(f, torch.ones(3), Interval(2, 6), graphs=1)  # the rest holds a dict keyed by it: eager
    with pytest.raises(bytegraph.Unsupported, match="as a dict key"):
        bytegraph.compile(f, fullgraph=True)(torch.ones(3), Interval(2, 6))


def test_children_drive_graph_outputs():
    """Graph-computed tensors inside a returned value are found through `children()`."""
    def f(x):
        d = {"a": [x + 1, (x * 2,)]}
        return d, d.values(), iter([x - 1])

    check(f, torch.ones(3), graphs=1, fullgraph=True)


def test_default_slots_break_with_the_construct_named():
    class _Tx:
        def unsupported(self, reason, category=None, hint=None):
            raise LookupError(reason)

    vt = IntervalVariable(0, 1)
    with pytest.raises(LookupError, match="as a dict key"):
        VariableTracker.key_impl(_Opaque(), _Tx())
    with pytest.raises(LookupError, match=r"\*\* unpacking"):
        vt.as_kwargs(_Tx())
    with pytest.raises(LookupError, match="iterating over"):
        vt.next_item(_Tx())
    assert vt.children() == () and not vt.is_tensor and not vt.built_once() and not vt.is_none()
    assert vt.compiled_callee(_Tx()) is None and vt.inlined_function() is None


class _Opaque(VariableTracker):
    __slots__ = ()

    def describe(self) -> str:
        return "an opaque value"
