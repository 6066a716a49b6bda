"""The standard library and class machinery in traced code: dataclasses, copy, classes
with `__new__` or a metaclass (vars/construction.py), enum, operator, math, typing and
inspect. Differential: outputs, grads, stdout, outer state and exceptions as eager; most
in one graph, with cases inside inlined helpers and across a graph break."""
import abc
import copy
import dataclasses
import enum
import inspect
import math
import operator
import re
import typing

import torch

import bytegraph
from helpers import check

T = lambda *shape: torch.randn(*shape, requires_grad=True)  # noqa: E731


def _one(fn, *args, **kwargs):
    """One graph, no break; `fn(x)` of one tensor unless `args` are given."""
    return check(fn, *(args or (T(2),)), graphs=1, fullgraph=True, **kwargs)


def _breaks_with(fn, *args, match, **kwargs):
    """Differential, and a break reason names the construct."""
    check(fn, *args, **kwargs)
    reasons = [r.reason for r in bytegraph.explain(fn, *args).break_reasons]
    assert any(re.search(match, r) for r in reasons), reasons


# ---- dataclasses -----------------------------------------------------------------------------

@dataclasses.dataclass
class Point:
    x: float
    y: float = 2.0
    tags: list = dataclasses.field(default_factory=list)


@dataclasses.dataclass(frozen=True)
class Frozen:
    a: int
    b: int = 3


@dataclasses.dataclass
class Derived:
    a: int
    doubled: int = dataclasses.field(init=False)

    def __post_init__(self):
        self.doubled = self.a * 2


@dataclasses.dataclass(order=True)
class Ranked:
    rank: int
    name: str = dataclasses.field(compare=False, default="")


def test_dataclass_created_in_the_trace_with_defaults_and_factory():
    def f(x):
        p = Point(x)
        q = Point(x, 5.0)
        p.tags.append(1)
        return p.x * p.y + q.y, p.tags, q.tags, p.tags is not q.tags

    _one(f)


def test_dataclass_replace_created_and_from_outside():
    outside = Point(1.0, 4.0, [7])

    def f(x):
        p = dataclasses.replace(Point(x), y=3.0)
        q = dataclasses.replace(outside, x=2.0)
        return p.x * p.y, q.x, q.y, q.tags is outside.tags

    _one(f)


def test_dataclass_replace_of_an_argument():
    def f(x, p):
        q = dataclasses.replace(p, x=x)
        return q.x * q.y, q is not p, p.x

    check(f, T(2), Point(1.0, 3.0), graphs=1, fullgraph=True)


def test_dataclass_replace_init_false_field_raises_as_eager():
    check(lambda x: dataclasses.replace(Derived(2), doubled=3), T(2))


def test_dataclass_fields_is_dataclass_and_field_names():
    def f(x):
        names = [fl.name for fl in dataclasses.fields(Point)]
        return names, dataclasses.is_dataclass(Point), dataclasses.is_dataclass(Point(x)), \
            dataclasses.is_dataclass(x), len(dataclasses.fields(Point(x))), x + 1

    _one(f)


def test_dataclass_asdict_and_astuple_of_plain_data():
    def f(x):
        p = Point(1.0, 2.0, [1, [2, 3]])
        d = dataclasses.asdict(p)
        t = dataclasses.astuple(p)
        d["tags"][1].append(4)
        return d, t, p.tags, x * d["x"]

    _one(f)


def test_dataclass_asdict_nested():
    @dataclasses.dataclass
    class Outer:
        inner: Point
        n: int

    def f(x):
        return dataclasses.asdict(Outer(Point(1.0), 2)), x + 1

    _one(f)


def test_frozen_dataclass_assignment_raises_frozen_instance_error():
    def f(x):
        fr = Frozen(1)
        try:
            fr.a = 2
        except dataclasses.FrozenInstanceError as e:
            return x + fr.a + fr.b, str(e)
        return x

    _one(f)


def test_frozen_dataclass_uncaught_error_as_eager():
    def f(x):
        Frozen(1).b = 5
        return x

    check(f, T(2))


