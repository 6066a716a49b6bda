"""Repeated blocks traced once (`config.reuse_repeated_blocks`): a call of an `nn.Module`
whose class was called before in the same capture replays the recorded ops of that
earlier call, re-bound to the new module's parameters and the new inputs, instead of
tracing the bytecode again, when it can prove a fresh trace would record the same ops.

Note [Repeated blocks]
The call of a module nothing has read yet (`NNModuleVariable.call_function`, everything it
does: the hook checks, `__call__`, `forward`) is recorded as a window of the capture: the
nodes of the root graph added during it, the guards installed, the graph inputs added, the
guard-local alias numbers handed out (Note [Module guard aliases]) and its result. A later
call of a module of the same class replays that window (the newest of the class's last four
records that applies) when all of these hold:
- the window is replayable: no graph break or exception (the call returned), no
  higher-order-op body, no symbolic size (`shapes` never made), no autocast, the grad mode
  and the contextvars Context being run unchanged, no `requires_grad_` in the trace, every op
  a call that writes none of its arguments in place and does not switch the grad mode
  (`OutputGraph.replayable_node`), every graph input it added that lives under the module a
  parameter or buffer (static sizes, as `force_parameter_static_shapes` makes them), its
  result tensors made by its own ops (not an input, nor sharing storage with an input or a
  parameter: an output aliasing an input is traced again), constants and tuples of them;
- the window has no side effect that a replay would skip (`SideEffects.watch`): no global
  write, replayed call or hook registration, and every tracker that existed before it and
  that code outside the frames can reach (one with a source, or one made in the trace that
  pending writes hold) is, if written, back in its state at the end (an attribute set and
  set back, as transformers' `CompileableContextVar.set`/`reset` around an attention call);
- both modules are fresh: nothing of them was read before their call (`NNModuleVariable.read`,
  set by every slot that reads a module), so every fact the window used about the first
  module was guarded inside the window, and nothing of the new one is a tracker yet;
- nothing the window could read changed since it ended (the same watch, opened at its end),
  and its nodes are still in the graph (not restored away by a speculation);
- the inputs have the same structure: tensors made in the graph (no source: a read tensor's
  other attributes would be guarded at its own source) with equal fake metadata (requires_grad
  and leafness included) and the same aliasing among themselves (by tracker and by storage),
  equal constants, tuples of them;
- every guard of the window about the first module (its source reaches that module's source
  or its guard aliases) holds for the new module. The check is one expression compiled per
  record: those guards spelled over the first module's own alias names, evaluated in order
  (the aliases they bind are bound in that order) with those names bound to the new module
  and its `__dict__`; a lookup that fails, or a name outside the module, is a no. A read
  through the module of an object that is not its own (a shared `config` known before) was
  guarded as the same object (`SAME_OBJECT`), so the new module must reach that same object;
  `id(self)` is guarded by identity, so it never matches; a constant read is guarded equal
  (a per-layer `layer_idx` the trace reads is traced per value; one it does not read is
  not looked at), a submodule by type, a parameter by tensor metadata, the slot dicts by
  keys, the hooks empty. Guards of the window about anything else (globals, classes, shared
  objects) are facts that hold already and stay installed.
Then the replay installs those guards re-rooted (the module's source and alias replaced by
the new module's, the aliases made in the window renumbered to fresh ones, the words of a
hook guard naming the new module), and keeps the objects under the new module that a fresh
trace would have given trackers distinct from every tracked object when anything is written
(`SideEffects.keep_distinct`), so the entry is guarded exactly as a fresh trace of the new
module would guard it (the tests compare the two guard sets); it refuses if a new
parameter is already a graph input or two are one tensor (a fresh trace would share the
placeholder and guard that, which the window did not), adds the new module's parameters and
buffers as graph inputs in the order the window read them, and calls the window's body.

The body: at the first replay, the window's nodes are copied into a graph of their own
(registered with the capture as `block_<n>`, a `call_module` target like a higher-order op's
body), whose inputs are the window's parameters and buffers, its tensor arguments and the
nodes of the capture it used from outside (read through objects the modules share), and
whose outputs are the result's tensors; a call of another body inside the window (a replay
within the first call) is inlined into it, so a replayed block costs the root graph one
`call_module` node and a `getitem` per result, and a module call at run time. The result's
fake values are made from the window's results' metadata (`OutputGraph.block_result_spec`,
the fake memo's rule: a result that requires grad gets autograd history, a view made under
no_grad or a result at a storage offset refuses the record), not by running the body. The
first call's own ops stay in the root graph. Every call of a body inlined, the graph holds
the ops a plain trace records, in its order (tests/test_repeated_blocks.py compares them);
the backend gets the bodies as submodules of the GraphModule (AOT autograd and inductor
trace through them). Anything else traces the call normally (and records it).
`bytegraph.counters["blocks"]` counts "recorded", "reused" and "traced" calls; why a
replay or a record was refused is logged on the `perf` topic.

Limits: a block that writes state (a KV cache: pass `use_cache=False`), one whose input is a
tensor read from outside, a list, a dict or an object, whose result holds anything but tensors,
constants and tuples, or that traces under symbolic sizes, autocast or a higher-order op is
traced every time; so is a module called a second time (weight sharing), which was read by
its first call. A graph that calls bodies is not written to the capture cache (submodules,
runtime/graph_store.py).
"""
from __future__ import annotations

