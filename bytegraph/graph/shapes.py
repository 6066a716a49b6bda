"""Symbolic sizes on torch's ShapeEnv (Note [Symbolic sizes]): which sizes and ints of a
compiled function are dynamic (`DynamicState`, its code object's `ShapeMemory`), the capture's
`ShapeEnv` (`Shapes`, made on first need), symbolic fakes and symbols for graph inputs,
and the guard clauses the ShapeEnv's facts become.

# Note [Symbolic sizes]
A capture is static until something is dynamic: `compile(dynamic=True)` (every size of a
graph input and every int read from outside), `mark_dynamic(t, dim)`, or *automatic
dynamic*: the captures of a code object remember the sizes of every input tensor and the value
of every int they read from outside, by source (`ShapeMemory`, one per code object and backend,
Note [Recompile limit] in runtime/code_state.py); a later capture that sees a size (an int)
differ from the remembered one makes that dimension (that int) symbolic from then on.
Sizes 0 and 1 stay specialized (ShapeEnv's rule), as do `mark_static` dimensions.
The knobs are torch.compile's (`DynamicState.dynamic_dims`, in torch's order of precedence):
`mark_dynamic`/`maybe_mark_dynamic` (bytegraph's, or torch's own markers: the attributes
`torch._dynamo.mark_dynamic` & co. set on a tensor) beat `mark_static`, which beats automatic
dynamic (`config.automatic_dynamic_shapes`; False: a changed size recompiles static), which
beats `config.assume_static_by_default` (False: symbolic from the first capture). Parameters
and modules' buffers are static under `config.force_parameter_static_shapes`, and so are the
tensors and ints of a `mark_static` module. `dynamic=True` is automatic off and static by
default off; `dynamic=False` is automatic off (marks still count, as in torch.compile).
A `mark_dynamic` dimension the trace specializes (a branch on its value: the ShapeEnv replaces
its symbol by a number) raises torch's `ConstraintViolationError` at the end of the capture,
unless `config.allow_ignore_mark_dynamic`; `maybe_mark_dynamic` lets it specialize.

A dynamic input tensor's fake has the sizes and strides the ShapeEnv makes for it with a
symbolic context (SymInts; `graph/fake_inputs.py`, through `FakeTensorMode.from_tensor`
unless it is a plain tensor); a dynamic int is a SymInt graph input.
Sizes read in the trace are `SymNodeVariable`s (`vars/symbolic.py`); torch's SymInt
arithmetic builds the expressions, and a Python-level use that needs a value (`if`,
`range`, an index, a dict key) specializes it (`guard_int`/`guard_bool`), which the
ShapeEnv records as a guard. At the end of the capture (`Shapes.render`) each dynamic
input tensor gets clauses over its sizes and strides, and over its storage offset only when
that is symbolic: a static offset is not guarded, as on a static tensor and in torch's
`produce_guards(ignore_static=True)`, since the graph does not depend on it and a trace
that reads it pins it on read (`vars/tensor.py`); a symbol of its own (the offset
`from_tensor` makes for a view at offset >= 2) is bound to `x.storage_offset()`, so the
ShapeEnv's guards may use it. Each symbol is bound to the first size (or int input) that
carries it, and every ShapeEnv guard and symbol range becomes one
clause, all inside the entry's one guard function; each says on a miss what it checks in
the user's spelling (`x.size(0) >= 2`, `x.size(1) == 5 (from model.py:12)`).

# Note [Data-dependent capture]
Opt-in, as torch.compile's fields of the same names (both off by default, or on from the
environment: `BYTEGRAPH_CAPTURE_SCALAR_OUTPUTS=1`, `BYTEGRAPH_CAPTURE_DYNAMIC_OUTPUT_SHAPE_OPS=1`):
- `config.capture_scalar_outputs`: `t.item()`, `int(t)`, `float(t)`, `operator.index(t)`,
  `t.tolist()` (static sizes) are the graph op `Tensor.item` (vars/scalar_reads.py), whose
  fake result is a fresh *unbacked* SymInt/SymFloat/SymBool (`u0`, `zuf0`: torch's
  `_local_scalar_dense` fake kernel, `ShapeEnv.create_unbacked_*`);
- `config.capture_dynamic_output_shape_ops`: `nonzero`, `masked_select`, `x[mask]`, `unique`,
  ... get fakes whose sizes are unbacked symbols (torch's fake kernels, which ask the
  ShapeEnv's `allow_dynamic_output_shape_ops`).
The ShapeEnv is made with those settings; a capture without one gets it when the first op's
fake run raises `DataDependentOutputException`/`DynamicOutputShapeException` with the
field on, and that op runs again. With the field off the error is a graph break whose hint
names the field. An op that makes unbacked symbols gets `meta["unbacked_bindings"]` (torch's
`compute_unbacked_bindings`: where in its result each symbol is, which aot autograd and
inductor read), and the graph gets torch's `insert_deferred_runtime_asserts` before the
backend: what the trace assumed of those symbols (a size is `>= 0` and at most the input's
numel, `arange(u0)` needs `u0 >= 0`, `torch._check(u0 >= 2)`, a view's divisibility) is
checked at run time, so data that breaks an assumption raises, never computes a wrong
result. Unbacked values are never guarded: the same entry serves every value and size.
A Python use that needs the value (`if`, `range`, a dict key: `SymNodeVariable.as_python_constant`)
or an op's kernel that must decide on it raises `GuardOnDataDependentSymNode`: a graph break
(a data-dependent guard). An unbacked number returned or live at a break is a graph output.
"""
from __future__ import annotations