def test_post_init_equality_order_and_repr():
    def f(x):
        d = Derived(3)
        same = Point(1.0) == Point(1.0)
        diff = Point(1.0) != Point(2.0)
        ranked = sorted([Ranked(3, "c"), Ranked(1, "a"), Ranked(2, "b")])
        return x * d.doubled, same, diff, repr(Point(1.0, 2.0)), str(Frozen(1)), [r.name for r in ranked], \
            Ranked(1, "x") == Ranked(1, "y")

    _one(f)


def test_dataclass_inside_a_helper_and_across_a_break():
    def helper(x):
        return dataclasses.replace(Point(x, 2.0), y=4.0)

    def f(x):
        p = helper(x * 2)
        bytegraph.graph_break()
        return p.x * p.y, dataclasses.astuple(Frozen(2))

    check(f, T(2), graphs=2)


def test_dataclass_returned_to_the_caller():
    _one(lambda x: (Point(2.0, 1.0, [1]), Frozen(4), dataclasses.replace(Frozen(1), b=x.shape[0]), x * 2))


# ---- copy --------------------------------------------------------------------------------

class Box:
    def __init__(self, items, label):
        self.items = items
        self.label = label


class WithCopy:
    def __init__(self, v):
        self.v = v

    def __copy__(self):
        return WithCopy(self.v + 100)


class WithDeepcopy:
    def __deepcopy__(self, memo):
        return WithDeepcopy()


def test_copy_of_plain_data_is_shallow():
    def f(x):
        inner = [1, 2]
        lst = [inner, 3]
        c = copy.copy(lst)
        c[0].append(9)
        d = copy.copy({"a": inner})
        t = (inner, 1)
        return c, c is not lst, c[0] is inner, d["a"] is inner, copy.copy(t) is t, copy.copy(5), \
            copy.copy({1, 2}), x + 1

    _one(f)


def test_deepcopy_of_nested_plain_data():
    def f(x):
        shared = [1, 2]
        data = {"a": shared, "b": [shared, (3, shared)], "c": (1, "s"), "d": {4, 5}}
        c = copy.deepcopy(data)
        c["a"].append(10)
        return c, data, c["a"] is c["b"][0], c["b"][1][1] is c["a"], c["c"] is data["c"], x + 1

    _one(f)


def test_deepcopy_of_a_cycle():
    def f(x):
        a = [1]
        a.append(a)
        b = copy.deepcopy(a)
        return b[1] is b, b is not a, len(b), x + 1

    _one(f)


def test_copy_and_deepcopy_of_user_objects():
    def f(x):
        b = Box([1, [2]], "l")
        s = copy.copy(b)
        d = copy.deepcopy(b)
        s.items.append(3)
        d.items[1].append(4)
        return b.items, s.items is b.items, d.items, d.label, type(d).__name__, copy.copy(WithCopy(1)).v, x + 1

    _one(f)


def test_deepcopy_of_an_argument_leaves_it_untouched():
    def f(x, data, box):
        c = copy.deepcopy(data)
        c["k"].append(5)
        bc = copy.deepcopy(box)
        bc.items.append("new")
        return x * len(c["k"]), c, bc.items, data

    check(f, T(2), {"k": [1, 2], "n": (1, 2)}, Box([1], "b"), graphs=1, fullgraph=True)


def test_deepcopy_inside_a_helper_and_across_a_break():
    def helper(v):
        return copy.deepcopy([v, [v]])

    def f(x):
        c = helper(3)
        bytegraph.graph_break()
        c[1].append(4)
        return c, x + 1

    check(f, T(2))


def test_deepcopy_of_a_tensor_breaks_with_a_reason():
    _breaks_with(lambda x: copy.deepcopy([x.detach(), 1])[0] + 1, T(2),
                 match=r"copy.deepcopy\(\) of Tensor: copying torch values")