import dataclasses
import logging
import operator

import torch
import torch.fx

from .. import config
from ..guards.guard import Guard, GuardKind
from ..guards.sources import GuardAliasSource, GuardExpressionSource, KeyedItemSource, ModuleAliasSource, \
    ModuleBindSource, ModuleSlotSource, Source
from .base import REPLAY_CELL, _state_slots
from .constant import ConstantVariable
from .containers import TupleVariable
from .tensor import TensorVariable

_LOG = logging.getLogger("bytegraph.perf")
_CONSTANT_TYPES = (type(None), bool, int, float, str, torch.dtype, torch.device)


class _Refused(Exception):
    """Why a window cannot be recorded or replayed (never leaves this module)."""


def call(tx, module_vt, call_module, args: list, kwargs: dict):
    """`module_vt(*args, **kwargs)` (`call_module` traces it): a replay of a record of its
    class when one applies, else traced and recorded (Note [Repeated blocks])."""
    output = tx.output
    key = type(module_vt.value)
    records = output.block_records.setdefault(key, [])
    refusals = []
    for record in reversed(records):
        try:
            result = record.replay(tx, module_vt, args, kwargs)
        except _Refused as e:
            refusals.append(str(e))
        else:
            output.block_counts["reused"] += 1
            return result
    if refusals:
        _LOG.debug("repeated block %s traced again: %s", module_vt.describe(), "; ".join(refusals))
    try:
        start = _Start(tx, module_vt, args, kwargs)
    except _Refused as e:
        _LOG.debug("call of %s not recorded: %s", module_vt.describe(), e)
        start = None
    try:
        result = call_module(tx, args, kwargs)
    finally:
        if start is not None:
            output.side_effects.unwatch(start.watch)
    output.block_counts["traced"] += 1
    if start is not None:
        try:
            new = start.finish(tx, result)
        except _Refused as e:
            _LOG.debug("call of %s not recorded: %s", module_vt.describe(), e)
        else:
            records.append(new)
            if len(records) > _RECORDS_PER_CLASS:
                output.side_effects.unwatch(records.pop(0).since)
            output.block_counts["recorded"] += 1
    return result


_RECORDS_PER_CLASS = 4  # the latest records of a class a call is tried against, newest first


# ---- the state a window starts and ends in ------------------------------------------------

def _ambient(tx) -> tuple:
    """The capture's state a window must start in, and find again when replayed."""
    output = tx.output
    if output.in_subgraph() or output.graph is not output.root_graph:
        raise _Refused("inside a higher-order op's body")
    if output.shapes is not None:
        raise _Refused("the capture has symbolic sizes")
    if output.autocast is not None:
        raise _Refused("the capture uses autocast")
    if output.grad_flags:
        raise _Refused("the trace changed requires_grad flags")
    return output.grad_enabled, output.hop_bodies(), tuple(map(id, output.contexts))


def _module_alias(module_vt) -> int:
    if module_vt.source is None or not isinstance(module_vt.dict_src, ModuleAliasSource) \
            or not isinstance(module_vt.base, ModuleAliasSource):
        raise _Refused("the module has no guarded source")
    if module_vt.read:
        raise _Refused("the module was read before its call")
    return module_vt.dict_src.index


