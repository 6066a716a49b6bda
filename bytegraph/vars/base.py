"""The variable-tracker base class and the protocol every tracker kind implements.

Trackers are mutable Python objects: one tracker per traced Python object, so aliasing
in the traced program is aliasing of trackers, and a mutation is an O(1) change of one
tracker. A tracker built from a real value carries the `Source` it was read from;
a tracker made during tracing has `source=None`.

Every operation that a kind does not support raises a graph break through
`tx.unsupported(...)`, never a Python error: only tracer bugs raise other exceptions.
"""
from __future__ import annotations


class VariableTracker:
    __slots__ = ("source",)

    def __init__(self, source=None):
        self.source = source

    def python_type(self) -> type:
        raise NotImplementedError(type(self).__name__)

    def is_python_constant(self) -> bool:
        return False

    def as_python_constant(self):
        raise NotImplementedError(f"{type(self).__name__} is not a Python constant")

    def var_getattr(self, tx, name: str) -> "VariableTracker":
        tx.unsupported(f"attribute '{name}' of {self.describe()}", category="unsupported attribute")

    def call_function(self, tx, args: list, kwargs: dict) -> "VariableTracker":
        tx.unsupported(f"calling {self.describe()}", category="unsupported call")

    def store_attr(self, tx, name: str, value: "VariableTracker") -> None:
        """`obj.name = value` (STORE_ATTR, setattr): record it, visible to later reads."""
        tx.unsupported(f"setting attribute '{name}' of {self.describe()}", category="side effect")

    def delete_attr(self, tx, name: str) -> None:
        """`del obj.name` (DELETE_ATTR, delattr)."""
        tx.unsupported(f"deleting attribute '{name}' of {self.describe()}", category="side effect")

    def call_method(self, tx, name: str, args: list, kwargs: dict) -> "VariableTracker":
        return self.var_getattr(tx, name).call_function(tx, args, kwargs)

    def unpack(self, tx) -> list:
        """The items of an iterable value, for unpacking and unrolled loops."""
        tx.unsupported(f"iterating over {self.describe()}", category="unsupported iteration")

    def iterate(self, tx):
        """`iter(value)` at trace time: an iterator tracker."""
        from .iterators import SequenceIteratorVariable

        return SequenceIteratorVariable.over_items(self.unpack(tx))

    def truth(self, tx) -> bool:
        """`bool(value)` at trace time; data-dependent values break."""
        tx.unsupported(f"truth value of {self.describe()}", category="data-dependent")

    def reconstruct(self, cg) -> None:
        """Emit bytecode that pushes the real value this tracker stands for."""
        if self.source is None:
            cg.tx.unsupported(f"returning {self.describe()} made during tracing",
                              category="unsupported output")
        self.source.reconstruct(cg)

    def describe(self) -> str:
        try:
            return f"a {self.python_type().__qualname__} value"
        except NotImplementedError:
            return type(self).__name__

    def __repr__(self) -> str:
        src = f" from {self.source.describe()}" if self.source is not None else ""
        return f"{type(self).__name__}{src}"


class CallableValueVariable(VariableTracker):
    """A tracker standing for one fixed callable object `fn` (a builtin, a torch op, a torch
    callable with special semantics, an opaque C function): the object is its value."""

    __slots__ = ("fn",)

    def __init__(self, fn, source=None):
        super().__init__(source)
        self.fn = fn

    def python_type(self) -> type:
        return type(self.fn)

    def is_python_constant(self) -> bool:
        return True

    def as_python_constant(self):
        return self.fn


class MethodOfVariable(VariableTracker):
    """`obj.method` looked up but not yet called: a call goes to `obj.call_method`, and at a
    graph break it is rebuilt as `<obj>.method`."""

    __slots__ = ("obj", "name")

    def __init__(self, obj: VariableTracker, name: str):
        super().__init__(None)
        self.obj = obj
        self.name = name

    def python_type(self) -> type:
        return type([].append)

    def describe(self) -> str:
        return f"{self.obj.describe()}.{self.name}"

    def call_function(self, tx, args, kwargs):
        return self.obj.call_method(tx, self.name, args, kwargs)

    def reconstruct(self, cg) -> None:
        cg.reconstruct(self.obj)
        cg.load_attr(self.name)