def test_deepcopy_with_user_deepcopy_breaks_with_a_reason():
    _breaks_with(lambda x: (type(copy.deepcopy(WithDeepcopy())).__name__, x + 1), T(2),
                 match="whose class defines __deepcopy__")


# ---- classes with __new__ or a metaclass ------------------------------------------------------

class WithNew:
    def __new__(cls, v):
        obj = super().__new__(cls)
        obj.made_by_new = True
        return obj

    def __init__(self, v):
        self.v = v


class NewReturnsOther:
    def __new__(cls, v):
        return v * 2  # not an instance: __init__ is not called

    def __init__(self, v):
        raise AssertionError("not called")


class NewOnly:
    def __new__(cls, *args):
        obj = object.__new__(cls)
        obj.args = args
        return obj


class Cached:
    _instances = {}

    def __new__(cls, key):
        if key not in cls._instances:
            cls._instances[key] = super().__new__(cls)
        return cls._instances[key]


class Registry(type):
    created = []

    def __call__(cls, *args, **kwargs):
        obj = super().__call__(*args, **kwargs)
        obj.registered_as = cls.__name__
        return obj


class Registered(metaclass=Registry):
    def __init__(self, v, scale=1):
        self.v = v * scale


class PlainMeta(type):
    def describe(cls):
        return cls.__name__.lower()


class WithPlainMeta(metaclass=PlainMeta):
    kind = "plain"

    def __init__(self, v):
        self.v = v


class Shape(abc.ABC):
    @abc.abstractmethod
    def area(self):
        ...


class Square(Shape):
    def __init__(self, side):
        self.side = side

    def area(self):
        return self.side * self.side


def test_new_then_init():
    def f(x):
        o = WithNew(x)
        return o.v * 2, o.made_by_new, isinstance(o, WithNew)

    _one(f)


def test_new_returning_another_object_skips_init():
    _one(lambda x: NewReturnsOther(x) + 1)


def test_new_with_object_new_and_no_init():
    _one(lambda x: (NewOnly(x, 2).args[0] * NewOnly(x, 2).args[1],))


def test_object_new_with_arguments_raises_as_eager():
    class Bad:
        def __new__(cls, v):
            return object.__new__(cls, v)

    check(lambda x: Bad(x), T(2))


def test_new_reading_class_state_from_outside():
    def f(x):
        Cached._instances.clear()
        a, b = Cached(1), Cached(1)
        return a is b, Cached(2) is a, x + 1

    _one(f, state=lambda: len(Cached._instances))


def test_metaclass_call_in_python():
    def f(x):
        r = Registered(x, scale=3)
        return r.v, r.registered_as, type(r).__name__

    _one(f)


def test_plain_metaclass_instances_and_metaclass_methods():
    def f(x):
        o = WithPlainMeta(x)
        return o.v + 1, WithPlainMeta.describe(), type(WithPlainMeta).__name__, WithPlainMeta.kind

    _one(f)


def test_abc_subclass_and_abstract_class_error():
    _one(lambda x: Square(x).area())
    check(lambda x: Shape(), T(2))


def test_new_and_metaclass_inside_a_helper_and_across_a_break():
    def helper(x):
        return WithNew(x), Registered(x)

    def f(x):
        a, b = helper(x)
        bytegraph.graph_break()
        return a.v + b.v, b.registered_as

    check(f, T(2), graphs=2)


def test_new_object_escapes_and_is_rebuilt():
    def f(x):
        return WithNew(x * 2), Registered(x)

    _one(f)


def test_c_new_still_breaks_with_a_reason():
    class IntLike(int):
        def __init__(self, v):
            self.extra = 1

    _breaks_with(lambda x: x + IntLike(3), T(2), match=r"creating an instance of .*IntLike")


# ---- enum ---------------------------------------------------------------------------------------

class Color(enum.Enum):
    RED = 1
    GREEN = 2
    BLUE = 3


class Level(enum.IntEnum):
    LOW = 1
    HIGH = 5


class Perm(enum.Flag):
    R = 1
    W = 2
    X = 4