# ---- the inputs ----------------------------------------------------------------------------

def _flatten(args: list, kwargs: dict) -> list:
    """The leaves of the call's arguments (tensor and constant trackers) and tuple markers."""
    leaves: list = []
    for vt in args:
        _leaf(vt, leaves)
    for name in sorted(kwargs):
        leaves.append(("kw", name))
        _leaf(kwargs[name], leaves)
    return leaves


def _leaf(vt, leaves: list) -> None:
    if type(vt) is TensorVariable:
        if vt.source is not None:
            raise _Refused(f"argument {vt.describe()} is read from outside the graph")
        leaves.append(vt)
    elif type(vt) is ConstantVariable and type(vt.value) in _CONSTANT_TYPES:
        leaves.append(vt)
    elif type(vt) is TupleVariable:
        leaves.append(("tuple", len(vt.items)))
        for item in vt.items:
            _leaf(item, leaves)
    else:
        raise _Refused(f"an argument is {vt.describe()}")


def _signature(leaves: list) -> tuple:
    """What a replay's inputs must share with the recorded call's: structure, constants,
    tensor metadata, and aliasing (the same tracker, the same storage)."""
    out = []
    tensors: list = []
    storages: list = []
    for leaf in leaves:
        if type(leaf) is tuple:
            out.append(leaf)
        elif type(leaf) is ConstantVariable:
            v = leaf.value
            out.append(("const", type(v), repr(v) if type(v) is float else v))
        else:
            e = leaf.example
            storage = e.untyped_storage()._cdata
            same = next((i for i, t in enumerate(tensors) if t is leaf), None)
            shared = next((i for i, s in enumerate(storages) if s == storage), None)
            tensors.append(leaf)
            storages.append(storage)
            out.append(("tensor", leaf.cls, type(e), e.dtype, e.device, e.layout, tuple(e.shape), e.stride(),
                        e.storage_offset(), e.requires_grad, e.is_leaf, same, shared))
    return tuple(out)


def _tensor_leaves(leaves: list) -> list:
    return [leaf for leaf in leaves if type(leaf) is TensorVariable]


# ---- re-rooting sources --------------------------------------------------------------------

_FIELDS: dict = {}  # source class -> its field names


def _field_names(cls) -> tuple:
    names = _FIELDS.get(cls)
    if names is None:
        names = _FIELDS[cls] = tuple(f.name for f in dataclasses.fields(cls)) if dataclasses.is_dataclass(cls) else ()
    return names


class _Reroot:
    """Sources about the recorded module rewritten to be about the new one: its source and
    alias replaced, the aliases made in the window renumbered (`aliases`: old -> new)."""

    def __init__(self, old_source, new_source, aliases: dict, words: bool = True):
        self.old = old_source
        self.old_hash = hash(old_source)
        self.new = new_source
        self.aliases = aliases
        self.words = words  # whether guard-only sources' descriptions name the new module
        self.memo: dict = {}

    def __call__(self, source):
        """The re-rooted source, or `source` itself when it is not about the recorded module."""
        if source is self.old or (hash(source) == self.old_hash and source == self.old):
            return self.new
        done = self.memo.get(id(source))
        if done is not None and done[0] is source:
            return done[1]
        names = _field_names(type(source))
        values = [getattr(source, name) for name in names]
        new_values = [self.value(v) for v in values]
        if all(n is o for n, o in zip(new_values, values)):
            result = source
        else:
            result = self._renamed(source, names, new_values)
        self.memo[id(source)] = (source, result)
        return result

    def value(self, v):
        if isinstance(v, Source):
            return self(v)
        if type(v) is tuple:
            new = tuple(self.value(i) for i in v)
            return v if all(n is o for n, o in zip(new, v)) else new
        return v

    def _renamed(self, source, names, values):
        cls = type(source)
        if cls is ModuleAliasSource or cls is ModuleBindSource:
            values[names.index("index")] = self._alias(source.index)
        elif cls is GuardAliasSource:
            prefix, _, number = source.alias.rpartition("t")
            if prefix != "__bg_" or not number.isdigit():
                raise _Refused(f"unknown guard alias {source.alias}")
            values[names.index("alias")] = f"__bg_t{self._alias(int(number))}"
        elif cls is GuardExpressionSource and self.words:
            # its words name the module (`hooks of self.layers[0]`): the new one's, as a fresh trace says
            values[names.index("what")] = source.what.replace(self.old.describe(), self.new.describe(), 1)
        elif cls is KeyedItemSource or "alias" in names:
            raise _Refused(f"a guard alias of {cls.__name__} under the module")
        return cls(*values)

    def _alias(self, index: int) -> int:
        new = self.aliases.get(index)
        if new is None:
            raise _Refused(f"guard alias {index} was made before the recorded call")
        return new