import dataclasses
import itertools

import sympy
import torch
import torch._guards
from torch.fx.experimental.symbolic_shapes import (ConstraintViolationError, DimDynamic, ShapeEnv,
                                                   StatelessSymbolicContext, compute_unbacked_bindings)
from torch.fx.passes.runtime_assert import insert_deferred_runtime_asserts
from torch.utils._sympy.printers import PythonPrinter

from .. import config
from ..guards.guard import Guard, GuardKind, ShapeClause
from ..hints import marked_dims, strictly_dynamic_dims
from .fake_inputs import size_expr, symbolic_fake_input

_DYNAMIC = object()  # ShapeMemory: a size or an int that changed between captures
_UNSET = object()    # ShapeMemory: nothing seen yet


class ShapeMemory:
    """What the captures of one code object saw, by source (torch's frame state, kept per code
    object by `runtime/code_state.py`): for each source, the sizes of the tensor read there
    (a list, None for a dimension that changed; `_DYNAMIC` once its rank or kind changed) and the
    int read there (`_DYNAMIC` once it changed). A source that held a tensor once and an int
    another time is dynamic both ways, as in torch's `FrameStateSizeEntry`. Sources are kept by
    their text (`name()`): the memory lives as long as the code object, and a source may hold
    an object (an inlined function read without a path); a reused `id()` in an object's name
    at worst makes a size dynamic one capture early."""

    __slots__ = ("seen",)

    def __init__(self):
        self.seen: dict = {}  # source text -> [sizes, scalar]

    def tensor(self, source, shape, marked) -> object:
        """Record `shape` read at `source` (and the `marked` dimensions as changed); the sizes seen."""
        key = source.name()
        entry = self.seen.get(key)
        if entry is None:
            entry = self.seen[key] = [list(shape), _DYNAMIC]
        else:
            entry[0] = _merge_sizes(entry[0], shape)
            entry[1] = _DYNAMIC
        if marked and entry[0] is not _DYNAMIC:
            for i in marked:
                entry[0][i] = None
        return entry[0]

    def snapshot(self) -> dict:
        """What was seen, as plain data (the capture cache keeps it with an entry): sizes and
        values, with `"dynamic"`/`"unset"` for the markers; a value of another kind is left out."""
        out = {}
        for key, (sizes, scalar) in self.seen.items():
            if type(scalar) not in (int, float, bool) and scalar is not _DYNAMIC and scalar is not _UNSET:
                continue
            out[key] = ["dynamic" if sizes is _DYNAMIC else list(sizes),
                        "dynamic" if scalar is _DYNAMIC else "unset" if scalar is _UNSET else scalar]
        return out

    def restore(self, data: dict) -> None:
        """Start from `snapshot()` data of another process (only while nothing is seen yet: a
        warm start's memory is then the one its entry's capture left)."""
        if self.seen:
            return
        marks = {"dynamic": _DYNAMIC, "unset": _UNSET}
        for key, (sizes, scalar) in data.items():
            self.seen[key] = [marks[sizes] if type(sizes) is str else list(sizes),
                              marks[scalar] if type(scalar) is str else scalar]

    def scalar(self, source, value) -> object:
        """Record int (float) `value` read at `source`; the value seen, or `_DYNAMIC`."""
        key = source.name()
        entry = self.seen.get(key)
        if entry is None:
            entry = self.seen[key] = [_DYNAMIC, value]
        else:
            entry[0] = _DYNAMIC
            old = entry[1]
            if old is _UNSET:
                entry[1] = value
            elif old is not _DYNAMIC and not (old == value and type(old) is type(value)):
                entry[1] = _DYNAMIC
        return entry[1]