def test_enum_members_values_names_lookup_and_iteration():
    def f(x):
        c = Color(2)
        return c, c.value, c.name, Color["BLUE"], [m.name for m in Color], len(Color), Color.RED is Color(1), \
            Color.RED == Color.GREEN, Color.GREEN in Color, x * c.value

    _one(f)


def test_int_enum_arithmetic_and_flags():
    def f(x):
        rw = Perm.R | Perm.W
        return x * Level.HIGH, Level(1) < Level.HIGH, Level.LOW + 1, rw, Perm.W in rw, Perm.X in rw, bool(Perm(0))

    _one(f)


def test_enum_bad_value_raises_as_eager():
    check(lambda x: Color(7), T(2))


def test_enum_in_a_helper_steering_control_flow():
    def act(x, c):
        if c is Color.RED:
            return x + 1
        if c == Color.GREEN:
            return x * 2
        return x

    _one(lambda x: act(x, Color.RED) + act(x, Color(2)) + act(x, Color.BLUE))


# ---- operator, math, typing -----------------------------------------------------------------------

class Rec:
    def __init__(self):
        self.a = 1
        self.child = Box([1], "c")


def test_operator_getters_and_callers():
    def f(x):
        ig = operator.itemgetter(1)
        ig2 = operator.itemgetter(0, 2)
        ag = operator.attrgetter("a")
        ag2 = operator.attrgetter("child.label", "a")
        r = Rec()
        return ig([x, x * 2]), ig2([1, 2, 3]), ag(r), ag2(r), operator.methodcaller("sum")(x), \
            sorted([(2, "b"), (1, "a")], key=operator.itemgetter(0))

    _one(f)


def test_operator_functions():
    def f(x):
        lst = [1, 2, 3]
        operator.setitem(lst, 0, 5)
        operator.delitem(lst, 1)
        return (operator.add(x, 1), operator.sub(x, 1), operator.mul(x, 2), operator.truediv(x, 2),
                operator.floordiv(7, 2), operator.mod(7, 3), operator.pow(x, 2), operator.neg(x),
                operator.getitem([1, 2], 1), operator.contains([1, 2], 2), operator.not_(0), operator.truth(1),
                operator.eq(1, 1), operator.lt(1, 2), operator.is_(None, None), operator.index(3),
                operator.concat([1], [2]), operator.matmul(x, x), operator.and_(6, 3), operator.or_(1, 2), lst,
                operator.countOf([1, 1, 2], 1), operator.indexOf([3, 4], 4), operator.length_hint([1, 2]))

    _one(f)


def test_operator_inplace_functions():
    def f(x):
        y = x.clone()
        y = operator.iadd(y, 1)
        lst = [1]
        lst2 = operator.iadd(lst, [2])
        return y, lst, lst2 is lst, operator.imul(3, 4)

    _one(f)


def test_math_on_constants():
    def f(x):
        n = x.shape[0]
        return x * (math.sqrt(16) + math.floor(2.7) + math.ceil(1.1) + math.log(math.e) + math.pi
                    + math.gcd(12, 18) + math.prod([1, 2, 3]) + math.factorial(3) + math.isqrt(17)
                    + math.hypot(3, 4) + math.cos(0) + math.fabs(-n) + math.log2(8) + float(math.isclose(1, 1)))

    _one(f)


def test_math_domain_error_as_eager():
    check(lambda x: x * math.sqrt(-1), T(2))


def test_typing_cast_type_checking_and_get_type_hints():
    def annotated(a: int, b: "float" = 1.0) -> float:
        return a * b

    def f(x):
        y = typing.cast(torch.Tensor, x)
        extra = 1 if typing.TYPE_CHECKING else 2
        return y * extra, typing.cast("int", 3)

    _one(f)
    assert typing.get_type_hints(annotated)  # used outside: fine; inside it is a break (below)


def test_typing_get_type_hints_breaks_with_a_reason():
    def annotated(a: int) -> int:
        return a

    _breaks_with(lambda x: (len(typing.get_type_hints(annotated)), x + 1), T(2), match="get_type_hints")


