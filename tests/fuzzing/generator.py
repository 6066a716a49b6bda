"""Seeded generator of fuzz programs: Python source of a module defining `fuzzed(x, y, n, st)`
(plus the globals, classes, helpers and generators it uses) and `make_inputs(call)`.

One seed and one profile (the set of enabled `FEATURES`) give one program, always the same.
Every program is valid Python and terminates: loops are bounded by counters, generators
yield a bounded number of items, there is no recursion. A program may raise in eager (an
uncaught `raise`, a dict changed during iteration), which is fine: the compiled run must
raise the same.

How values stay well typed: the generator keeps two pools of names per scope, tensors (all
float, shape (3, 4)) and small ints. Every snippet reads names from the pools and adds the
names it defines; names defined inside a nested block (a loop, a `with`, a `try`) stay local
to that block, so code after the block only reads names bound on every path.

Graph breaks (`BREAK_KINDS`) are placed between any two statements, and inside the blocks
of the constructs listed in `PLACES` (loops, `with`, `try`, inlined helpers at depth 1-3,
generators, comprehensions); a break inside a block is emitted only when every enclosing
place is enabled in the profile.
"""
from __future__ import annotations

import contextlib
import random
from dataclasses import dataclass, field

# feature -> what the generator writes when it is enabled
CONSTRUCTS = {
    "tensor": "tensor ops with autograd (always on)",
    "scalars": "Python int/float arithmetic mixed into tensor ops",
    "containers": "lists, dicts, sets, tuples: building, indexing, in-place methods",
    "dict_views": "keys()/values()/items() kept alive across mutations of their dict",
    "live_iterators": "iter/enumerate/zip/reversed/genexpr over a list kept alive across its mutation",
    "dict_iter_raise": "a dict iterator advanced after its dict changed size (RuntimeError in eager)",
    "classes": "user classes: attributes, methods, properties, instances escaping into the state",
    "state_arg": "mutation of the `st` argument (a user object holding a list, a dict, an int)",
    "closures": "nested functions reading and writing (nonlocal) the frame's variables",
    "globals": "module globals read, rebound (`global`) and mutated in place",
    "defaults": "default arguments, including a mutable default that accumulates across calls",
    "varargs": "*args/**kwargs functions, star calls and keyword-only arguments",
    "generators": "generator functions consumed by sum/next/list, partly before a break",
    "yield_from": "`yield from` inside generator functions",
    "exceptions": "exceptions raised one or two calls deep and caught by try/except",
    "raises": "an uncaught raise (on some calls), so the program raises in eager",
    "try_finally": "try/finally blocks whose finally mutates outer state",
    "ctx_manager": "user context managers (__enter__/__exit__ logging into a global)",
    "no_grad": "torch.no_grad() / torch.enable_grad() blocks",
    "hooks": "Tensor.register_hook on the input and on intermediates, handles removed or kept",
    "modules": "small nn.Modules (Linear/Sequential, a user Module with a buffer) as globals",
    "itertools": "itertools.chain/islice/accumulate objects, partly consumed before a break",
    "collections": "collections.deque/defaultdict/OrderedDict/Counter",
    "globals_dict": "globals the function creates and reads back through globals()/vars(module)/"
                    "sys.modules[__name__].__dict__, deleted on some calls (presence changes between calls)",
    "dynamic_raise": "ints varying across calls (call counter, input size, `n`) in arithmetic/indexing that "
                     "raises on some calls, inside try/except ZeroDivisionError/IndexError logging in the handler",
    "effects_raise": "global rebinds, list/dict/attribute/tensor mutations, then (on some calls) an exception "
                     "leaving the function",
    "custom_exc": "an exception class with a custom __init__ (FuzzError(msg, code)) raised, caught, re-raised "
                  "(bare, by name, chained) across graph breaks, `e.code` read in the handler",
}
BREAK_KINDS = {
    "brk_print": "print(...)",
    "brk_item": "int(t.sum().item() > 0) used in int arithmetic",
    "brk_tensor_if": "if on a tensor",
    "brk_tensor_while": "while on a tensor (bounded by a counter)",
    "brk_graph_break": "bytegraph.graph_break()",
    "brk_unsupported": "a call bytegraph does not trace (time.perf_counter())",
}
PLACES = {
    "in_for": "a break inside a for loop (with break/continue)",
    "in_while": "a break inside a while loop (with break/continue)",
    "in_with": "a break inside a with block (user context manager or no_grad)",
    "in_try": "a break inside a try body (try/except or try/finally)",
    "in_helper": "a break inside an inlined helper at depth 1-3 (positional or keyword call)",
    "in_generator": "a break inside a generator function's body",
    "in_comprehension": "a break inside a list/dict comprehension",
    "in_closure": "a break inside a nested function",
    "in_method": "a break inside a user method or a module's forward",
    "in_except": "a break inside an except handler (before `e.code` is read or the exception re-raised)",
}
FEATURES = {**CONSTRUCTS, **BREAK_KINDS, **PLACES}
FULL_PROFILE = frozenset(FEATURES)

PREAMBLE = '''\
import collections
import itertools
import sys
import time

import torch

import bytegraph

LOG = []


class State:
    def __init__(self, call):
        self.log = [call]
        self.count = call
        self.d = {{"a": call}}
        self.items = list(range(call + 1))


def make_inputs(call):
    g = torch.Generator().manual_seed({seed})
    x = torch.randn(3, 4, generator=g, requires_grad=True)
    y = torch.randn(3, 4, generator=g)
    return (x, y, {n0} + call // 2, State(call)), {{}}
'''


@dataclass
class Frame:
    """The function being written: its lines, the globals it rebinds, its name pools."""
    tensors: list
    ints: list
    root: bool = False
    generator: bool = False
    lines: list = field(default_factory=list)
    globals: set = field(default_factory=set)