def _merge_sizes(seen, shape):
    if seen is _DYNAMIC or len(seen) != len(shape):
        return _DYNAMIC
    for i, (old, new) in enumerate(zip(seen, shape)):
        if old is not None and old != new:
            seen[i] = None
    return seen


class DynamicState:
    """The dynamic-shape policy of one compiled function: `mode` is True (`dynamic=True`: every
    size and int symbolic from the start), False (static, but for `mark_dynamic`) or None (the
    config knobs: `automatic_dynamic_shapes`, `assume_static_by_default`); `memory` is its code
    object's `ShapeMemory`, shared by the wrappers of one code (Note [Recompile limit])."""

    __slots__ = ("mode", "memory")

    def __init__(self, mode, memory: ShapeMemory | None = None):
        self.mode = mode
        self.memory = memory if memory is not None else ShapeMemory()

    def _policy(self) -> tuple:
        """(automatic dynamic shapes, assume static by default), as torch.compile's `dynamic=` sets them."""
        if self.mode is True:
            return False, False
        if self.mode is False:
            return False, True
        return config.automatic_dynamic_shapes, config.assume_static_by_default

    def dynamic_dims(self, source, real: torch.Tensor, static: bool = False) -> list | None:
        """Which dimensions of input `real` read at `source` are symbolic (None: none). `static`:
        the reader forces its sizes static (a module's parameter or buffer under
        `config.force_parameter_static_shapes`, a tensor of a `mark_static` module); so are
        `nn.Parameter`s. Else, per dimension as torch's `_automatic_dynamic`: marked dynamic
        (`mark_dynamic`, `maybe_mark_dynamic`), then marked static (`mark_static`), then
        changed since an earlier capture (automatic dynamic), then `not assume_static_by_default`."""
        if static or (config.force_parameter_static_shapes and type(real) is torch.nn.Parameter):
            return None
        automatic, assume_static = self._policy()
        strict = strictly_dynamic_dims(real)
        weak = marked_dims(real, "_bg_weak_dynamic_dims", "_dynamo_weak_dynamic_indices")
        static_dims = marked_dims(real, "_bg_static_dims", "_dynamo_static_indices")
        seen = self.memory.tensor(source, real.shape, strict) if automatic else ()
        dynamic = []
        for i in range(real.dim()):
            if i in strict or i in weak:
                dynamic.append(True)
            elif i in static_dims:
                dynamic.append(False)
            elif seen is _DYNAMIC or (seen and seen[i] is None):
                dynamic.append(True)
            else:
                dynamic.append(not assume_static)
        return dynamic if any(dynamic) else None

    def dynamic_int(self, source, value, static: bool = False) -> bool:
        """Whether int (or float) `value` read at `source` is symbolic in this capture (`static`:
        never, e.g. an attribute of a `mark_static` module)."""
        if static:
            return False
        automatic, assume_static = self._policy()
        if automatic and self.memory.scalar(source, value) is _DYNAMIC:
            return True
        return not assume_static


@dataclasses.dataclass(frozen=True)
class _TorchSource(torch._guards.Source):
    """A bytegraph source as torch's ShapeEnv records it (symbols' sources, debug names)."""

    expr: str

    @property
    def _name_template(self) -> str:
        return self.expr

    @property
    def guard_source(self):
        return torch._guards.GuardSource.LOCAL


class _CountingShapeEnv(ShapeEnv):
    """torch's ShapeEnv, also counting refinements of symbol ranges (its own version counter
    follows replacements, divisibility facts and runtime asserts, not ranges)."""

    range_updates = 0

    def _update_var_to_range(self, *args, **kwargs):
        self.range_updates += 1
        return super()._update_var_to_range(*args, **kwargs)


# Facts interned by content (Note [Symbolic memo] in graph/fake_memo.py): one small int per
# distinct ShapeEnv state, so memo keys hash and compare it cheaply.
_STATE_TOKENS: dict = {}