def _reroot_guard(reroot: _Reroot, guard: Guard):
    """`guard` about the new module, or None when it is not about the recorded one."""
    source = reroot(guard.source) if guard.source is not None else None
    expected = guard.expected
    if isinstance(expected, Source):
        expected = reroot(expected)
    elif type(expected) is tuple and any(isinstance(e, Source) for e in expected):
        expected = reroot.value(expected)
    if source is guard.source and expected is guard.expected:
        return None
    return dataclasses.replace(guard, source=source, expected=expected)


def _compile_check(tx, guards: list, values: list) -> tuple:
    """(code, constants) of one expression evaluating `guards` in order on the real objects
    and, when they all hold, the tuple of the values of sources `values` (else False). The
    names of the module's own alias are bound by the caller (`_evaluate`)."""
    namespace: dict = {}
    names: dict = {}

    def bind(obj) -> str:
        name = names.get(id(obj))
        if name is None:
            name = names[id(obj)] = f"__bg_rb{len(names)}"
            namespace[name] = obj
        return name

    clauses = []
    for guard in guards:
        if guard.kind is GuardKind.SAME_OBJECT:
            other = guard.expected
            if other in tx.output.source_objects:  # read before: its object, known by the capture
                clauses.append(f"{guard.source.binding_name()} is {bind(tx.output.source_objects[other])}")
                continue
        clauses.append(guard.clause(bind))
    text = " and ".join(f"({c})" for c in clauses) if clauses else "True"
    text = f"({text}) and ({''.join(s.name() + ', ' for s in values)}True,)"  # a tuple, never empty
    return compile(text, "<repeated block guards>", "eval"), namespace


def _evaluate(check: tuple, alias: int, module):
    """Run a `_compile_check` expression with the module's alias names bound to `module`."""
    code, constants = check
    namespace = dict(constants)
    namespace[f"__bg_m{alias}"] = module
    namespace[f"__bg_d{alias}"] = module.__dict__
    try:
        # The user's objects are read here (dicts, attributes); a lookup that fails means a
        # guard does not hold for the new module, which is traced then.
        return eval(code, namespace) or None
    except Exception as e:  # noqa: BLE001 - Note [Repeated blocks]: unevaluable is a no
        raise _Refused(f"its guards cannot be checked on the new module ({type(e).__name__}: {e})") from None


# ---- recording -----------------------------------------------------------------------------