class ProgramGenerator:
    def __init__(self, seed: int, profile=FULL_PROFILE, size: int = 8):
        self.r = random.Random(seed)
        self.seed = seed
        self.on = frozenset(profile) | {"tensor"}
        self.size = size
        self.top: list[str] = []
        self.k = 0
        self.places: list[str] = []
        self.no_grad = 0
        self.frame = Frame(["x", "y"], ["n"], root=True)
        self.breaks = [b for b in BREAK_KINDS if b in self.on]
        self.snippets = [(name, feat, w) for name, feat, w in _SNIPPETS if feat in self.on]
        self.defined: set[str] = set()

    # ---- helpers --------------------------------------------------------------------------
    def fresh(self, prefix: str) -> str:
        self.k += 1
        return f"{prefix}{self.k}"

    def t(self) -> str:
        return self.r.choice(self.frame.tensors)

    def n(self) -> str:
        return self.r.choice(self.frame.ints)

    def t_mut(self) -> str:
        """A tensor name that may be rebound (never the input `x`, which stays a leaf)."""
        return self.r.choice([t for t in self.frame.tensors if t != "x"])

    def emit(self, line: str, ind: int) -> None:
        self.frame.lines.append("    " * ind + line)

    def new_t(self, expr: str, ind: int) -> str:
        v = self.fresh("t")
        self.emit(f"{v} = {expr}", ind)
        self.frame.tensors.append(v)
        return v

    def new_n(self, expr: str, ind: int) -> str:
        v = self.fresh("n")
        self.emit(f"{v} = ({expr}) % 7 - 3", ind)
        self.frame.ints.append(v)
        return v

    def uses_global(self, name: str) -> None:
        self.frame.globals.add(name)

    def top_def(self, lines: list[str]) -> None:
        self.top.append("\n".join(lines))

    @contextlib.contextmanager
    def scope(self):
        """Names bound inside stay inside (the block may not run, or stop early)."""
        nt, ni = len(self.frame.tensors), len(self.frame.ints)
        yield
        del self.frame.tensors[nt:], self.frame.ints[ni:]

    @contextlib.contextmanager
    def place(self, name: str):
        self.places.append(name)
        try:
            yield
        finally:
            self.places.pop()

    def breaks_allowed(self) -> bool:
        return bool(self.breaks) and all(p in self.on for p in self.places)

    @contextlib.contextmanager
    def function(self, tensors, ints, generator=False):
        outer = self.frame
        self.frame = Frame(list(tensors), list(ints), generator=generator)
        try:
            yield self.frame
        finally:
            self.frame = outer

    def body_of(self, frame: Frame, header: str) -> list[str]:
        lines = [header]
        if frame.globals:
            lines.append(f"    global {', '.join(sorted(frame.globals))}")
        return lines + frame.lines

    # ---- statements -----------------------------------------------------------------------
    def stmts(self, ind: int, count: int, force_break: bool = False) -> None:
        for i in range(count):
            if self.breaks_allowed() and (self.r.random() < 0.3 or (force_break and i == count - 1)):
                self.brk(ind)
            else:
                self.snippet(ind)

    def block(self, ind: int, place: str, count: int = 2) -> None:
        with self.scope(), self.place(place):
            self.stmts(ind, self.r.randint(1, count), force_break=self.r.random() < 0.6)

    def snippet(self, ind: int) -> None:
        total = sum(w for _, _, w in self.snippets)
        x = self.r.uniform(0, total)
        for name, _, w in self.snippets:
            x -= w
            if x <= 0:
                break
        getattr(self, "s_" + name)(ind)

    def brk(self, ind: int) -> None:
        kind = self.r.choice(self.breaks)
        r = self.r
        if kind == "brk_print":
            self.emit(f"print({str(self.fresh('p'))!r}, {self.n()}, tuple({self.t()}.shape))", ind)
        elif kind == "brk_item":
            n = self.n()
            self.emit(f"{n} = ({n} + int({self.t()}.sum().item() > 0)) % 7 - 3", ind)
        elif kind == "brk_tensor_if":
            a, b = self.t(), self.t_mut()
            self.emit(f"if {a}.sum() > {r.randint(-2, 2)}:", ind)
            self.emit(f"{b} = {b} + 1", ind + 1)
            self.emit("else:", ind)
            self.emit(f"{b} = {b} * 0.5", ind + 1)
        elif kind == "brk_tensor_while":
            c, a = self.fresh("c"), self.t_mut()
            self.emit(f"{c} = 0", ind)
            self.emit(f"while {a}.abs().sum() > 1 and {c} < 3:", ind)
            self.emit(f"{c} += 1", ind + 1)
            self.emit(f"{a} = {a} * 0.5", ind + 1)
        elif kind == "brk_graph_break":
            self.emit("bytegraph.graph_break()", ind)
        else:
            self.emit(f"{self.fresh('u')} = time.perf_counter()", ind)

    # ---- plain tensor and scalar work ---------------------------------------------------------
    def s_binop(self, ind):
        self.new_t(f"{self.t()} {self.r.choice(['+', '-', '*'])} {self.t()}", ind)

    def s_unary(self, ind):
        fn = self.r.choice(["torch.sin", "torch.tanh", "torch.relu", "torch.sigmoid", "torch.cos"])
        self.new_t(f"{fn}({self.t()})", ind)

    def s_reduce(self, ind):
        red = self.r.choice(["sum(0, keepdim=True)", "mean(1, keepdim=True)", "amax(0, keepdim=True)"])
        self.new_t(f"({self.t()}.{red} + {self.t()}).softmax(-1)", ind)

    def s_inplace(self, ind):
        v = self.new_t(f"{self.t()}.clone()", ind)
        self.emit(f"{v}.{self.r.choice(['add_', 'mul_', 'sub_'])}({self.n()})", ind)
        self.emit(f"{v}[0] = {self.t()}[1]", ind)

    def s_intop(self, ind):
        op = self.r.choice(["+", "-", "*", "//", "%"])
        rhs = f"({self.n()} % 5 + 1)" if op in ("//", "%") else self.n()
        self.new_n(f"{self.n()} {op} {rhs}", ind)

    def s_float(self, ind):
        f = self.fresh("f")
        self.emit(f"{f} = {self.n()} * 0.5 + {self.r.choice(['0.25', '1.5', '-0.75'])}", ind)
        self.new_t(f"{self.t()} * {f} + {self.n()}", ind)

    def s_int_if(self, ind):
        a = self.t_mut()
        self.emit(f"if {self.n()} {self.r.choice(['>', '<', '=='])} {self.n()}:", ind)
        self.emit(f"{a} = {a} * 2 + {self.t()}", ind + 1)
        self.emit("else:", ind)
        self.emit(f"{a} = {a} - {self.n()}", ind + 1)

    # ---- loops ----------------------------------------------------------------------------
    def s_for(self, ind):
        i, a = self.fresh("i"), self.t_mut()
        self.emit(f"for {i} in range({self.n()} % 3 + 2):", ind)
        with self.scope():
            self.frame.ints.append(i)
            self.emit(f"{a} = {a} + {i} * {self.t()}.tanh()", ind + 1)
            self.block(ind + 1, "in_for")
            self.loop_exit(ind + 1, i)

    def s_while(self, ind):
        c, a = self.fresh("w"), self.t_mut()
        self.emit(f"{c} = 0", ind)
        self.emit(f"while {c} < {self.n()} % 3 + 2:", ind)
        self.emit(f"{c} += 1", ind + 1)
        with self.scope():  # the counter is not in the pool: a break must not rebind it
            self.emit(f"{a} = {a} * 0.9 + {c}", ind + 1)
            self.block(ind + 1, "in_while")
            self.loop_exit(ind + 1, c)

    def loop_exit(self, ind, i):
        kind = self.r.choice(["break", "continue", None])
        if kind:
            self.emit(f"if {i} == {self.r.randint(1, 2)}:", ind)
            self.emit(kind, ind + 1)
            self.snippet(ind)

    # ---- containers -----------------------------------------------------------------------
    def s_list(self, ind):
        lst = self.fresh("l")
        self.emit(f"{lst} = [{self.t()}, {self.t()}, {self.n()}]", ind)
        op = self.r.choice(["append", "insert", "pop", "setitem", "slice", "del"])
        if op == "append":
            self.emit(f"{lst}.append({self.t()} * 2)", ind)
        elif op == "insert":
            self.emit(f"{lst}.insert(1, {self.t()} + 1)", ind)
        elif op == "pop":
            self.new_n(f"{lst}.pop() + len({lst})", ind)
        elif op == "setitem":
            self.emit(f"{lst}[0] = {lst}[1] * {self.n()}", ind)
        elif op == "slice":
            self.emit(f"{lst}[1:] = [{self.t()}]", ind)
        else:
            self.emit(f"del {lst}[-1]", ind)
        self.new_t(f"{lst}[0] + {lst}[1] * len({lst})", ind)

    def s_dict(self, ind):
        d = self.fresh("d")
        self.emit(f"{d} = {{'a': {self.t()}, 'k': {self.n()}}}", ind)
        self.emit(f"{d}['b'] = {d}['a'] * {d}['k']", ind)
        if self.r.random() < 0.5:
            self.emit(f"{d}.update(c={self.t()})", ind)
        self.new_t(f"sum(v for key, v in {d}.items() if key != 'k')", ind)

    def s_set_tuple(self, ind):
        s, tp = self.fresh("s"), self.fresh("tp")
        self.emit(f"{s} = {{{self.n()}, {self.n()}, 3}}", ind)
        self.emit(f"{s}.add({self.n()} % 4)", ind)
        self.emit(f"{tp} = ({self.t()}, len({s}), {self.n()} in {s})", ind)
        self.new_t(f"{tp}[0] * {tp}[1] + int({tp}[2])", ind)

    def s_dict_views(self, ind):
        d, ks, vs, its = self.fresh("d"), self.fresh("ks"), self.fresh("vs"), self.fresh("its")
        self.emit(f"{d} = {{'a': {self.t()}, 'b': {self.t()}}}", ind)
        self.emit(f"{ks}, {vs}, {its} = {d}.keys(), {d}.values(), {d}.items()", ind)
        self.maybe_break(ind)
        self.emit(f"{d}[{self.r.choice(['c', 'a'])!r}] = {self.t()} * 3", ind)
        if self.r.random() < 0.4:
            self.emit(f"del {d}['b']", ind)
        self.maybe_break(ind)
        self.new_n(f"len({ks}) + len({its}) + ('c' in {ks})", ind)
        self.new_t(f"sum({vs}) + sum(v for k, v in {its})", ind)

    def s_dict_iter_raise(self, ind):
        d, it = self.fresh("d"), self.fresh("di")
        self.emit(f"{d} = {{'a': {self.t()}, 'b': {self.n()}}}", ind)
        self.emit(f"{it} = iter({d})", ind)
        self.emit(f"next({it})", ind)
        self.emit(f"if {self.n()} % 2 == 0:", ind)
        self.emit(f"{d}['z'] = 1", ind + 1)
        self.maybe_break(ind)
        self.emit(f"LOG.append(next({it}))", ind)

    def s_live_iter(self, ind):
        lst, it = self.fresh("l"), self.fresh("it")
        self.emit(f"{lst} = [{self.t()}, {self.t()}, {self.t()}]", ind)
        kind = self.r.choice(["iter", "enumerate", "zip", "reversed", "genexpr"])
        make = {
            "iter": f"iter({lst})", "enumerate": f"enumerate({lst})", "zip": f"zip({lst}, range(10))",
            "reversed": f"reversed({lst})", "genexpr": f"(v * 2 for v in {lst})",
        }[kind]
        self.emit(f"{it} = {make}", ind)
        first = self.fresh("v")
        self.emit(f"{first} = next({it})", ind)
        self.maybe_break(ind)
        mut = self.r.choice(["append", "setitem", "pop"]) if kind != "reversed" else "setitem"
        if mut == "append":
            self.emit(f"{lst}.append({self.t()} + 1)", ind)
        elif mut == "setitem":
            self.emit(f"{lst}[-1] = {self.t()} - 1", ind)
        else:
            self.emit(f"{lst}.pop()", ind)
        self.maybe_break(ind)
        rest = self.fresh("r")
        self.emit(f"{rest} = list({it})", ind)
        if kind in ("enumerate", "zip"):
            pair, pos = ("j, v", 1) if kind == "enumerate" else ("v, j", 0)
            self.new_t(f"sum(v * j for {pair} in {rest}) + {first}[{pos}]", ind)
            self.new_n(f"len({rest})", ind)
        else:
            self.new_t(f"sum({rest}, {first})", ind)

    def maybe_break(self, ind):
        if self.breaks_allowed() and self.r.random() < 0.4:
            self.brk(ind)

    # ---- classes, state, closures, globals -----------------------------------------------------
    def s_klass(self, ind):
        k = self.fresh("K")
        brk = []
        if self.breaks_allowed_in("in_method"):
            with self.function(["a"], ["self.n"]):
                self.brk(2)
                brk = self.frame.lines
        self.top_def([
            f"class {k}:", "    scale = 2", "", "    def __init__(self, w):", "        self.w = w",
            "        self.n = 0", "", "    def step(self, a):", "        self.n += 1", *brk,
            "        return a * self.w + self.scale", "", "    @property", "    def double(self):",
            "        return self.w * 2",
        ])
        o = self.fresh("o")
        self.emit(f"{o} = {k}({self.t()})", ind)
        self.new_t(f"{o}.step({self.t()}) + {o}.double", ind)
        self.emit(f"{o}.tag = {self.n()}", ind)
        if self.frame.root and "state_arg" in self.on and self.r.random() < 0.5:
            self.emit(f"st.obj = {o}", ind)
        self.new_n(f"{o}.n + {o}.tag", ind)

    def breaks_allowed_in(self, place):
        with self.place(place):
            return self.breaks_allowed() and self.r.random() < 0.6

    def s_state(self, ind):
        if not self.frame.root:
            self.emit(f"LOG.append({self.n()})", ind)
            return
        op = self.r.choice(["log", "count", "dict", "attr"])
        if op == "log":
            self.emit(f"st.log.append({self.n()})", ind)
        elif op == "count":
            self.emit(f"st.count += {self.n()}", ind)
        elif op == "dict":
            self.emit(f"st.d[{self.r.choice(['a', 'b'])!r}] = {self.t()}.sum()", ind)
        else:
            self.emit(f"st.extra = len(st.log) + {self.n()}", ind)
        self.new_n("st.count + len(st.log)", ind)

    def s_closure(self, ind):
        acc, fn = self.fresh("acc"), self.fresh("bump")
        self.emit(f"{acc} = {self.n()}", ind)
        self.emit(f"def {fn}(d):", ind)
        self.emit(f"nonlocal {acc}", ind + 1)
        self.emit(f"{acc} = ({acc} + d) % 5", ind + 1)
        if self.breaks_allowed_in("in_closure"):  # the closure's own names: it must not rebind the frame's
            outer = self.t()
            with self.function(["zc"], ["d"]) as fr:
                self.brk(ind + 1)
            self.emit(f"zc = {outer} + 0", ind + 1)
            self.frame.lines.extend(fr.lines)
        self.emit(f"return {acc}", ind + 1)
        self.new_n(f"{fn}({self.n()})", ind)
        self.maybe_break(ind)
        self.new_n(f"{fn}(2) + {acc}", ind)
        sc = self.fresh("sc")
        a = self.t()
        self.emit(f"def {sc}(z):", ind)
        self.emit(f"return z * {a} + {acc}", ind + 1)
        self.new_t(f"{sc}({self.t()})", ind)

    def s_global(self, ind):
        g = self.fresh("G")
        self.top_def([f"{g} = {self.r.randint(0, 3)}", f"{g}T = torch.ones(3, 4)"])
        op = self.r.choice(["rebind", "inplace", "read"])
        if op == "rebind":
            self.uses_global(g)
            self.emit(f"{g} = ({g} + {self.n()}) % 5", ind)
        elif op == "inplace":
            self.emit(f"{g}T.mul_(0.5).add_({self.n()})", ind)
        self.new_t(f"{self.t()} * {g} + {g}T", ind)

    def s_defaults(self, ind):
        f = self.fresh("df")
        self.top_def([f"def {f}(a, k=2, seen=[], *, scale=1.5):", "    seen.append(k)",
                      "    return a * scale + k * len(seen)"])
        call = self.r.choice([f"{f}({self.t()})", f"{f}({self.t()}, {self.n()})",
                              f"{f}({self.t()}, scale={self.n()})", f"{f}(a={self.t()}, k=1)"])
        self.new_t(call, ind)

    def s_varargs(self, ind):
        f = self.fresh("va")
        self.top_def([f"def {f}(a, *rest, scale=1.0, **kw):", "    out = a * scale",
                      "    for r in rest:", "        out = out + r", "    return out + kw.get('bias', 0) * len(kw)"])
        call = self.r.choice([
            f"{f}({self.t()}, {self.t()}, {self.t()}, scale=0.5, bias={self.n()})",
            f"{f}(*[{self.t()}, {self.t()}], **{{'scale': 2.0}})",
            f"{f}({self.t()}, *({self.t()},), bias=1, other={self.n()})",
        ])
        self.new_t(call, ind)

    # ---- helpers with breaks at depth 1-3 --------------------------------------------------------
    def s_helper(self, ind):
        if "in_helper" in self.places:  # helpers call helpers only along one chain (depth <= 3)
            return self.s_binop(ind)
        base, depth = self.fresh("h"), self.r.randint(1, 3)
        with self.place("in_helper"):
            for level in range(depth, 0, -1):
                with self.function(["a"], ["k"]) as fr:
                    self.stmts(1, self.r.randint(1, 2), force_break=level == depth)
                    if level < depth:
                        call = self.r.choice([f"{base}_{level + 1}({self.t()}, {self.n()})",
                                              f"{base}_{level + 1}(k={self.n()}, a={self.t()})"])
                        self.new_t(call, 1)
                    self.emit(f"return {self.t()} * 0.5 + {self.t()}", 1)
                self.top_def(self.body_of(fr, f"def {base}_{level}(a, k):"))
        call = self.r.choice([f"{base}_1({self.t()}, {self.n()})", f"{base}_1(a={self.t()}, k={self.n()})",
                              f"{base}_1({self.t()}, k={self.n()})"])
        self.new_t(call, ind)

    def s_comprehension(self, ind):
        with self.place("in_comprehension"):
            brk = self.breaks_allowed()
        i = self.fresh("i")
        kind = self.r.choice(["print", "item", "graph_break", "helper"]) if brk else "plain"
        a, b = self.t(), self.t()
        if kind == "print":
            cond = f" if (print('c', {i}) or True)"
        elif kind == "item":
            cond = f" if {b}.sum().item() > -100"
        elif kind == "graph_break":
            cond = " if bytegraph.graph_break() is None"
        else:
            cond = ""
        if kind == "helper":
            with self.function(["a"], ["k"]) as fr:
                self.brk(1)
                self.emit("return a * k", 1)
            h = self.fresh("ch")
            self.top_def(self.body_of(fr, f"def {h}(a, k):"))
            elem = f"{h}({a}, {i})"
        else:
            elem = f"{a} * {i} + {b}"
        c = self.fresh("cl")
        if self.r.random() < 0.5:
            self.emit(f"{c} = [{elem} for {i} in range(3){cond}]", ind)
        else:
            self.emit(f"{c} = list({{{i}: {elem} for {i} in range(3){cond}}}.values())", ind)
        self.new_t(f"sum({c}, {a} * 0) + len({c})", ind)

    # ---- generators ------------------------------------------------------------------------------
    def s_generator(self, ind):
        g = self.fresh("gen")
        with self.function(["a"], ["k"], generator=True) as fr, self.place("in_generator"):
            self.emit("for i in range(k % 3 + 1):", 1)
            self.emit("LOG.append(i)", 2)
            self.emit("yield a * (i + 1)", 2)
            if self.breaks_allowed() and self.r.random() < 0.7:
                self.brk(2)
            if "yield_from" in self.on and self.r.random() < 0.5:
                self.emit("yield from [a.sin(), a.cos()]", 1)
        self.top_def(self.body_of(fr, f"def {g}(a, k):"))
        if self.r.random() < 0.5:
            self.new_t(f"sum({g}({self.t()}, {self.n()}))", ind)
        else:
            it, first = self.fresh("gi"), self.fresh("v")
            self.emit(f"{it} = {g}({self.t()}, {self.n()})", ind)
            self.emit(f"{first} = next({it})", ind)
            self.maybe_break(ind)
            self.new_t(f"sum({it}, {first})", ind)

    # ---- exceptions ------------------------------------------------------------------------------
    def s_exception(self, ind):
        rz = self.fresh("rz")
        exc = self.r.choice(["ValueError", "KeyError", "ZeroDivisionError"])
        self.top_def([f"def {rz}(a, k):", "    if k % 2 == 0:", f"        raise {exc}(f'bad {{k}}')",
                      "    return a + k", "", "", f"def {rz}m(a, k):", "    LOG.append(k)",
                      f"    return {rz}(a * 2, k + 1) * 0.5"])
        v = self.fresh("t")
        self.emit("try:", ind)
        with self.scope(), self.place("in_try"):
            self.emit(f"{v} = {rz}{self.r.choice(['', 'm'])}({self.t()}, {self.n()})", ind + 1)
            self.maybe_break(ind + 1)
        self.emit(f"except {exc} as e:", ind)
        self.emit("LOG.append(str(e))", ind + 1)
        self.emit(f"{v} = {self.t()} * 0.25", ind + 1)
        self.frame.tensors.append(v)

    def s_raise(self, ind):
        self.emit(f"if {self.n()} % 3 == 1:", ind)
        self.emit(f"raise {self.r.choice(['ValueError', 'RuntimeError'])}(f'boom {{{self.n()}}}')", ind + 1)

    def s_try_finally(self, ind):
        self.emit("try:", ind)
        self.emit(f"LOG.append({self.fresh('tf')!r})", ind + 1)
        self.block(ind + 1, "in_try")
        self.emit("finally:", ind)
        self.emit("LOG.append(len(LOG))" if not self.frame.root else "st.count += 1", ind + 1)

    # ---- globals made by the function, read through globals() ----------------------------------
    def s_globals_dict(self, ind):
        g = self.fresh("GD")
        self.uses_global(g)
        q = repr(g)
        make = self.r.choice(["get", "in", "name", "module", "setdefault"])
        if make == "get":
            self.emit(f"{g} = globals().get({q}, 0) + 1", ind)
        elif make == "in":
            self.emit(f"if {q} in globals():", ind)
            self.emit(f"globals()[{q}] += {self.n()} % 2 + 1", ind + 1)
            self.emit("else:", ind)
            self.emit(f"globals()[{q}] = 1", ind + 1)
        elif make == "name":
            nm = self.fresh("nm")
            self.emit(f"{nm} = {q}", ind)
            self.emit(f"globals()[{nm}] = globals().get({nm}, {self.n()} % 2) + 1", ind)
        elif make == "module":
            self.emit(f"sys.modules[__name__].__dict__[{q}] = vars(sys.modules[__name__]).get({q}, 0) + 1", ind)
        else:
            self.emit(f"globals().setdefault({g + 'L'!r}, [0]).append({self.n()})", ind)
            self.emit(f"{g} = len(globals()[{g + 'L'!r}])", ind)
        self.maybe_break(ind)
        read = self.r.choice([f"globals()[{q}]", f"{g}", f"vars(sys.modules[__name__])[{q}]",
                              f"sys.modules[__name__].__dict__.get({q}, -1)", f"({q} in globals()) + {g}"])
        v = self.new_n(f"{read} + {self.n()}", ind)
        self.new_t(f"{self.t()} * globals().get({q}, 0)", ind)
        self.maybe_break(ind)
        if self.r.random() < 0.7:  # gone on some calls: the next call creates it again
            self.emit(f"if {g} % 2 == 0:", ind)
            how = self.r.choice([f"del {g}", f"del globals()[{q}]", f"globals().pop({q})",
                                 f"del sys.modules[__name__].__dict__[{q}]"])
            self.emit(how, ind + 1)
            self.emit(f"LOG.append(({q} in globals(), {v}))", ind)

    # ---- ints varying across calls in arithmetic that raises ----------------------------------------
    def dyn(self, ind) -> str:
        """An int expression whose value changes from call to call."""
        opts = [self.n()]
        if self.frame.root:
            opts += ["st.count", "len(st.items)", "n", "len(st.log) + st.count"]
        if self.r.random() < 0.3:
            cn = self.fresh("CN")
            self.top_def([f"{cn} = 0"])
            self.uses_global(cn)
            self.emit(f"{cn} += 1", ind)
            return cn
        return self.r.choice(opts)

    def raising_int(self, d) -> tuple[str, str, str]:
        """(expression, exception type, kind) of an expression of `d` raising for some of its values."""
        c = self.r.randint(0, 2)
        kind = self.r.choice(["truediv", "floordiv", "mod", "list_index", "tensor_index"])
        if kind == "truediv":
            return f"{self.r.choice(['1.5', '6', '-3.0'])} / ({d} % {c + 2})", "ZeroDivisionError", "num"
        if kind == "floordiv":
            return f"{self.n()} // ({d} - {c})", "ZeroDivisionError", "num"
        if kind == "mod":
            return f"({self.n()} + 7) % ({d} - {c})", "ZeroDivisionError", "num"
        if kind == "list_index":
            return f"[{self.n()}, {self.n()}, 5][{d} * 2 - {c}]", "IndexError", "num"
        return f"{self.t()}[{d} * 2 - {c}]", "IndexError", "tensor"

    def s_dyn_raise(self, ind):
        d = self.dyn(ind)
        expr, exc, kind = self.raising_int(d)
        caught = self.r.choice([exc, exc, "(ZeroDivisionError, IndexError)",
                                "ArithmeticError" if exc == "ZeroDivisionError" else "LookupError"])
        q, v, e = self.fresh("q"), self.fresh("t"), self.fresh("e")
        self.emit("try:", ind)
        with self.scope(), self.place("in_try"):
            self.maybe_break(ind + 1)
            self.emit(f"{q} = {expr}", ind + 1)
            self.maybe_break(ind + 1)
            use = f"{self.t()} * {q}" if kind == "num" else f"{self.t()} + {q}"
            self.emit(f"{v} = {use}", ind + 1)
        self.emit(f"except {caught} as {e}:", ind)
        with self.scope(), self.place("in_except"):
            log = self.r.choice([f"LOG.append((type({e}).__name__, str({e}), {d}))",
                                 f"LOG.append({d})" if not self.frame.root else f"st.log.append(str({e}))"])
            self.emit(log, ind + 1)
            self.maybe_break(ind + 1)
            self.emit(f"{v} = {self.t()} * 0.5 - {d}", ind + 1)
        self.frame.tensors.append(v)

    # ---- side effects, then an exception leaving the function ---------------------------------------
    def s_effects_raise(self, ind):
        s, lst, dct = self.fresh("S"), self.fresh("SL"), self.fresh("SD")
        self.top_def([f"{s} = 1.0", f"{lst} = []", f"{dct} = {{}}", f"{s}T = torch.zeros(3, 4)"])
        self.uses_global(s)
        self.emit(f"{s} = {s} * 1.5", ind)
        d = self.dyn(ind)
        effects = [f"{lst}.append({d})", f"{dct}[{d}] = {self.t()}.sum()", f"{dct}.setdefault('n', []).append({s})",
                   f"{s}T.add_({self.t()}.detach())", f"LOG.append(({s!r}, {s}))"]
        if self.frame.root:
            effects += [f"st.log.append({s})", f"st.d['e'] = {d}", f"st.last = {self.t()} * {s}", "st.count += 1",
                        "del st.d['a']" if self.r.random() < 0.2 else "st.items.append(0)"]
        for i, eff in enumerate(self.r.sample(effects, self.r.randint(2, 4))):
            self.emit(eff, ind)
            if i == 0:
                self.maybe_break(ind)
        self.maybe_break(ind)
        how = self.r.choice(["if", "if", "arith", "custom"] if "custom_exc" in self.on else ["if", "if", "arith"])
        if how == "arith":
            expr, _, _ = self.raising_int(d)  # raises for some values of `d`
            self.emit(f"{self.fresh('q')} = {expr}", ind)
        else:
            self.emit(f"if {d} % 3 == {self.r.randint(0, 2)}:", ind)
            if how == "custom":
                err = self.fuzz_error()
                self.emit(f"raise {err}(f'effects {{{s}}}', len({lst}))", ind + 1)
            else:
                exc = self.r.choice(["ValueError", "KeyError", "RuntimeError"])
                self.emit(f"raise {exc}(f'after effects {{{s}}} {{len({lst})}}')", ind + 1)
        self.new_t(f"{self.t()} * {s} + {s}T", ind)

    # ---- an exception class with a custom __init__ -------------------------------------------------
    def fuzz_error(self) -> str:
        if "FuzzError" not in self.defined:
            self.defined.add("FuzzError")
            self.top.insert(0, "\n".join([
                "class FuzzError(Exception):", "    def __init__(self, msg, code):", "        super().__init__(msg)",
                "        self.code = code"]))
        return "FuzzError"

    def s_custom_exc(self, ind):
        err = self.fuzz_error()
        d = self.dyn(ind)
        v, e = self.fresh("t"), self.fresh("e")
        kind = self.r.choice(["helper", "reraise", "reraise", "escape"])
        if kind == "helper":
            fe = self.fresh("fe")
            self.top_def([f"def {fe}(a, k):", "    LOG.append(('fe', k))", "    if k % 2 == 0:",
                          f"        raise {err}(f'fe {{k}}', k * 3 + 1)", "    return a + k"])
            self.emit("try:", ind)
            with self.scope(), self.place("in_try"):
                self.maybe_break(ind + 1)
                self.emit(f"{v} = {fe}({self.t()}, {d})", ind + 1)
                self.maybe_break(ind + 1)
            self.emit(f"except {self.r.choice([err, err, 'Exception'])} as {e}:", ind)
            with self.scope(), self.place("in_except"):
                self.maybe_break(ind + 1)
                self.emit(f"LOG.append(({e}.code, str({e}), {e}.args))", ind + 1)
                self.emit(f"{v} = {self.t()} * {e}.code", ind + 1)
            self.frame.tensors.append(v)
            return
        # raised in an inner try, caught, changed and re-raised: to an outer handler or out of the function
        escape = kind == "escape"
        base = ind if escape else ind + 1
        if not escape:
            self.emit("try:", ind)
        with self.scope(), self.place("in_try"):
            self.emit("try:", base)
            with self.scope():
                self.maybe_break(base + 1)
                self.emit(f"if {d} % 2 == {self.r.randint(0, 1)}:", base + 1)
                self.emit(f"raise {err}(f'inner {{{d}}}', {d})", base + 2)
                self.new_t(f"{self.t()} + {d}", base + 1)
            self.emit(f"except {err} as {e}:", base)
            with self.place("in_except"):
                self.emit(self.r.choice([f"{e}.code += 1", f"{e}.code = {e}.code * 2 + 1"]), base + 1)
                self.maybe_break(base + 1)
                self.emit(f"LOG.append({e}.code)", base + 1)
                self.emit(self.r.choice(["raise", f"raise {e}", f"raise {err}(str({e}) + '!', {e}.code + 1) from {e}",
                                         f"raise ValueError({e}.code)"]), base + 1)
            self.emit(f"{v} = {self.t()} * 2", base)
        if escape:
            self.frame.tensors.append(v)
            return
        e2 = self.fresh("e")
        self.emit(f"except ({err}, ValueError) as {e2}:", ind)
        with self.scope(), self.place("in_except"):
            self.maybe_break(ind + 1)
            self.emit(f"LOG.append((type({e2}).__name__, str({e2}), getattr({e2}, 'code', None), "
                      f"type({e2}.__cause__).__name__))", ind + 1)
            self.emit(f"{v} = {self.t()} * len(str({e2}))", ind + 1)
        self.frame.tensors.append(v)

    # ---- context managers and grad mode --------------------------------------------------------------
    def s_ctx_manager(self, ind):
        cm = self.fresh("CM")
        self.top_def([f"class {cm}:", "    def __init__(self, tag):", "        self.tag = tag", "",
                      "    def __enter__(self):", "        LOG.append(('enter', self.tag))", "        return self",
                      "", "    def __exit__(self, et, ev, tb):", "        LOG.append(('exit', self.tag, et is None))",
                      "        return False"])
        c, a = self.fresh("c"), self.t_mut()
        self.emit(f"with {cm}({self.n()}) as {c}:", ind)
        self.emit(f"{a} = {a} * {c}.tag + 1", ind + 1)
        self.block(ind + 1, "in_with")

    def s_no_grad(self, ind):
        mode = self.r.choice(["torch.no_grad()", "torch.no_grad()", "torch.enable_grad()"])
        self.emit(f"with {mode}:", ind)
        self.no_grad += mode == "torch.no_grad()"
        with self.scope():
            self.new_t(f"{self.t()} * 2", ind + 1)
            self.block(ind + 1, "in_with")
        self.no_grad -= mode == "torch.no_grad()"
        self.new_t(f"{self.t()} + 1", ind)

    # ---- hooks and modules ----------------------------------------------------------------------------
    def s_hook(self, ind):
        if not self.frame.root or self.no_grad:  # only tensors that surely require grad get hooks
            return self.s_binop(ind)
        h = self.fresh("hk")
        target = "x" if self.r.random() < 0.5 else self.new_t(f"{self.t()} * 2 + x", ind)
        self.emit(f"{h} = {target}.register_hook(lambda g: g * {self.r.choice(['2', '0.5', '-1'])})", ind)
        self.new_t(f"{target} * 3 + {self.t()}", ind)
        self.maybe_break(ind)
        if self.r.random() < 0.7:
            self.emit(f"{h}.remove()", ind)

    def s_module(self, ind):
        m = self.fresh("MOD")
        if self.r.random() < 0.5:
            self.top_def([f"{m} = torch.nn.Sequential(torch.nn.Linear(4, 4), torch.nn.Tanh())"])
        else:
            brk = []
            if self.breaks_allowed_in("in_method"):
                with self.function(["h"], ["k"]):
                    self.brk(2)
                    brk = self.frame.lines
            self.top_def([f"class {m}Type(torch.nn.Module):", "    def __init__(self):", "        super().__init__()",
                          "        self.lin = torch.nn.Linear(4, 4)",
                          "        self.register_buffer('cnt', torch.zeros(()))",
                          "", "    def forward(self, a):", "        self.cnt.add_(1)", "        h = self.lin(a)",
                          "        k = 1", *brk, "        return torch.relu(h) + a * self.cnt", "", "",
                          f"{m} = {m}Type()"])
        self.new_t(f"{m}({self.t()})", ind)

    # ---- itertools / collections ---------------------------------------------------------------------
    def s_itertools(self, ind):
        kind = self.r.choice(["chain", "islice", "accumulate"])
        if kind == "chain":
            ch, first = self.fresh("ch"), self.fresh("v")
            self.emit(f"{ch} = itertools.chain([{self.t()}], ({self.t()}, {self.t()}))", ind)
            self.emit(f"{first} = next({ch})", ind)
            self.maybe_break(ind)
            self.new_t(f"sum({ch}, {first})", ind)
        elif kind == "islice":
            self.new_n(f"sum(itertools.islice(itertools.count({self.n()}), 3))", ind)
        else:
            self.new_n(f"list(itertools.accumulate([{self.n()}, {self.n()}, 2]))[-1]", ind)

    def s_collections(self, ind):
        kind = self.r.choice(["deque", "defaultdict", "ordereddict", "counter"])
        v = self.fresh("co")
        if kind == "deque":
            self.emit(f"{v} = collections.deque([{self.t()}, {self.t()}], maxlen=3)", ind)
            self.emit(f"{v}.append({self.t()})", ind)
            self.emit(f"{v}.appendleft({self.t()} * 2)", ind)
            self.maybe_break(ind)
            self.new_t(f"sum({v}) + len({v})", ind)
        elif kind == "defaultdict":
            self.emit(f"{v} = collections.defaultdict(list)", ind)
            self.emit(f"{v}[{self.n()} % 2].append({self.t()})", ind)
            self.emit(f"{v}[1].append({self.t()})", ind)
            self.maybe_break(ind)
            self.new_t(f"sum(sum(w) for w in {v}.values())", ind)
        elif kind == "ordereddict":
            self.emit(f"{v} = collections.OrderedDict(a={self.t()}, b={self.t()})", ind)
            self.emit(f"{v}.move_to_end('a')", ind)
            self.maybe_break(ind)
            self.new_t(f"list({v}.values())[0]", ind)
        else:
            self.emit(f"{v} = collections.Counter([{self.n()} % 3, {self.n()} % 3, 1])", ind)
            self.maybe_break(ind)
            self.new_n(f"{v}[1] + len({v}) + {v}.most_common(1)[0][1]", ind)

    # ---- the program ---------------------------------------------------------------------------------
    def program(self) -> str:
        self.stmts(1, self.size)
        r = self.r
        outs = r.sample(self.frame.tensors, min(3, len(self.frame.tensors)))
        ret = f"return ({', '.join(outs)}, {self.n()}, [{self.t()}, {self.n()}])"
        self.emit(ret, 1)
        fuzzed = "\n".join(self.body_of(self.frame, "def fuzzed(x, y, n, st):"))
        n0 = r.randint(-2, 3)
        parts = [PREAMBLE.format(seed=self.seed, n0=n0), *self.top, fuzzed]
        return "\n\n\n".join(parts) + "\n"


