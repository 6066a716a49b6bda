"""`dataclasses.fields` (vars/dataclass_fields.py): answered from the class for an instance
or class the trace knows, the function's own body traced otherwise; either way eager's
result, exceptions and guards (a changed class recompiles). Differential: eager vs compiled,
graphs counted."""
import dataclasses
from dataclasses import InitVar, dataclass, field, fields
from typing import ClassVar

import torch

import bytegraph
from bytegraph.vars import dataclass_fields
from helpers import CompileCounter, check


@dataclass
class Point:
    x: float
    scale: float = 2.0
    tags: list = field(default_factory=list)
    count: ClassVar[int] = 0
    seed: InitVar[int] = 0

    def __post_init__(self, seed):
        self.offset = seed


def _describe(fs):
    return [(f.name, f.default, f.type) for f in fs]


def test_fields_of_an_instance_made_in_the_trace():
    def fn(x):
        p = Point(1.5, 3.0, seed=1)
        names = [f.name for f in fields(p)]
        return x * p.x * getattr(p, names[1]), names, _describe(dataclasses.fields(p))

    check(fn, torch.randn(3), graphs=1, fullgraph=True)


def test_fields_of_an_outside_instance_and_of_the_class():
    def fn(x, p):
        return x * p.x * len(fields(p)), _describe(fields(Point)), fields(p) == fields(Point)

    check(fn, torch.randn(3), Point(1.5), graphs=1, fullgraph=True)


def test_the_body_is_not_traced_for_a_known_class(monkeypatch):
    traced = []
    original = dataclass_fields.UserFunctionVariable.call_function
    monkeypatch.setattr(dataclass_fields.UserFunctionVariable, "call_function",
                        lambda self, tx, args, kwargs: traced.append(self.fn) or original(self, tx, args, kwargs))

    def fn(x, p):
        return x + p.x + len(fields(p))

    check(fn, torch.randn(3), Point(1.5), graphs=1)
    assert fields not in traced


class Shadowed:
    pass


def test_an_instance_table_shadowing_the_class_one_is_read_as_eager():
    def fn(x, p):
        return x + len(fields(p)), [f.name for f in fields(p)]

    class Own:
        pass

    p = Shadowed()
    p.__dataclass_fields__ = {"only": Own()}
    p.__dataclass_fields__["only"].name = "only"
    p.__dataclass_fields__["only"]._field_type = dataclasses._FIELD
    check(fn, torch.randn(3), p)


def test_not_a_dataclass_raises_as_eager():
    def fn(x, obj):
        try:
            return x + len(fields(obj))
        except TypeError as e:
            return x - len(str(e))

    check(fn, torch.randn(3), Shadowed())


def test_a_class_with_a_python_getattribute_runs_the_body():
    @dataclass
    class Logged:
        a: int = 1

        def __getattribute__(self, name):
            return object.__getattribute__(self, name)

    def fn(x, obj):
        return x * len(fields(obj)), [f.name for f in fields(obj)]

    check(fn, torch.randn(3), Logged())


def test_another_dataclass_recompiles():
    @dataclass
    class One:
        a: int = 1

    @dataclass
    class Two:
        a: int = 1
        b: int = 2

    def fn(x, obj):
        return x * len(fields(obj))

    counter = CompileCounter()
    compiled = bytegraph.compile(fn, backend=counter)
    for obj in (One(), Two(), One(), Two()):
        torch.testing.assert_close(compiled(torch.ones(2), obj), fn(torch.ones(2), obj))
    assert counter.frame_count == 2