class _Start:
    """Where a recorded call began."""

    def __init__(self, tx, module_vt, args: list, kwargs: dict):
        output = tx.output
        self.ambient = _ambient(tx)
        self.module_vt = module_vt
        self.alias = _module_alias(module_vt)
        self.leaves = _flatten(args, kwargs)
        self.last = output.last_node()
        self.guards = len(output.guards)
        self.inputs = len(output.inputs)
        self.aliases = output.guard_aliases
        self.remembered = output.side_effects.remembered()
        self.watch = output.side_effects.watch()

    def finish(self, tx, result) -> "BlockRecord":
        output = tx.output
        if _ambient(tx) != self.ambient:
            raise _Refused("the call changed the grad mode or made a higher-order op")
        _check_quiet(self.watch, "the call has side effects")
        nodes = output.nodes_after(self.last)
        if not nodes:
            raise _Refused("the call recorded no op")
        module_vt = self.module_vt
        inputs = []
        window_placeholders = set()
        for source, vt, real in output.inputs[self.inputs:]:
            window_placeholders.add(vt.node)
            if not _under(source, module_vt):
                continue  # read through an object the modules share: the same input for both
            if not (vt.is_tensor and config.force_parameter_static_shapes and type(source) is GuardAliasSource
                    and type(source.inner) is ModuleSlotSource
                    and source.inner.dict_name in ("_parameters", "_buffers")):
                raise _Refused(f"graph input {source.describe()} is not a parameter or buffer")
            inputs.append((source, vt))
        for node in nodes:
            if node.op == "placeholder":
                if node not in window_placeholders:
                    raise _Refused("a placeholder the window did not add")
            elif not output.replayable_node(node):
                raise _Refused(f"op {node.format_node()} writes in place or sets the grad mode")
        window = set(nodes)
        input_tensors = [vt.example for _, vt in inputs] + [leaf.example for leaf in _tensor_leaves(self.leaves)]
        storages = {t.untyped_storage()._cdata for t in input_tensors}
        _check_result(result, window, storages)
        outputs = list(dict.fromkeys(_result_nodes(result, [])))
        specs = [output.block_result_spec(node.meta["example_value"]) for node in outputs]
        if None in specs:
            raise _Refused("a result cannot be made anew from its metadata (a view made under no_grad, "
                           "an offset into a storage)")
        aliases = range(self.aliases, output.guard_aliases)
        # the guards about the module, spelled over its own alias names: the template a
        # replay checks (with those names bound to the new module) and then re-roots
        template = _Reroot(module_vt.source, ModuleAliasSource(None, self.alias),
                           {self.alias: self.alias, **{a: a for a in aliases}}, words=False)
        rooted, checked = [], []
        for guard in list(output.guards.values())[self.guards:]:
            spelled = _reroot_guard(template, guard)
            if spelled is not None:
                rooted.append(guard)
                checked.append(spelled)
        check = (checked, [template(source) for source, _ in inputs])  # compiled when first replayed
        # objects the call gave trackers that a later call's trackers would stand for (its own)
        distinct = [vt.source for vt in output.side_effects.remembered_since(self.remembered)
                    if vt.source is not None and vt.replay_phase != REPLAY_CELL and _under(vt.source, module_vt)]
        return BlockRecord(module_vt.source, self.alias, _signature(self.leaves), self.leaves, nodes, inputs,
                           rooted, check, aliases, distinct, result, outputs, specs, self.ambient,
                           output.side_effects.watch())


def _check_quiet(watch, why: str) -> None:
    """Refuse unless nothing that existed when `watch` opened changed since: no global write,
    replayed call or hook registration, and every tracker written since is back in its
    state (an object attribute set and set back, as a context variable's `set`/`reset` does)."""
    if watch.other:
        raise _Refused(f"{why} ({watch.other})")
    for vt, before in watch.written.values():
        after = vt._save_state()
        if not _same_state(vt, before, after):
            raise _Refused(f"{why} ({vt.describe()} written)")


def _same_state(vt, before: tuple, after: tuple) -> bool:
    if len(before) == len(after) and all(b is a or (type(b) in (list, dict, set) and b == a)
                                         for b, a in zip(before, after)):
        return True
    if not vt.is_user_object or getattr(vt, "attrs", None) is None:
        return False
    slots = _state_slots(type(vt))
    if len(slots) != len(before) or len(after) != len(before):
        return False
    for name, b, a in zip(slots, before, after):
        if name == "attrs":
            if not _same_attrs(vt.value, b or {}, a or {}):
                return False
        elif b is not a:
            return False
    return True


def _same_attrs(real, before: dict, after: dict) -> bool:
    """Whether the pending attribute writes `after` leave every attribute of `real` as
    `before` did (a name missing from one stands for the real attribute)."""
    own = getattr(real, "__dict__", {})
    for name in before.keys() | after.keys():
        b = before.get(name, _REAL)
        a = after.get(name, _REAL)
        if b is a:
            continue
        b = _effective(own, name, b)
        a = _effective(own, name, a)
        if b is _UNKNOWN or a is _UNKNOWN or type(b) is not type(a) or b != a or repr(b) != repr(a):
            return False  # (repr: -0.0 is not 0.0)
    return True


_REAL = object()
_UNKNOWN = object()


def _effective(own: dict, name: str, pending):
    """The value an attribute has: a constant tracker's, else the real one (constants only)."""
    if pending is _REAL:
        if name not in own or type(own[name]) not in _CONSTANT_TYPES:
            return _UNKNOWN
        return own[name]
    if type(pending) is ConstantVariable and type(pending.value) in _CONSTANT_TYPES:
        return pending.value
    return _UNKNOWN