# ---- inspect.signature (vars/signatures.py) -----------------------------------------------------

def sig_target(a, b=2, *args, c, d=4, **kw):
    return a


def sig_posonly(a, /, b, *, c=None):
    return a


def test_signature_parameters_names_kinds_and_defaults():
    def f(x):
        sig = inspect.signature(sig_target)
        params = sig.parameters
        return (list(params), [p.kind for p in params.values()], [p.default for p in params.values()],
                params["a"].default is inspect.Parameter.empty, "kw" in params, len(params),
                [p.name for p in inspect.signature(sig_posonly).parameters.values()],
                params["b"].kind == inspect.Parameter.POSITIONAL_OR_KEYWORD, x * params["d"].default)

    _one(f)


def test_signature_bind_and_bind_partial():
    def f(x):
        sig = inspect.signature(sig_target)
        bound = sig.bind(x, 1, 2, 3, c=x * 2, z=6)
        part = sig.bind_partial(c=1)
        return bound.arguments, bound.args, bound.kwargs, part.arguments, bound.arguments["c"] + 1

    _one(f)


def test_signature_bind_error_as_eager():
    check(lambda x: inspect.signature(sig_target).bind(x), T(2))
    check(lambda x: inspect.signature(sig_posonly).bind(x, b=1, a=2), T(2))


def test_signature_of_a_function_made_in_the_trace_and_in_a_helper():
    def helper(fn, *args):
        sig = inspect.signature(fn)
        return [sig.parameters[name].default for name in sig.parameters], sig.bind(*args).arguments

    def f(x):
        return helper(lambda q, r=x * 3: q + r, x)

    _one(f)


def test_signature_default_is_guarded():
    def target(a, scale=2):
        return a

    def f(x):
        return x * inspect.signature(target).parameters["scale"].default

    cf = bytegraph.compile(f)
    assert torch.equal(cf(torch.ones(2)), torch.full((2,), 2.0))
    target.__defaults__ = (5,)
    assert torch.equal(cf(torch.ones(2)), torch.full((2,), 5.0))


def test_signature_escapes_and_across_a_break():
    def f(x):
        sig = inspect.signature(sig_posonly)
        y = x * 2
        bytegraph.graph_break()
        return sig, str(sig), sig.bind(1, 2).arguments, y

    check(f, T(2))  # after the break the real signature runs eagerly (inspect's methods are not traced)


def test_signature_of_a_wrapped_function_and_annotations_break_with_reasons():
    import functools

    @functools.wraps(sig_target)
    def wrapper(*args, **kwargs):
        return sig_target(*args, **kwargs)

    def annotated(a: int) -> int:
        return a

    _breaks_with(lambda x: (len(inspect.signature(wrapper).parameters), x + 1), T(2),
                 match=r"inspect.signature\(\) of function .*, which has __wrapped__")
    _breaks_with(lambda x: (inspect.signature(annotated).parameters["a"].annotation, x + 1), T(2),
                 match="annotations in inspect.signature")
    _breaks_with(lambda x: (inspect.signature(Box).parameters, x + 1), T(2),
                 match=r"only plain Python functions are traced")


def test_copy_and_deepcopy_of_dataclasses_frozen_and_plain():
    def f(x):
        p = Point(1.0, 2.0, [1, [2]])
        d = copy.deepcopy(p)
        s = copy.copy(p)
        d.tags[1].append(3)
        fr = copy.deepcopy(Frozen(1, 2))
        return p.tags, d.tags, s.tags is p.tags, d == p, fr, dataclasses.replace(fr, b=7), x * fr.b

    _one(f)


def test_deepcopy_of_a_named_tuple_and_a_set():
    import collections

    Pair = collections.namedtuple("Pair", "a b")

    def f(x):
        p = Pair([1], (2, [3]))
        c = copy.deepcopy(p)
        c.a.append(5)
        return p, c, type(c).__name__, copy.deepcopy({1, 2, 3}), copy.copy(p) is not p, x + 1

    _one(f)
