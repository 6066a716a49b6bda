"""Residual bytecode: the instructions the transformed frame runs around the graph.

`PyCodegen` appends `bytecode.Instr`s; trackers rebuild their real values through
`reconstruct(cg)`. Tensors computed by the graph are read from the graph's output
tuple, kept in the local `__bg_graph_out`; an input tensor is reloaded from its source so
identity is preserved.

The graph's inputs are loaded from their sources, which for a model's parameters are
long paths through its modules' dicts (`self._modules['layers']._modules['0']._modules
['qkv']._parameters['weight']`). Every prefix that several of them share (a module's
`_parameters`, a ModuleList's `_modules`) is first loaded once into a local
`__bg_src_N`, and the inputs are read from those locals: fewer instructions to assemble,
and fewer to run per call. The locals serve only the graph call's arguments.
"""
from __future__ import annotations

import torch
from bytecode import Instr, Label
from bytecode.instr import CellVar, FreeVar

from .._bytecode import sequences
from .._bytecode.versions import NULL_BEFORE_CALLABLE
from ..guards.sources import LocalSource

GRAPH_OUT = "__bg_graph_out"
_NO_ARG = object()


class PyCodegen:
    def __init__(self, tx, code, lineno: int):
        self.tx = tx
        self.code = code
        self.lineno = lineno
        self.instructions: list = []
        self.graph_outputs: dict = {}  # id(TensorVariable) -> index into the graph's output tuple
        self.graph_module = None
        self.tempvars: dict = {}  # id(tracker made during tracing) -> local holding its real value
        self.source_locals: dict = {}  # Source -> local holding its value, while the graph's inputs load
        self.unbinds: list = []  # (Label, names kept) of `unbind_locals_except`
        # At a break: id(CellVariable) -> the root frame's own cell variable it stands for, and
        # the temporaries holding the contents to write into those cells (Note [Frame cells at
        # a break] in translate/breaks.py).
        self.frame_cells: dict = {}
        self.frame_cell_writes: dict = {}
        self.hooks_emitted = False  # Note [Hook replay] in vars/hooks/tensor.py

    def unbind_locals_except(self, keep) -> None:
        """Here, unbind every local that the code before this point stored, except `keep`
        (the user's locals): user code that runs on in the frame must not see the residual
        code's temporaries. Expanded by `finish`, as the graph call is emitted last."""
        label = Label()
        self.instructions.append(label)
        self.unbinds.append((label, keep))

    def finish(self) -> list:
        """The instructions to assemble, with `unbind_locals_except` expanded (each name
        stored None first: a DELETE_FAST of an unbound local would raise)."""
        out = self.instructions
        for label, keep in self.unbinds:
            at = out.index(label)
            stored = (i.arg for i in out[:at] if isinstance(i, Instr) and i.name == "STORE_FAST")
            unbind = []
            for name in dict.fromkeys(n for n in stored if n not in keep):
                unbind += [Instr("LOAD_CONST", None), Instr("STORE_FAST", name), Instr("DELETE_FAST", name)]
            out = [*out[:at], *unbind, *out[at:]]
        return out

    def _emit(self, opname: str, arg=_NO_ARG) -> None:
        if arg is _NO_ARG:
            self.instructions.append(Instr(opname, lineno=self.lineno))
        else:
            self.instructions.append(Instr(opname, arg, lineno=self.lineno))

    def load_const(self, value) -> None:
        self._emit("LOAD_CONST", value)

    def load_fast(self, name: str) -> None:
        if name in self.code.co_cellvars:
            self._emit("LOAD_DEREF", CellVar(name))
        elif name in self.code.co_freevars:
            self._emit("LOAD_DEREF", FreeVar(name))
        else:
            self._emit("LOAD_FAST", name)

    def store_fast(self, name: str) -> None:
        self._emit("STORE_FAST", name)

    def load_deref(self, name: str) -> None:
        self._emit("LOAD_DEREF", FreeVar(name) if name in self.code.co_freevars else CellVar(name))

    def load_global(self, name: str, push_null: bool = False) -> None:
        """`LOAD_GLOBAL name`; with `push_null`, for a call: the interpreter puts the NULL
        where its calls take it (below the global before 3.13, above it on 3.13)."""
        self._emit("LOAD_GLOBAL", (push_null, name))

    def load_globals_dict(self) -> None:
        self.load_const(self.tx.f_globals)

    def load_attr(self, name: str) -> None:
        self.instructions.append(sequences.load_attr(name, lineno=self.lineno))

    def binary_subscr(self) -> None:
        self._emit("BINARY_SUBSCR")

    def build(self, opname: str, count: int) -> None:
        self._emit(opname, count)

    def push_null(self) -> None:
        """Push a NULL stack slot of the translator's stack model (a call's callable is pushed
        with `push_callable`, which places the NULL)."""
        self._emit("PUSH_NULL")

    def push_callable(self, load) -> None:
        """Push the callable of a following `call(n)`: `load()` emits the instructions that
        leave it on top of the stack, and the NULL a call of a plain callable takes goes below
        it (3.11, 3.12) or above it (3.13) (`versions.NULL_BEFORE_CALLABLE`)."""
        if NULL_BEFORE_CALLABLE:
            self.push_null()
            load()
        else:
            load()
            self.push_null()

    def push_callable_const(self, fn) -> None:
        """`push_callable` of the constant `fn`."""
        self.push_callable(lambda: self.load_const(fn))

    def load_method(self, name: str) -> None:
        self.instructions.append(sequences.load_method(name, lineno=self.lineno))

    def call_method0(self, name: str) -> None:
        """Call the zero-argument method `name` of the object on top of the stack."""
        self.load_method(name)
        self.call(0)

    def load_generic_attr(self, push_base, attr: str) -> None:
        """`object.__getattribute__(<what push_base() loads>, attr)`: an attribute read past
        the class's Python `__getattribute__` (`GenericAttrSource`)."""
        self.push_callable_const(object.__getattribute__)
        push_base()
        self.load_const(attr)
        self.call(2)

    def call(self, nargs: int, kw_names: tuple = ()) -> None:
        """Call the callable below `nargs` arguments (`push_callable`), the last
        `len(kw_names)` of them passed by those keywords."""
        self.instructions += sequences.call(nargs, kw_names, lineno=self.lineno)

    def return_value(self) -> None:
        self._emit("RETURN_VALUE")

    def load_source(self, source) -> None:
        """Load `source`'s value: from the local it is cached in, else along its path."""
        name = self.source_locals.get(source)
        if name is None:
            source.reconstruct(self)
        else:
            self.load_fast(name)

    def call_graph(self, graph_name: str, input_sources: list) -> None:
        """`__bg_graph_out = graph_name(*inputs)`, shared prefixes of the inputs' sources
        cached in locals first (module docstring)."""
        self._cache_shared_prefixes(input_sources)
        self.load_global(graph_name, push_null=True)
        for src in input_sources:
            self.load_source(src)
        self.call(len(input_sources))
        self.store_fast(GRAPH_OUT)
        self.source_locals.clear()  # later code may run after replayed writes change these paths

    def _cache_shared_prefixes(self, sources: list) -> None:
        """Store in a local every non-root prefix that would otherwise be loaded twice or more:
        one used by two or more distinct sources directly, or an input that is also a prefix.
        A prefix used only through one cached source is loaded once anyway, and is not cached."""
        parent_of: dict = {}  # every source on the inputs' paths -> its prefix (None: a root)
        users: dict = {}  # prefix -> the distinct sources that read from it directly
        for src in sources:
            node = src
            while node not in parent_of:
                parent = node.prefix()
                parent_of[node] = parent
                if parent is None:
                    break
                users.setdefault(parent, set()).add(node)
                node = parent
        inputs = set(sources)
        done = set()
        for src in sources:
            chain = []
            node = parent_of[src]
            while node is not None and parent_of[node] is not None and node not in done:
                chain.append(node)
                node = parent_of[node]
            for prefix in reversed(chain):  # outermost first: inner ones load from it
                done.add(prefix)
                if len(users[prefix]) + (prefix in inputs) >= 2:
                    self.load_source(prefix)
                    name = f"__bg_src_{len(self.source_locals)}"
                    self.store_fast(name)
                    self.source_locals[prefix] = name

    def load_graph_output(self, index: int) -> None:
        """`__bg_graph_out[index]`."""
        self.load_fast(GRAPH_OUT)
        self.load_const(index)
        self.binary_subscr()

    def reconstruct(self, vt) -> None:
        index = self.graph_outputs.get(id(vt))
        if index is not None:
            self.load_graph_output(index)
            return
        if vt.built_once():
            # Note [Side-effect replay]: a value made during tracing is built once, so
            # every path that reaches it (return value, replayed writes) gets one object.
            name = self.tempvars.get(id(vt))
            if name is not None:
                self.load_fast(name)
                return
            vt.reconstruct(self)
            if id(vt) not in self.tempvars:  # (one that can be part of a cycle kept itself: `keep_built`)
                self.keep_built(vt)
            return
        vt.reconstruct(self)

    def keep_built(self, vt) -> None:
        """Keep the object on top of the stack, just built for `vt`, in a temporary that
        every later `reconstruct(vt)` loads (Note [Side-effect replay]); a tracker whose
        object can reach itself (a cell holding a function that closes over it) calls it
        before building what it holds."""
        name = f"__bg_tmp_{len(self.tempvars)}"
        self.tempvars[id(vt)] = name
        self._emit("COPY", 1)
        self.store_fast(name)

    # ---- emitters for side-effect replay (graph/side_effects.py) -----------------------
    def reconstruct_items(self, items, build_opcode: str) -> None:
        for item in items:
            self.reconstruct(item)
        self.build(build_opcode, len(items))

    def store_subscr(self) -> None:
        self._emit("STORE_SUBSCR")

    def delete_subscr(self) -> None:
        self._emit("DELETE_SUBSCR")

    def store_attr(self, name: str) -> None:
        self._emit("STORE_ATTR", name)

    def delete_attr(self, name: str) -> None:
        self._emit("DELETE_ATTR", name)

    def store_global(self, name: str) -> None:
        self._emit("STORE_GLOBAL", name)

    def delete_global(self, name: str) -> None:
        self._emit("DELETE_GLOBAL", name)

    def store_deref(self, name: str) -> None:
        self._emit("STORE_DEREF", FreeVar(name) if name in self.code.co_freevars else CellVar(name))

    def delete_deref(self, name: str) -> None:
        self._emit("DELETE_DEREF", FreeVar(name) if name in self.code.co_freevars else CellVar(name))

    def load_closure(self, name: str) -> None:
        """Push the cell object itself of the frame's cell or free variable `name`."""
        var = FreeVar(name) if name in self.code.co_freevars else CellVar(name)
        self.instructions.append(sequences.load_closure(var, lineno=self.lineno))

    def load_frame_cell(self, vt) -> bool:
        """Push the root frame's own cell that the cell tracker `vt` stands for at a break
        (Note [Frame cells at a break] in translate/breaks.py), first loading its traced
        contents into a temporary that `write_frame_cells` stores into it; False if `vt`
        stands for none."""
        name = self.frame_cells.get(id(vt))
        if name is None:
            return False
        if name not in self.frame_cell_writes:
            self.frame_cell_writes[name] = None  # first: the contents may be a closure over this cell
            contents = vt.known_contents()
            if contents is not None and not _is_own_argument(contents, name):
                temp = f"__bg_cell_{name}"
                self.reconstruct(contents)
                self.store_fast(temp)
                self.frame_cell_writes[name] = temp
        self.load_closure(name)
        return True

    def write_frame_cells(self) -> None:
        """Store the contents loaded by `load_frame_cell` into the root frame's cells."""
        for name, temp in self.frame_cell_writes.items():
            if temp is not None:
                self.load_fast(temp)
                self.store_deref(name)

    def pop_top(self) -> None:
        self._emit("POP_TOP")

    def set_grad_mode(self, mode: bool) -> None:
        """`torch._C._set_grad_enabled(mode)`, its result dropped: the real grad mode for the
        eager code that follows."""
        self.push_callable_const(torch._C._set_grad_enabled)
        self.load_const(mode)
        self.call(1)
        self.pop_top()

    def copy(self, depth: int) -> None:
        """Push the stack item `depth` deep (1: the top) again."""
        self._emit("COPY", depth)

    def call_and_pop(self, nargs: int, kw_names: tuple = ()) -> None:
        self.call(nargs, kw_names)
        self.pop_top()

    def call_and_pop_2(self) -> None:
        self.call_and_pop(2)

    def helper_effect(self, helper, source, push_new) -> tuple:
        """The replay record `helper(<source>, <new>)` (Note [Replay records]): `push_new`
        pushes the new state."""
        def push():
            self.push_callable_const(helper)
            source.reconstruct(self)
            push_new()
        return push, self.call_and_pop_2


def _is_own_argument(contents, name: str) -> bool:
    """Whether `contents` is the argument `name` itself, which the frame's MAKE_CELL put
    into that cell (the cell already holds it)."""
    return contents.source == LocalSource(name)