def _under(source, module_vt) -> bool:
    """Whether `source` is about the module (reaches its source or its aliases)."""
    marker = _Reroot(module_vt.source, _MARK, {}, words=False)
    try:
        return marker(source) is not source
    except _Refused:
        return True


_MARK = ModuleAliasSource(None, -1)  # a stand-in source, only ever compared by identity


def _result_nodes(vt, found: list) -> list:
    """The nodes of the result's tensors, in order."""
    if type(vt) is TensorVariable:
        found.append(vt.node)
    elif type(vt) is TupleVariable:
        for item in vt.items:
            _result_nodes(item, found)
    return found


def _check_result(vt, window: set, storages: set) -> None:
    if type(vt) is TensorVariable:
        if vt.source is not None or vt.node not in window or vt.node.op == "placeholder":
            raise _Refused("the result is not made by the call's ops")
        if vt.example.untyped_storage()._cdata in storages:
            raise _Refused("the result shares storage with an input or a parameter")
    elif type(vt) is ConstantVariable and type(vt.value) in _CONSTANT_TYPES:
        return
    elif type(vt) is TupleVariable and vt.source is None:
        for item in vt.items:
            _check_result(item, window, storages)
    else:
        raise _Refused(f"the result is {vt.describe()}")


@dataclasses.dataclass
class BlockRecord:
    """One recorded module call: what a replay copies (Note [Repeated blocks])."""

    source: Source          # the recorded module's source
    alias: int              # its guard alias number
    signature: tuple        # `_signature` of its inputs
    leaves: list            # its input leaves
    nodes: list             # the window's nodes, in order
    inputs: list            # (source, tracker) of the parameters and buffers it added as inputs
    guards: list            # the guards installed during it that are about the module, in order
    check: tuple            # (those guards and its parameters' sources spelled over its alias), then
                            # their `_compile_check`
    aliases: range          # the alias numbers handed out during it
    distinct: list          # sources of the objects under the module it gave trackers (identity map)
    result: object          # its result tracker
    outputs: list           # the nodes of its result's tensors (each once)
    specs: list             # what makes each of them anew (`OutputGraph.block_result_spec`)
    ambient: tuple          # `_ambient` at its start
    since: object           # the side-effect `Watch` opened at its end
    body: object = None     # its ops as a graph (`_Body`), made when first replayed

    def replay(self, tx, module_vt, args: list, kwargs: dict):
        output = tx.output
        if any(node._erased for node in self.nodes):
            raise _Refused("the recorded call was restored away")
        if _ambient(tx) != self.ambient:
            raise _Refused("the grad mode differs")
        _check_quiet(self.since, "the trace changed what the recorded call could read since it")
        alias = _module_alias(module_vt)
        leaves = _flatten(args, kwargs)
        if _signature(leaves) != self.signature:
            raise _Refused("its inputs differ in structure, constants, metadata or aliasing")
        first_new = output.guard_aliases
        aliases = {self.alias: alias}
        aliases.update({old: first_new + i for i, old in enumerate(self.aliases)})
        if type(self.check[0]) is list:
            self.check = _compile_check(tx, *self.check)
        values = _evaluate(self.check, self.alias, module_vt.value)
        if values is None:
            raise _Refused("a guard of the recorded call does not hold for it")
        reals = values[:-1]
        reroot = _Reroot(self.source, module_vt.source, aliases)
        guards = [_reroot_guard(reroot, guard) for guard in self.guards]
        sources = [reroot(source) for source, _ in self.inputs]
        if len({id(r) for r in reals}) != len(reals) or any(output.is_input(r) for r in reals):
            raise _Refused("its parameters alias each other or a graph input")
        _result_sources(self.result, reroot)  # (re-rooted now: a refusal must come before any change)
        body = self._body(output)
        distinct = [reroot(source) for source in self.distinct]
        module_vt.mark_read(tx)
        output.side_effects.keep_distinct(distinct)
        return self._commit(tx, body, leaves, guards, sources, reals, reroot)

    def _body(self, output) -> "_Body":
        """The window as a body graph registered with the capture (made on first need, and
        registered again when a restore took it away)."""
        if self.body is None:
            self.body = _Body.of(self, output)
        self.body.register(output)
        return self.body

    def _commit(self, tx, body: "_Body", leaves: list, guards: list, sources: list, reals, reroot) -> object:
        output = tx.output
        for _ in self.aliases:
            output.next_guard_alias()
        for guard in guards:
            output.add_guard(guard)
        args = []
        for source, real in zip(sources, reals):  # in the recorded order, as a fresh trace reads them
            vt = output.add_input(source, real, static=True, module_state=True)
            output.tracked[source.inner] = vt
            args.append(vt.node)
        new_leaves = _tensor_leaves(leaves)
        args.extend(new_leaves[i].node for i in body.leaves)
        args.extend(body.outer)
        results = output.call_block(tx, body.name, tuple(args), self.specs)
        return _rebuild(self.result, dict(zip(self.outputs, results)), reroot)


