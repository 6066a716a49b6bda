"""Type annotations and registries keyed by classes, as runtime validators use them
(strict dataclasses: a field's annotation walked with `typing.get_origin/get_args` and a
dict from origin to validator): typing forms read from outside are constants guarded by
identity (`vars/typing_forms.py`), `get_origin`/`get_args` fold on constants, a dict read
from outside may be keyed by classes, enum members and typing forms (`dict_keys.fixed_key`:
its keys guarded, its values read through `d[<key>]`), and functions, methods and classes
are true. Inside inlined helpers and across a graph break; anything else breaks with a
reason naming it."""
import collections.abc
import copy
import dataclasses
import enum
import types
import typing
from typing import Any, Callable, Literal, Optional, Tuple, Union, get_args, get_origin

import pytest
import torch

import bytegraph
from helpers import check, compile_counted

FORMS = (int | None, Optional[int], list[int], Literal["a", 1], dict[str, int], Union[int, str], int, None,
         typing.List[int], Tuple[int, ...], Any, Callable[[int], str], tuple[int, str])


def test_get_origin_and_get_args_fold_on_forms_read_from_outside():
    def fn(x):
        out = []
        for form in FORMS:
            out.append((get_origin(form), get_args(form)))
        return x + len(out), out

    check(fn, torch.randn(3), graphs=1, fullgraph=True)


def _origin_name(tp):  # an inlined helper
    origin = get_origin(tp)
    return "plain" if origin is None else getattr(origin, "__name__", str(origin))


def test_forms_as_arguments_are_guarded_by_identity():
    fn, counter = compile_counted(lambda x, tp: (x * len(get_args(tp)), _origin_name(tp)), fullgraph=True)
    x = torch.ones(2)
    listed, union = list[int], int | str | None  # a new object at each evaluation
    for tp in (Optional[int], listed, Optional[int], union, listed, Union[str, int], Union[int, str]):
        out, name = fn(x, tp)
        assert torch.equal(out, x * len(get_args(tp))) and name == _origin_name(tp)
    # one entry per form object, a form seen again hits its entry; forms that are equal
    # (`Union[str, int] == Union[int, str]`: compared as sets) but list their args in another
    # order are not one entry
    assert counter.frame_count == 5
    assert fn(x, Union[str, int])[1] == "Union" and get_args(Union[str, int]) == (str, int)


def test_typing_queries_across_a_graph_break():
    def fn(x):
        y = x * len(get_args(Optional[list[int]]))
        bytegraph.graph_break()
        inner = get_args(get_args(Optional[list[int]])[0])
        return y + len(inner), get_origin(Optional[int]) is Union

    check(fn, torch.randn(3), graphs=2)
    assert bytegraph.explain(fn, torch.randn(3)).graph_break_count == 1  # the user's break only


def test_get_origin_of_a_non_constant_breaks_with_the_reason():
    def fn(x):
        return x + 1, get_origin(x)

    out = bytegraph.explain(fn, torch.ones(2))
    assert out.result[1] is None and torch.equal(out.result[0], torch.full((2,), 2.0))
    assert any("typing.get_origin() on values that are not Python constants" in b.reason
               for b in out.break_reasons), [b.reason for b in out.break_reasons]


# ---- a strict dataclass, the way huggingface_hub writes one --------------------------------

def _validate_union(name, value, args):
    for t in args:
        try:
            type_check(name, value, t)
            return
        except TypeError:
            pass
    raise TypeError(f"field {name!r}: {value!r} matches none of {args}")


def _validate_list(name, value, args):
    if not isinstance(value, list):
        raise TypeError(f"field {name!r}: expected a list, got {type(value).__name__}")
    for item in value:
        type_check(name, item, args[0])


def _validate_literal(name, value, args):
    if value not in args:
        raise TypeError(f"field {name!r}: expected one of {args}")


VALIDATORS = {Union: _validate_union, types.UnionType: _validate_union, list: _validate_list,
              Literal: _validate_literal}


def type_check(name, value, expected):
    origin, args = get_origin(expected), get_args(expected)
    if expected is Any:
        return
    if validator := VALIDATORS.get(origin):
        validator(name, value, args)
    elif isinstance(expected, type):
        if not isinstance(value, expected):
            raise TypeError(f"field {name!r}: expected {expected.__name__}, got {type(value).__name__}")
    else:
        raise TypeError(f"unsupported annotation {expected}")


def strict(cls):
    cls = dataclasses.dataclass(cls)
    checks = {f.name: f.type for f in dataclasses.fields(cls)}

    def __setattr__(self, name, value):
        if name in checks:
            type_check(name, value, checks[name])
        object.__setattr__(self, name, value)

    cls.__setattr__ = __setattr__
    return cls


@strict
class Config:
    hidden: int = 4
    scale: Optional[float] = None
    layers: list[int] = dataclasses.field(default_factory=lambda: [1, 2])
    act: Literal["relu", "gelu"] = "relu"
    extra: int | str | None = None
    note: Any = None


def test_strict_dataclass_made_and_validated_in_one_graph():
    def fn(x):
        cfg = Config(hidden=3, scale=2.0, layers=[1, 2, 3], act="gelu", extra="e")
        cfg.extra = 5
        return x * cfg.scale + cfg.hidden + sum(cfg.layers)

    check(fn, torch.randn(3), graphs=1, fullgraph=True)