class Shapes:
    """The ShapeEnv of one capture, made when the first symbolic value is (Note [Symbolic sizes])."""

    __slots__ = ("env", "locations", "int_symbols", "unbacked", "_token_version", "_token")

    def __init__(self, fake_mode):
        self.env = _CountingShapeEnv(allow_scalar_outputs=config.capture_scalar_outputs,
                                     allow_dynamic_output_shape_ops=config.capture_dynamic_output_shape_ops)
        self._token_version = None
        self._token = None
        fake_mode.shape_env = self.env  # fakes made so far are static; ops mix both
        fake_mode.bg_shapes = self  # symbolic views are memoized (Note [Symbolic views], graph/fake_memo.py)
        fake_mode.static_shapes = False  # `fake_inputs.fake_input` asks for static ones explicitly
        fake_mode.cache_enabled = False
        self.locations: dict = {}  # index in env.guards -> user location of the code that added it
        self.int_symbols: dict = {}  # source of a dynamic int -> its sympy symbol
        self.unbacked = False  # a graph op made an unbacked symbol (Note [Data-dependent capture])

    def fake_tensor(self, fake_mode, real: torch.Tensor, source, dynamic: list):
        context = StatelessSymbolicContext(
            dynamic_sizes=[DimDynamic.DUCK if d else DimDynamic.STATIC for d in dynamic])
        return symbolic_fake_input(fake_mode, real, _TorchSource(source.name()), context)

    def symbol_for(self, value, source):
        """A fresh SymInt (SymFloat) for the int (float) `value` read at `source`."""
        env = self.env
        tsource = _TorchSource(source.name())
        symbol = env.create_unspecified_symbol(value, tsource, DimDynamic.DYNAMIC)
        self.int_symbols[source] = symbol
        if type(value) is float:
            return env.create_symfloatnode(symbol, hint=value, source=tsource)
        return env.create_symintnode(symbol, hint=value, source=tsource)

    def bind_unbacked(self, node, example) -> None:
        """Record on `node` (the op whose fake result is `example`) where its fresh unbacked
        symbols are (`meta["unbacked_bindings"]`, as the backends' own passes read it)."""
        if self.env.pending_fresh_unbacked_symbols:
            node.meta["unbacked_bindings"] = compute_unbacked_bindings(self.env, example)
            self.unbacked = True

    def insert_runtime_asserts(self, gm: torch.fx.GraphModule) -> None:
        """Put into `gm` the checks of what the trace assumed about unbacked symbols (the
        ShapeEnv's deferred runtime asserts and their ranges: `u0 >= 0` of a size), as
        torch.compile does, so a call whose data breaks an assumption raises, never computes
        a wrong result."""
        if self.unbacked:
            insert_deferred_runtime_asserts(gm, self.env, "bytegraph")
            gm.recompile()

    def version(self) -> tuple:
        """Changes whenever the ShapeEnv learns a fact (a symbol, guard, range, replacement,
        divisibility or runtime assert)."""
        env = self.env
        return (len(env.guards), len(env.var_to_range), env.range_updates, env._version_counter,
                env._replacements_version_counter, len(env.axioms), len(env.backed_var_to_val),
                len(env.size_like))

    def mark(self) -> tuple:
        """Where the ShapeEnv's facts are now, for `lesson_since` (Note [Symbolic memo])."""
        env = self.env
        return self.version(), len(env.guards), len(env.axioms)

    def lesson_since(self, mark: tuple) -> tuple | None:
        """What the ShapeEnv learned since `mark` if that was only guards and the axioms
        they imply, as `replay` teaches it again: () when nothing, None when it learned
        anything else (a symbol, a range, a replacement, divisibility, a runtime assert)."""
        version, guards, axioms = mark
        now = self.version()
        if now == version:
            return ()
        if now[1:5] != version[1:5] or now[6:] != version[6:]:  # all but len(guards), len(axioms)
            return None
        env = self.env
        return tuple(env.guards[guards:]), tuple(itertools.islice(env.axioms.items(), axioms, None))

    def replay(self, lesson: tuple) -> None:
        """Teach the ShapeEnv a lesson again, as the kernel run it came from taught it: its
        guards appended (each symbol's guard count too) and their axioms added."""
        guards, axioms = lesson
        env = self.env
        for guard in guards:
            env.guards.append(guard)
            for symbol in guard.expr.free_symbols:
                env.symbol_guard_counter[symbol] += 1
        env.axioms.update(axioms)

    def state_token(self) -> int:
        """The ShapeEnv's facts, interned: equal tokens, equal facts (Note [Symbolic memo])."""
        version = self.version()
        if version != self._token_version:
            env = self.env
            facts = (tuple(env.backed_var_to_val.items()), tuple(env.var_to_range.items()),
                     tuple(env.replacements.items()), tuple(g.expr for g in env.guards),
                     tuple(env.divisible), tuple(env.size_like), env.settings)
            self._token = _STATE_TOKENS.setdefault(facts, len(_STATE_TOKENS))
            self._token_version = version
        return self._token

    def locate(self, before: int, location: str) -> None:
        """The ShapeEnv guards added since it had `before` come from user line `location`."""
        for i in range(before, len(self.env.guards)):
            self.locations.setdefault(i, location)

    # ---- guards -------------------------------------------------------------------
    def check_marks(self, inputs: list) -> None:
        """Raise torch's `ConstraintViolationError` for each `mark_dynamic` dimension of an input
        that the trace specialized: the ShapeEnv replaced its symbol by a number (Note [Symbolic
        sizes]); sizes 0 and 1, never symbolic, are not violations."""
        if config.allow_ignore_mark_dynamic:
            return
        env = self.env
        violations = []
        for src, vt, real in inputs:
            if not vt.is_tensor or vt.example.dim() != real.dim():
                continue
            for i in sorted(strictly_dynamic_dims(real)):
                size = vt.example.shape[i]
                # the symbol the size was made with (`expr` reads it through the replacements)
                if type(size) is not torch.SymInt or not isinstance(symbol := size.node._expr, sympy.Symbol):
                    continue
                value = env.simplify(symbol)
                if value.is_number:
                    where = next((self.locations.get(n, "") for n, g in enumerate(env.guards)
                                  if symbol in g.expr.free_symbols and self.locations.get(n)), "")
                    at = f" at {where}" if where else ""
                    violations.append(f"{src.describe()}.size({i}) was marked dynamic (mark_dynamic), but the trace "
                                      f"specialized it to {value}{at}")
        if violations:
            raise ConstraintViolationError(
                f"Constraints violated ({', '.join(v.partition(' ')[0] for v in violations)})! "
                + "; ".join(violations) + ". Use maybe_mark_dynamic for a dimension the code may specialize, "
                "or set bytegraph.config.allow_ignore_mark_dynamic = True.")

    def render(self, guards: list, inputs: list) -> list:
        """`guards` with each dynamic tensor's placeholder guard replaced by its clauses over
        sizes, strides and offset, then one clause per ShapeEnv guard and symbol range.
        A symbol is spelled by the first input that carries it: an int input (bound first,
        by its source), else the first size that has it."""
        env = self.env
        printer = _Printer()
        by_source = {src: vt for src, vt, _ in inputs}
        ints = [(src, self.int_symbols[src]) for src, vt, _ in inputs if src in self.int_symbols]
        for src, symbol in ints:
            if env.simplify(symbol) == symbol:
                printer.bind(symbol, src.name(), src.describe())
        out = []
        for guard in guards:
            if guard.kind is GuardKind.DYNAMIC_TENSOR:
                out.extend(self._tensor_clauses(guard, by_source[guard.source].example, printer))
            else:
                out.append(guard)
        for src, symbol in ints:  # specialized (`n == 3`) or equal to another symbol
            value = env.simplify(symbol)
            if value != symbol:
                out.append(Guard(GuardKind.SHAPE, src, printer.equality(src.name(), src.describe(), value)))
        out.extend(self._env_clauses(printer))
        return out

    def _tensor_clauses(self, guard: Guard, fake, printer: "_Printer") -> list:
        src, loc = guard.source, guard.user_location
        name, what = src.name(), src.describe()
        size_name = printer.fresh("__bg_size")
        spec = guard.expected
        out = [Guard(GuardKind.SHAPE, src, ShapeClause(
            f"type({src.binding_name()}) is {{}} and {name}.dtype is {{}} and {name}.device == {{}} "
            f"and {name}.requires_grad is {spec.requires_grad!r} and len({size_name} := {name}.size()) == {fake.dim()}",
            (spec.type, spec.dtype, spec.device),
            f"{what} is a {spec.type.__name__}(dtype={spec.dtype}, device={spec.device}, "
            f"requires_grad={spec.requires_grad}) of {fake.dim()} dimensions"), loc)]
        env = self.env
        for i, size in enumerate(fake.shape):
            expr = env.simplify(size_expr(size))
            if isinstance(expr, sympy.Symbol) and not printer.bound(expr):
                printer.bind(expr, f"{size_name}[{i}]", f"{what}.size({i})")
                continue
            out.append(Guard(GuardKind.SHAPE, src, printer.equality(f"{size_name}[{i}]", f"{what}.size({i})", expr),
                             loc))
        strides = [env.simplify(size_expr(s)) for s in fake.stride()]
        comma = "," if len(strides) == 1 else ""
        code = ", ".join(printer.code(s) for s in strides) + comma
        text = ", ".join(printer.text(s) for s in strides) + comma
        out.append(Guard(GuardKind.SHAPE, src, ShapeClause(f"{name}.stride() == ({code})", (),
                                                           f"{what}.stride() == ({text})"), loc))
        offset = env.simplify(size_expr(fake.storage_offset()))
        if isinstance(offset, sympy.Symbol) and not printer.bound(offset):  # from_tensor's duck offset
            printer.bind(offset, f"{name}.storage_offset()", f"{what}.storage_offset()")
        elif not offset.is_number:  # Note [Symbolic sizes]: a static offset is not guarded
            out.append(Guard(GuardKind.SHAPE, src, printer.equality(f"{name}.storage_offset()",
                                                                    f"{what}.storage_offset()", offset), loc))
        return out

    def _env_clauses(self, printer: "_Printer") -> list:
        env = self.env
        out, seen = [], set()
        for symbol in printer.symbols():
            vr = env.var_to_range.get(symbol)
            if vr is None:
                continue
            for bound, op in ((vr.lower, ">="), (vr.upper, "<=")):
                if isinstance(bound, sympy.Integer) and abs(int(bound)) < 2 ** 62:
                    clause = printer.comparison(symbol, op, int(bound))
                    if clause.code not in seen:
                        seen.add(clause.code)
                        note = " (sizes 0 and 1 are specialized)" if op == ">=" and int(bound) == 2 else ""
                        out.append(Guard(GuardKind.SHAPE, None, dataclasses.replace(clause, text=clause.text + note)))
        for i, shape_guard in enumerate(env.guards):
            expr = env.simplify(shape_guard.expr)
            if expr is sympy.true:
                continue
            clause = printer.clause(expr)
            if clause.code not in seen:
                seen.add(clause.code)
                out.append(Guard(GuardKind.SHAPE, None, clause, self.locations.get(i, "")))
        return out