@dataclasses.dataclass
class _Body:
    """A recorded window as a graph of its own, which every replay calls: its inputs are
    the window's parameters and buffers (in the order it read them), its tensor arguments
    (`leaves`: the positions among them of the distinct nodes) and the nodes of the
    capture it used from outside (`outer`: read through objects the modules share, the
    same for every call); its outputs the result's tensors."""

    graph: torch.fx.Graph
    leaves: list
    outer: list
    name: str = ""

    @classmethod
    def of(cls, record: BlockRecord, output) -> "_Body":
        graph = torch.fx.Graph()
        env = {}
        for _, vt in record.inputs:
            env[vt.node] = graph.placeholder(vt.node.name)
        leaves = []
        for i, leaf in enumerate(_tensor_leaves(record.leaves)):
            if leaf.node not in env:
                env[leaf.node] = graph.placeholder(leaf.node.name)
                leaves.append(i)
        window = set(record.nodes)
        outer = []
        for node in record.nodes:
            for used in node.all_input_nodes:
                if used not in env and (used not in window or used.op == "placeholder"):
                    env[used] = graph.placeholder(used.name)
                    outer.append(used)
        inputs = [n.meta.get("example_value") for n in env]
        if any(spec[-1] for spec in record.specs) and not any(isinstance(e, torch.Tensor) and e.requires_grad
                                                             for e in inputs):
            raise _Refused("a result requires grad through no input")
        _copy(graph, record.nodes, env, output.submodules)
        graph.output(tuple(env[node] for node in record.outputs))
        return cls(graph, leaves, outer)

    def register(self, output) -> None:
        """Register the body with the capture, unless it is (again, after a restore took it away)."""
        if output.submodules.get(self.name) is not self.graph:
            self.name = output.add_block_body(self.graph)


def _copy(graph: torch.fx.Graph, nodes: list, env: dict, bodies: dict) -> None:
    """Copy `nodes` (not their placeholders, which `env` maps) into `graph`, a call of a block
    body inlined (one call per replayed block, whatever the blocks it holds)."""
    for node in nodes:
        if node.op == "placeholder":
            continue
        if node.op == "call_module":
            body = bodies[node.target]
            inner = [n for n in body.nodes if n.op == "placeholder"]
            body_env = dict(zip(inner, torch.fx.map_arg(node.args, env.__getitem__)))
            _copy(graph, list(body.nodes), body_env, bodies)
            env[node] = body_env[body.output_node()]
        elif node.op == "call_function" and node.target is operator.getitem and node.args[0].op == "call_module":
            env[node] = env[node.args[0]][node.args[1]]
        elif node.op == "output":
            env[node] = torch.fx.map_arg(node.args[0], env.__getitem__)
        else:
            env[node] = graph.node_copy(node, env.__getitem__)


def _result_sources(vt, reroot: _Reroot) -> None:
    if type(vt) is TupleVariable:
        for item in vt.items:
            _result_sources(item, reroot)
    elif vt.source is not None:
        reroot(vt.source)


def _rebuild(vt, env: dict, reroot: _Reroot):
    if type(vt) is TensorVariable:
        node = env[vt.node]
        return TensorVariable(node, node.meta["example_value"], cls=vt.cls)
    if type(vt) is TupleVariable:
        return TupleVariable([_rebuild(item, env, reroot) for item in vt.items])
    if vt.source is None:
        return vt  # a constant made in the trace
    return ConstantVariable(vt.value, reroot(vt.source))  # one read from the module: the new module's