def test_strict_validation_error_is_eagers():
    def fn(x):
        cfg = Config(hidden=3)
        cfg.layers = [1, "two"]
        return x + cfg.hidden

    check(fn, torch.randn(3))


def test_deepcopy_of_a_strict_config_then_validated_writes():
    def decoder_view(cfg):  # like `get_text_config(decoder=True)` of a flat config
        copied = copy.deepcopy(cfg)
        copied.hidden = cfg.hidden * 2
        copied.layers = copied.layers + [9]
        return copied

    def fn(x, cfg):
        view = decoder_view(cfg)
        return x * view.hidden + len(view.layers) + cfg.hidden, view.act

    check(fn, torch.randn(3), Config(hidden=2, scale=1.5), graphs=1, fullgraph=True)


def test_strict_config_across_a_graph_break():
    def fn(x):
        cfg = Config(hidden=2)
        y = x * cfg.hidden
        bytegraph.graph_break()
        cfg.scale = 3.0
        return y * cfg.scale, cfg

    check(fn, torch.randn(3), graphs=2)


# ---- dicts keyed by classes, enum members and typing forms -------------------------------

def _as_int(v):
    return int(v)


def _as_float(v):
    return float(v) * 2


class Color(enum.Enum):
    RED = 1
    BLUE = 2


REGISTRY = {int: _as_int, float: _as_float, list: len, collections.abc.Sequence: len, Union: "union"}
WEIGHTS = {int: 2, float: 3}
PALETTE = {Color.RED: 1.5, Color.BLUE: -1.0}


def test_registry_keyed_by_classes_in_one_graph():
    def fn(x):
        total = REGISTRY[int](2.7) + REGISTRY.get(float)(1.5) + len(REGISTRY)
        if handler := REGISTRY.get(list):
            total += handler([1, 2, 3])
        missing = REGISTRY.get(dict, None)
        return x * total, missing, float in REGISTRY, str in REGISTRY, REGISTRY[Union]

    check(fn, torch.randn(3), graphs=1, fullgraph=True)


def test_iterating_a_class_keyed_dict_yields_the_classes():
    def fn(x):
        made = [cls(2) for cls in WEIGHTS]
        scale = sum(w for cls, w in WEIGHTS.items() if issubclass(cls, int))
        local = {int: 1, str: 2}
        names = [k.__name__ for k in local]
        return x * scale, made, names

    check(fn, torch.randn(3), graphs=1, fullgraph=True)


def _weight_of(value):  # an inlined helper
    return WEIGHTS[type(value)]


def test_class_keyed_values_are_guarded():
    fn, counter = compile_counted(lambda x: x * _weight_of(1) + len(WEIGHTS), fullgraph=True)
    x = torch.ones(2)
    assert torch.equal(fn(x), x * 2 + 2)
    WEIGHTS[int] = 5
    try:
        assert torch.equal(fn(x), x * 5 + 2)  # a changed value recompiles
        WEIGHTS[str] = 7
        assert torch.equal(fn(x), x * 5 + 3)  # so does a new key
    finally:
        WEIGHTS[int] = 2
        del WEIGHTS[str]
    assert torch.equal(fn(x), x * 2 + 2)
    assert counter.frame_count == 3


def test_enum_keys():
    def fn(x):
        return x * PALETTE[Color.RED] + PALETTE.get(Color.BLUE), [c.name for c in PALETTE]

    check(fn, torch.randn(3), graphs=1, fullgraph=True)


def test_class_keyed_dicts_across_a_graph_break():
    def fn(x):
        y = x * _weight_of(1.0)
        local = {float: y, int: 2}
        bytegraph.graph_break()
        return local[float] + _weight_of(3) + local[int], local

    check(fn, torch.randn(3), graphs=2)


class _EqualByName(type):
    def __eq__(cls, other):
        return getattr(other, "__name__", None) == cls.__name__

    __hash__ = type.__hash__


class Odd(metaclass=_EqualByName):
    pass


ODD_KEYS = {Odd: 1}


def test_keys_with_their_own_equality_break_with_the_reason():
    def fn(x):
        return x + ODD_KEYS[Odd]

    out = bytegraph.explain(fn, torch.ones(2))
    assert torch.equal(out.result, torch.full((2,), 2.0))
    assert any("a dict with keys other than constants and tensors" in b.reason for b in out.break_reasons)


# ---- truth of functions, methods and classes -------------------------------------------------

class Box:
    def get(self):
        return 1


def test_functions_methods_and_classes_are_true():
    def fn(x, box):
        n = 0
        for thing in (_as_int, box.get, Box, len, type_check):
            if thing:
                n += 1
        return x * n, bool(Box) and not not _as_float

    check(fn, torch.randn(3), Box(), graphs=1, fullgraph=True)


def test_truth_of_an_enum_class_is_eagers():
    def fn(x):
        return x + 1 if Color else x - 1

    check(fn, torch.randn(3))


@pytest.mark.parametrize("form", [Optional[int], list[int], Literal["a"]])
def test_forms_returned_are_the_same_objects(form):
    fn = bytegraph.compile(lambda tp: (tp, get_args(tp)), fullgraph=True)
    out, args = fn(form)
    assert out is form and args == get_args(form)