# (snippet, feature, weight)
_SNIPPETS = [
    ("binop", "tensor", 3), ("unary", "tensor", 2), ("reduce", "tensor", 1), ("inplace", "tensor", 1),
    ("intop", "scalars", 2), ("float", "scalars", 1), ("int_if", "scalars", 1),
    ("for", "tensor", 2), ("while", "tensor", 1),
    ("list", "containers", 1), ("dict", "containers", 1), ("set_tuple", "containers", 1),
    ("dict_views", "dict_views", 1), ("live_iter", "live_iterators", 2), ("dict_iter_raise", "dict_iter_raise", 0.3),
    ("klass", "classes", 1), ("state", "state_arg", 1), ("closure", "closures", 1), ("global", "globals", 1),
    ("defaults", "defaults", 1), ("varargs", "varargs", 1), ("helper", "tensor", 2), ("comprehension", "tensor", 1),
    ("generator", "generators", 1), ("exception", "exceptions", 1), ("raise", "raises", 0.3),
    ("try_finally", "try_finally", 1), ("ctx_manager", "ctx_manager", 1), ("no_grad", "no_grad", 1),
    ("hook", "hooks", 1), ("module", "modules", 1), ("itertools", "itertools", 1), ("collections", "collections", 1),
    ("globals_dict", "globals_dict", 1), ("dyn_raise", "dynamic_raise", 1), ("effects_raise", "effects_raise", 0.4),
    ("custom_exc", "custom_exc", 1),
]


def generate(seed: int, profile=FULL_PROFILE, size: int = 8) -> str:
    """The source of program `seed` under `profile` (a set of FEATURES)."""
    return ProgramGenerator(seed, profile, size).program()
