"""The variable-tracker base class and the protocol every tracker kind implements.

Trackers are mutable Python objects: one tracker per traced Python object, so aliasing
in the traced program is aliasing of trackers, and a mutation is an O(1) change of one
tracker. A tracker built from a real value carries the `Source` it was read from;
a tracker made during tracing has `source=None`.

Every operation that a kind does not support raises a graph break through
`tx.unsupported(...)`, never a Python error: only tracer bugs raise other exceptions.

Every in-place change of a tracker's state goes through the mutation barrier
(`tx.output.side_effects.mutate(vt)`, or `touch(vt)` for lazily cached state; Note
[Mutation barrier] in graph/side_effects.py), which checks the tracker's `scope` and saves
its state (`_save_state`) for a later `restore` of a checkpoint.

Note [Tracker protocol]: behaviour lives on the value's kind, as CPython's type slots.
Builtins, opcode handlers, the output graph, the residual codegen and the capture ask the
tracker through the methods below and never test its concrete class, so a new kind of
value is one module (its tracker overrides the slots it models, and registers its builder
by type):
- object-protocol slots: `len_impl`, `contains_impl`, `getitem_impl`, `setitem_impl`,
  `iterate` (`iter`), `reverse_iterate` (`reversed`), `next_item` (`next`), `truth`
  (`bool`), `hasattr_impl`, `key_impl` (hash and equality as a dict key or set member),
  `unpack` (the items, for unpacking), `as_kwargs` (`**` unpacking), `enter_with`
  (`with`), `is_none`, `builtin_base_method` (a C method of a builtin base class, such as
  `dict.keys` on a dict subclass, bound to the value); their defaults are CPython's
  generic fallbacks (fold on Python constants, the value's `__len__`/`__getitem__` method,
  a scan of the items, in `vars/object_protocol.py`) or a graph break naming the construct;
- structure: `children()` (the trackers it holds), `sequence_items()`, the kind flags
  `is_tensor` and `kept_in_block` (a `try`/`with` stack slot that resume functions take over),
  `handled_exception` (the slot under an `except` handler's exception), `restored_grad_mode`
  (a grad-mode `with` exit's);
- residual code: `reconstruct(cg)`, `built_once()` (rebuilt into a temporary once),
  `compiled_callee(tx)` (how a graph-broken call to it runs compiled by bytegraph),
  `inlined_function()`, `fixed_callable()`; replay of its writes: `replay_records(cg)`, `replayed_values()`,
  `replay_phase` (Note [Replay records]);
- FX: `as_fx_arg(tx)`.
"""
from __future__ import annotations

import types

from . import factory, object_protocol
from .context import TraceContext

# Note [Speculation scopes]
# Every tracker records the scope it was made in: 0 is the top level of the capture; the
# body of a higher-order op being speculated gets a fresh id (`SideEffects.scope()`,
# nested bodies nest). A tracker with a source stands for an object that existed before
# the capture, so its scope is 0 wherever it is first read. Inside a speculation scope
# the barrier refuses (graph break) a write to a tracker of another scope, and every
# global write: bodies must be functional. The current scope is this module global (set
# only by `SideEffects.scope()`), so creating a tracker costs one global read.
_current_scope = 0

# Note [Replay records]
# A mutable kind replays its own writes (graph/side_effects.py, Note [Side-effect replay]):
# `replay_records(cg)` returns the (push operands, store) pairs that put the real object
# in the tracker's final state, keeping its identity (`src[:] = [...]`, `setattr`, ...);
# `replayed_values()` are the trackers those stores write (for the graph's outputs). The
# log replays the kinds in the order of their `replay_phase`, each phase in write order:
# containers first, then iterators over them (`__setstate__` clamps to the length), then
# object attributes, the log's own global writes, and closure cells.
REPLAY_CONTAINER, REPLAY_ITERATOR, REPLAY_OBJECT, REPLAY_GLOBAL, REPLAY_CELL = range(5)


def set_current_scope(scope: int) -> int:
    """Make `scope` the one new trackers are created in; returns the previous one."""
    global _current_scope
    previous, _current_scope = _current_scope, scope
    return previous