class _Printer:
    """Prints sympy expressions over the input symbols twice: as guard code (a symbol is the
    guard-local expression that bound it) and in the user's spelling (`x.size(0)`)."""

    def __init__(self):
        self._code: dict = {}
        self._text: dict = {}
        self._names = 0

    def fresh(self, prefix: str) -> str:
        self._names += 1
        return f"{prefix}_{self._names}"

    def bound(self, symbol) -> bool:
        return symbol in self._code

    def bind(self, symbol, code: str, text: str) -> None:
        if isinstance(symbol, sympy.Symbol) and symbol not in self._code:
            self._code[symbol] = code
            self._text[symbol] = text

    def symbols(self):
        return list(self._code)

    def code(self, expr) -> str:
        return self._print(expr, self._code)

    def text(self, expr) -> str:
        return self._print(expr, self._text)

    def _print(self, expr, names: dict) -> str:
        missing = expr.free_symbols - names.keys()
        if missing:
            raise AssertionError(f"shape guard over symbols no graph input binds: {sorted(map(str, missing))}")
        return _SymbolPrinter(names).doprint(expr)

    def equality(self, code: str, text: str, expr) -> ShapeClause:
        return ShapeClause(f"{code} == {self.code(expr)}", (), f"{text} == {self.text(expr)}")

    def comparison(self, symbol, op: str, bound: int) -> ShapeClause:
        return ShapeClause(f"{self._code[symbol]} {op} {bound}", (), f"{self._text[symbol]} {op} {bound}")

    def clause(self, expr) -> ShapeClause:
        return ShapeClause(self.code(expr), (), self.text(expr))


class _SymbolPrinter(PythonPrinter):
    def __init__(self, names: dict):
        super().__init__()
        self._names = names

    def _print_Symbol(self, expr) -> str:
        return self._names[expr]