class VariableTracker:
    __slots__ = ("source", "scope")

    #: whether this kind is a tensor in the FX graph (`TensorVariable`)
    is_tensor = False
    #: whether one real object of this kind reached through two sources is one tracker
    #: (mutable containers, user objects, iterators: a mutation through one path is seen
    #: through the other; vars/builder.py `wrap`)
    identity_tracked = False
    #: whether it is an instance of a user class whose Python dunders the tracer runs
    #: (`UserObjectVariable` and its subclasses: `<` in a sort, `str()`, `__next__`)
    is_user_object = False
    #: whether a stack slot a `try`/`with` block keeps may hold it at a graph break that
    #: resumes inside the block (for-loop iterators, grad-mode and user `with` exits)
    kept_in_block = False
    #: for the stack slot PUSH_EXC_INFO leaves under an `except`/`finally` handler's
    #: exception (`HandlerSlotVariable`): `(tracker of the handled exception, line it was
    #: raised at)`, which residual code re-entering the handler at a break makes current
    #: again (Note [Handlers at a break])
    handled_exception = None
    #: for a grad-mode `with` block's exit slot (`WithExitVariable`): the grad mode its exit
    #: restores (Note [Nested breaks inside grad-mode blocks] in translate/breaks.py)
    restored_grad_mode = None
    #: whether rebuilding one made during tracing makes a new object (see `built_once`)
    rebuilt_as_new_object = False
    #: when the side-effect replay writes a mutated one (Note [Replay records])
    replay_phase = REPLAY_CONTAINER
    #: the in-place operator methods (`__ior__`, ...) its `call_method` implements, so that
    #: `a |= b` changes `a` in place instead of rebinding it to `a | b`
    inplace_methods = frozenset()
    #: the operator dunders (`__add__`, ...) answered by the Python methods of its class
    #: (vars/dunders.py), as for instances of user classes
    python_dunders = frozenset()

    def __init__(self, source=None):
        self.source = source
        self.scope = 0 if source is not None else _current_scope

    # ---- undo state (Note [Mutation barrier]) -------------------------------------------
    def _save_state(self):
        """A shallow copy of this tracker's mutable state (every slot but `source`/`scope`)."""
        return tuple([_shallow_copy(getattr(self, name, _UNSET)) for name in _state_slots(type(self))])

    def _restore_state(self, state) -> None:
        """Put back what `_save_state` returned (the saved copies become the state)."""
        for name, value in zip(_state_slots(type(self)), state):
            if value is _UNSET:
                if hasattr(self, name):
                    delattr(self, name)
            else:
                setattr(self, name, value)

    def python_type(self) -> type:
        raise NotImplementedError(type(self).__name__)

    def is_python_constant(self) -> bool:
        return False

    def is_symbolic(self) -> bool:
        """Whether this is a symbolic number (Note [Symbolic sizes] in graph/shapes.py): a graph
        op takes it as a node; `as_python_constant()` specializes it (and guards that)."""
        return False

    def as_python_constant(self):
        raise NotImplementedError(f"{type(self).__name__} is not a Python constant")

    def var_getattr(self, tx: TraceContext, name: str) -> "VariableTracker":
        tx.unsupported(f"attribute '{name}' of {self.describe()}", category="unsupported attribute")

    def call_function(self, tx: TraceContext, args: list, kwargs: dict) -> "VariableTracker":
        tx.unsupported(f"calling {self.describe()}", category="unsupported call")

    def store_attr(self, tx: TraceContext, name: str, value: "VariableTracker") -> None:
        """`obj.name = value` (STORE_ATTR, setattr): record it, visible to later reads."""
        tx.unsupported(f"setting attribute '{name}' of {self.describe()}", category="side effect")

    def delete_attr(self, tx: TraceContext, name: str) -> None:
        """`del obj.name` (DELETE_ATTR, delattr)."""
        tx.unsupported(f"deleting attribute '{name}' of {self.describe()}", category="side effect")

    def call_method(self, tx: TraceContext, name: str, args: list, kwargs: dict) -> "VariableTracker":
        return self.var_getattr(tx, name).call_function(tx, args, kwargs)

    def unpack(self, tx: TraceContext) -> list:
        """The items of an iterable value, for unpacking and unrolled loops."""
        tx.unsupported(f"iterating over {self.describe()}", category="unsupported iteration")

    def iterate(self, tx: TraceContext):
        """`iter(value)` at trace time: an iterator tracker."""
        return factory.iterator_over(self.unpack(tx))

    def reverse_iterate(self, tx: TraceContext):
        """`reversed(value)` at trace time: an iterator tracker."""
        return factory.iterator_over(list(reversed(self.unpack(tx))))

    def next_item(self, tx: TraceContext) -> "VariableTracker | None":
        """`next(iterator)`: the next item, or None when exhausted (iterators only)."""
        tx.unsupported(f"iterating over {self.describe()}", category="unsupported iteration")

    def truth(self, tx: TraceContext) -> bool:
        """`bool(value)` at trace time; data-dependent values break."""
        tx.unsupported(f"truth value of {self.describe()}", category="data-dependent")

    def len_impl(self, tx: TraceContext) -> "VariableTracker":
        """`len(value)`."""
        return object_protocol.generic_len(tx, self)

    def contains_impl(self, tx: TraceContext, item: "VariableTracker") -> "VariableTracker":
        """`item in value`."""
        return object_protocol.generic_contains(tx, self, item)

    def getitem_impl(self, tx: TraceContext, key: "VariableTracker") -> "VariableTracker":
        """`value[key]` (BINARY_SUBSCR, `operator.getitem`)."""
        return object_protocol.generic_getitem(tx, self, key)

    def setitem_impl(self, tx: TraceContext, key: "VariableTracker", value: "VariableTracker") -> None:
        """`value[key] = item` (STORE_SUBSCR, `operator.setitem`)."""
        self.call_method(tx, "__setitem__", [key, value], {})

    def binary_op_impl(self, tx: TraceContext, op, other: "VariableTracker", reflected: bool = False):
        """`op(self, other)` (`op(other, self)` when `reflected`) for a builtin binary or
        comparison operator this kind models between builtin values (`list + list`, `d1 | d2`,
        `==` of containers), or None to let the other operand's kind, then the generic
        rules, answer (as CPython's `nb_add`/`tp_richcompare` slots return NotImplemented)."""
        return None

    def hasattr_impl(self, tx: TraceContext, name: str) -> bool:
        """`hasattr(value, name)`, guarded where the answer comes from a real object."""
        tx.unsupported(f"hasattr() on {self.describe()}", category="unsupported builtin")

    def key_impl(self, tx: TraceContext):
        """The hashable Python value standing for this value as a dict key or set member
        (its hash and equality)."""
        if not self.is_python_constant():
            tx.unsupported(f"using {self.describe()} as a dict key", category="unsupported dict key")
        return self.as_python_constant()

    def sequence_items(self):
        """The items of a tuple or list tracker (`out=(a, b)` of an op), None for other kinds."""
        return None

    def as_kwargs(self, tx: TraceContext) -> dict:
        """`**value` in a call: {name: tracker}."""
        tx.unsupported(f"** unpacking of {self.describe()}", category="unsupported call")

    def enter_with(self, tx: TraceContext) -> tuple:
        """`with value:` (BEFORE_WITH): (the exit callable kept on the stack, what
        `__enter__` returned)."""
        enter = self.var_getattr(tx, "__enter__")
        exit_ = self.var_getattr(tx, "__exit__")
        return exit_, enter.call_function(tx, [], {})

    def is_none(self) -> bool:
        """Whether this is the constant None (POP_JUMP_IF_NONE)."""
        return False

    def children(self):
        """The trackers this value holds (items, attributes, the container of a view or an
        iterator, the parts of a closure): what rebuilding it rebuilds."""
        return ()

    def as_fx_arg(self, tx: TraceContext):
        """This value as an argument of an FX node: a node, a Python constant, or a
        structure of them."""
        return object_protocol.generic_fx_arg(tx, self)

    def built_once(self) -> bool:
        """Whether residual code builds this value once into a temporary, so that aliasing
        survives: values made during tracing whose rebuild makes a new object."""
        return self.rebuilt_as_new_object and self.source is None

    def replay_records(self, cg) -> list:
        """The (push operands, store) pairs replaying this pre-existing value's writes
        (Note [Replay records]); only kinds the side-effect log records define them."""
        raise AssertionError(f"cannot replay a mutation of {self!r}")

    def replayed_values(self):
        """The trackers the replay of this value's writes stores (Note [Replay records])."""
        return (self,)

    def builtin_base_method(self, tx: TraceContext, attr):
        """`attr`, a C method of a builtin class in the MRO of this value's type
        (`OrderedDict.keys` on a dict subclass), bound to this value when this kind models
        that base's state; else None."""
        return None

    def fixed_callable(self):
        """The one real callable object this tracker stands for (a builtin, a torch
        function, an opaque C function), or None."""
        return None

    def compiled_callee(self, tx: TraceContext):
        """How a graph-broken call to this value runs compiled by bytegraph: (a user
        function tracker, the tracker it is bound to or None), or None (called as itself);
        a third item, a real callable, binds them instead of `types.MethodType`."""
        return None

    def inlined_function(self):
        """The real Python function whose frame a call to this value inlines directly (its
        frame's result is the call's result), or None."""
        return None

    def resumed_function(self):
        """A function with the code and globals of the frame a call to this value inlines
        directly, for the resume functions of a nested break (they take the frame's cells as
        arguments, Note [Resumed cells]): the real one, or a stand-in for a function made in
        the trace; None if there is none."""
        return self.inlined_function()

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

    def fixed_callable(self):
        return self.fn

    def truth(self, tx: TraceContext) -> bool:
        if hasattr(type(self.fn), "__bool__") or hasattr(type(self.fn), "__len__"):
            return super().truth(tx)
        return True

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

    def children(self):
        return (self.obj,)

    def describe(self) -> str:
        return f"{self.obj.describe()}.{self.name}"

    def call_function(self, tx: TraceContext, args, kwargs):
        return self.obj.call_method(tx, self.name, args, kwargs)

    def reconstruct(self, cg) -> None:
        cg.reconstruct(self.obj)
        cg.load_attr(self.name)


class _Unset:
    __slots__ = ()


_UNSET = _Unset()
_STATE_SLOTS: dict = {}


def _state_slots(cls: type) -> tuple:
    """The slots of tracker class `cls` that hold state (not `source`/`scope`, not a slot
    that a subclass replaced by a property)."""
    names = _STATE_SLOTS.get(cls)
    if names is None:
        names = tuple(name for klass in cls.__mro__ for name in klass.__dict__.get("__slots__", ())
                      if name not in ("source", "scope")
                      and isinstance(getattr(cls, name, None), types.MemberDescriptorType))
        _STATE_SLOTS[cls] = names
    return names


def _shallow_copy(value):
    kind = type(value)
    if kind is list or kind is dict or kind is set:
        return kind(value)
    return value

