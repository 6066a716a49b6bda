"""The trace rules: for any callable, one lookup says how a call of it is traced, and why.

`lookup(fn) -> Rule | None`, one of:
- GRAPH_OP: a torch op; a call adds a graph node (`vars/torch_functions.py::GRAPH_OPS`:
  what `torch.overrides` lists; the legacy tensor types, `vars/legacy_tensor_types.py`; and
  by the rule of `vars/torch_op_rule.py`, not by a table: any C function of torch's
  operator namespaces, dispatcher op or custom op);
- BUILTIN: a handler with trace-time semantics of its own (`vars/builtins.py::HANDLERS`:
  builtins, `operator`, `math`, `contextvars` (`vars/context_vars.py`);
  `vars/torch_functions.py::SPECIAL`: grad mode, RNG state, `torch.Size`, folded state
  queries...; `vars/environ.py`: reads of `os.environ`;
  `vars/typing_forms.py`: `typing.get_origin`/`get_args` folded on constants;
  `vars/autograd_function.py`: `Function.apply` of a custom autograd.Function;
  `vars/made_modules.py`: `nn.Module.__init__` while a module made in the trace is checked;
  `vars/numpy_calls.py`: numpy's scalar types and limits classes, folded on constant data);
- POLYFILL: a C function with a Python stand-in (`vars/polyfills/`), inlined in its place;
- INLINE: a Python function, whose bytecode is inlined (a function of a module whose
  functions are not inlined may be, by its code object's rule in `INLINED_CODE`: the
  functions of `os` that only read `os.environ`, `vars/environ.py`; or by its module and
  qualified name in `INLINED_NAMES`: pure helpers of torch's compiler plumbing, looked up
  by name so that bytegraph never imports their module; `NAMED_BREAKS`, by the same key, are
  breaks of an inlined module: FSDP2's hooks);
- HIGHER_ORDER: a higher-order op (`torch.cond`, `map`, `wrap`, `checkpoint`) whose
  callable arguments are traced as subgraphs (`vars/hops/`);
- BREAK: a call is a graph break; the rule says why and how to avoid it (a Python function
  of a module that does I/O or keeps global state or of a package of `PACKAGE_BREAKS`
  (functorch's transforms), a C function of `KNOWN_BREAKS` such as
  `warnings.warn`, a C function nothing models).
None: not a callable the rules decide (a class outside the tables, a bound method, a
partial, an object with `__call__`); the tracker of the value's kind decides.

The tables stay next to their handlers, declarative (callable -> handler), filled by the
modules that define the rows (`registry.handles`, `polyfills.registry.polyfill`, ...); the
manifest `vars/__init__.py` imports every module and then calls `merge_tables()` once, which
merges them into `RULES` (a callable is in at most one of them: a test checks it). Table
entries are looked up by the value itself (equal bound builtins, such as two reads of
`itertools.chain.from_iterable`, find the same rule); a Python function's
rule depends only on its module and is memoized per module name; a torch op outside the
tables gets its rule from `torch_op_rule` (`derived_rule`: GRAPH_OP, or BREAK with the
`NOT_GRAPH_OPS` reason), memoized per callable only for C functions of torch's namespaces
(module attributes, alive for good) and per type for dispatcher ops; any other C function
gets a fresh BREAK rule (such values are often transient bound methods, so no memo by
identity would be safe).
"""
from __future__ import annotations

import enum
import functools
import types
import warnings
from dataclasses import dataclass

from .factory import provides
from .environ import ENVIRON_FUNCTIONS, ENVIRON_READS
from .typing_forms import FOLDS as TYPING_FOLDS
from .autograd_function import APPLY as AUTOGRAD_APPLY
from .made_modules import MODULE_INIT
from .numpy_calls import FOLDED_CLASSES as NUMPY_FOLDED_CLASSES
from .legacy_tensor_types import RULES as LEGACY_TENSOR_TYPES
from .hops import HIGHER_ORDER_OPS
from .hooks.module import SKIPPED_HOOK_WRAPPER
from .builtins import HANDLERS, BuiltinVariable
from .polyfills import registry as polyfill_registry
from .polyfills.registry import POLYFILLS
from .polyfills.trackers import PolyfillBreakVariable, PolyfillVariable
from .torch_functions import GRAPH_OPS, SPECIAL, TorchFunctionVariable, TorchSpecialVariable
from . import torch_op_rule


class Kind(enum.Enum):
    GRAPH_OP = "graph op"
    BUILTIN = "builtin handler"
    POLYFILL = "polyfill"
    INLINE = "inline"
    HIGHER_ORDER = "higher-order op"
    BREAK = "graph break"


@dataclass(frozen=True)
class Rule:
    kind: Kind
    reason: str  # why this rule: the table it comes from, or why a call breaks
    tracker: type | None = None  # the tracker class a value with this rule gets (table rules)
    handler: object = None  # BUILTIN: the table's handler
    polyfill: polyfill_registry.Polyfill | None = None  # POLYFILL
    category: str = ""  # BREAK: the break category
    hint: str = ""  # BREAK: how to avoid the break


# C functions whose calls stay graph breaks, each with why (the call runs eagerly at the break).
_WARN_REASON = (
    "it warns through the warnings machinery, whose filters can turn the warning into an exception "
    "raised at the call: a replay after the graph would raise it after the graph's effects, and no "
    "guard watches `warnings.filters`")
KNOWN_BREAKS = {
    warnings.warn: _WARN_REASON,
    warnings.warn_explicit: _WARN_REASON,
}
_WARN_HINT = "warn outside the compiled function, or test the condition there"


def _table() -> dict:
    """Every table entry as a rule; where one callable is in two tables, the earlier wins."""
    tables = (
        ((fn, Rule(Kind.POLYFILL, "a C function with a Python stand-in in vars/polyfills",
                   PolyfillVariable, polyfill=p)) for fn, p in POLYFILLS.items()),
        ((polyfill_registry.unsupported, Rule(Kind.BUILTIN, "a polyfill body's graph break (vars/polyfills)",
                                      PolyfillBreakVariable)),),
        ((fn, Rule(Kind.BUILTIN, "a torch callable with trace-time semantics (torch_functions.SPECIAL)",
                   TorchSpecialVariable, handler=h)) for fn, h in SPECIAL.items()),
        ((fn, Rule(Kind.GRAPH_OP, "a torch op listed by torch.overrides", TorchFunctionVariable))
         for fn in GRAPH_OPS),
        ((fn, Rule(Kind.BUILTIN, "a builtin, operator or math function (builtins.HANDLERS)", BuiltinVariable,
                   handler=h)) for fn, h in HANDLERS.items()),
        ((fn, Rule(Kind.HIGHER_ORDER, "a higher-order op: its callables are traced as subgraphs (vars/hops)",
                   tracker)) for fn, tracker in HIGHER_ORDER_OPS.items()),
        ((fn, Rule(Kind.BUILTIN, "a read of os.environ: folded, the value guarded (vars/environ.py)", tracker))
         for fn, tracker in ENVIRON_READS.items()),
        ((fn, Rule(Kind.BUILTIN, "a pure query of a type annotation: folded on constant arguments "
                                 "(vars/typing_forms.py)", tracker)) for fn, tracker in TYPING_FOLDS.items()),
        ((fn, Rule(Kind.BUILTIN, "a custom autograd.Function applied: forward and backward traced into "
                                 "autograd_function_apply where a gradient flows, forward traced in place where "
                                 "none does (vars/autograd_function.py)", tracker))
         for fn, tracker in AUTOGRAD_APPLY.items()),
        ((fn, Rule(Kind.BUILTIN, "nn.Module.__init__ in the traced construction of a module made in the trace "
                                 "(vars/made_modules.py)", tracker)) for fn, tracker in MODULE_INIT.items()),
        ((fn, Rule(Kind.BUILTIN, "a numpy scalar type or limits class: folded on constant data "
                                 "(vars/numpy_calls.py)", tracker)) for fn, tracker in NUMPY_FOLDED_CLASSES.items()),
        ((fn, Rule(Kind.BUILTIN, "a legacy tensor type (torch._tensor_classes), derived from torch's runtime: "
                                 "its tracker records a call as a graph op (vars/legacy_tensor_types.py)", tracker))
         for fn, tracker in LEGACY_TENSOR_TYPES.items()),
        ((fn, Rule(Kind.BREAK, f"warnings.{fn.__name__}(): {why}", category="unsupported call", hint=_WARN_HINT))
         for fn, why in KNOWN_BREAKS.items()),
    )
    rules: dict = {}
    for table in tables:
        for fn, rule in table:
            rules.setdefault(fn, rule)
    return rules


RULES: dict = {}  # callable -> Rule, every table merged (`merge_tables`)

# The types of every callable in RULES and of the dispatcher's ops: only values of these
# types (or of a metaclass, for classes) can have a table or derived rule, so the builder
# asks `table_rule` for them alone.
RULE_TYPES: set = set()


def merge_tables() -> None:
    """Fill `RULES` and `RULE_TYPES` from every table; called once by the manifest
    (`vars/__init__.py`) after it imported every module that fills a table."""
    RULES.update(_table())
    RULE_TYPES.update({type(fn) for fn in RULES} | torch_op_rule.OP_TYPES)

C_FUNCTION_TYPES = (types.BuiltinFunctionType, types.MethodWrapperType, types.WrapperDescriptorType,
                    types.MethodDescriptorType)

# Library modules whose functions do I/O, threading or keep global state: calling them
# is a graph break (the call runs eagerly) instead of an attempt to inline them.
NOT_INLINED_MODULES = frozenset({
    "logging", "warnings", "threading", "random", "time", "os", "sys", "io", "pdb", "traceback",
    "inspect", "pickle", "subprocess", "socket", "numpy", "tqdm", "copy", "gc", "weakref", "abc",
    "atexit", "signal", "shutil", "tempfile", "pathlib", "json", "csv", "datetime",
})

# torch's own compiler plumbing and profiler hooks (decorators around optimizer methods).
NOT_INLINED_PREFIXES = ("torch._dynamo", "torch._compile", "torch.autograd.profiler", "torch.profiler",
                        "typing")

# Calls torch's own code makes for torch.compile's pipeline alone, with no effect on what
# bytegraph captures: (callee module, callee name, caller file, caller name) -> why the call
# is dropped. Anywhere else these calls keep their rule (a user's graph_break() breaks).
ELIDED_CALLS = {
    ("torch._dynamo.decorators", "graph_break", "torch/optim/optimizer.py", "_use_grad"):
        "torch.optim's grad-mode wrapper breaks the graph only so that aot_autograd sees an inference "
        "graph (pytorch#104053); bytegraph records the grad-mode switch in the graph instead",
}


def elided_call(module: str, name: str, caller) -> bool:
    """Whether a call of `module.name` from code object `caller` is dropped (ELIDED_CALLS)."""
    filename = caller.co_filename.replace("\\", "/")
    return any(module == m and name == n and caller.co_name == c and filename.endswith(f)
               for m, n, f, c in ELIDED_CALLS)


_INLINE = Rule(Kind.INLINE, "a Python function: its bytecode is traced")
_IO_MODULE = Rule(Kind.BREAK, "it does I/O or keeps global state", category="unsupported call",
                  hint="the call runs eagerly at a graph break; move it outside the compiled "
                       "function to avoid the break")

# Modules (and their submodules) whose Python functions are breaks for a reason of their
# own (module -> rule): functorch's transforms and the wrappers they return (not
# `torch.func.functional_call`, which only swaps a module's tensors and is traced).
_FUNCTORCH_TRANSFORM = Rule(
    Kind.BREAK, "it is part of functorch's transforms (torch.vmap, torch.func.grad, ...), which bytegraph "
    "does not trace: they run the function on batched or dual tensors at nesting levels",
    category="unsupported call",
    hint="apply the transform outside the compiled function, or write the batch dimension (or the "
         "derivative) out with ordinary tensor ops")
PACKAGE_BREAKS = dict.fromkeys(
    ("torch._functorch.apis", "torch._functorch.vmap", "torch._functorch.eager_transforms"), _FUNCTORCH_TRANSFORM)


# Python functions inlined although their module is not (their code object -> the rule).
INLINED_CODE = {code: Rule(Kind.INLINE, "a function of os that only reads os.environ: inlined, its reads "
                                        "folded and guarded by vars/environ.py") for code in ENVIRON_FUNCTIONS}


# Pure helpers of a module whose functions are not inlined, by (module, qualified name): the
# module is torch._dynamo's, which bytegraph never imports, so the rule cannot hold their code.
INLINED_NAMES = {
    ("torch._dynamo.external_utils", "unwrap_maybe_dynamic_int"): Rule(
        Kind.INLINE, "the graphs of torch's compiled autograd read a size they pass as an empty tensor's "
                     "second dimension with it: a size read, traced"),
}


# Python functions of an inlined module that are breaks, by (module, qualified name): the
# wrapper FSDP2 puts on its hooks (vars/hooks/module.py), looked up by name so that bytegraph
# never imports FSDP2.
NAMED_BREAKS = {
    SKIPPED_HOOK_WRAPPER: Rule(
        Kind.BREAK, "a hook of FSDP2 (fully_shard), which torch marks as not for compilers: it unshards and "
                    "reshards parameters with collectives and attaches autograd hooks",
        category="unsupported call",
        hint="a module's FSDP2 hooks run eagerly around its forward, compiled on its own (Note [Hooks run "
             "eagerly around a compiled forward])"),
}


_TORCH_OP = Rule(Kind.GRAPH_OP, "a torch op by the rule of vars/torch_op_rule.py (fake propagation decides)",
                 TorchFunctionVariable)
_DERIVED: dict = {}  # torch namespace C function -> its derived rule (Note in the module docstring)


def derived_rule(fn) -> Rule | None:
    """The rule `torch_op_rule` gives hashable `fn` (None: `fn` is no torch op): GRAPH_OP, or
    a BREAK saying why a torch callable must not be a graph op (`NOT_GRAPH_OPS`)."""
    if isinstance(fn, torch_op_rule.OP_CLASSES):
        return _TORCH_OP
    rule = _DERIVED.get(fn)
    if rule is None:
        reason = torch_op_rule.NOT_GRAPH_OPS.get(fn)
        if reason is not None:
            rule = Rule(Kind.BREAK, f"{torch_op_rule.op_name(fn)}(): {reason}", category="unsupported call",
                        hint=_IO_MODULE.hint)
        elif torch_op_rule.is_namespace_op(fn):
            rule = _TORCH_OP
        else:
            return None
        _DERIVED[fn] = rule  # fn is a namespace's attribute or a NOT_GRAPH_OPS key: alive for good
    return rule


def table_rule(fn) -> Rule | None:
    """`fn`'s table rule, else its derived torch-op rule: what the builder asks."""
    try:
        rule = RULES.get(fn)
    except TypeError:  # unhashable: no table holds it
        return None
    return rule if rule is not None else derived_rule(fn)


def lookup(fn) -> Rule | None:
    """How a call of `fn` is traced (None: the tracker of `fn`'s kind decides)."""
    try:
        rule = RULES.get(fn)
    except TypeError:  # unhashable: no table holds it
        return None
    if rule is not None:
        return rule
    rule = derived_rule(fn)
    if rule is not None:
        return rule
    kind = type(fn)
    if kind is types.FunctionType:
        return function_rule(fn.__globals__.get("__name__", "") or "", fn.__code__)
    if issubclass(kind, C_FUNCTION_TYPES):
        name = getattr(fn, "__qualname__", fn)
        return Rule(Kind.BREAK, f"calling C function {name!s}, which bytegraph does not know",
                    category="unsupported call", hint=_IO_MODULE.hint)
    return None


@functools.lru_cache(maxsize=None)
def python_rule(module: str) -> Rule:
    """INLINE for a Python function of module `module`, or BREAK for an I/O or global-state
    module (the reason is completed with the function's name by the caller)."""
    if module.split(".", 1)[0] in NOT_INLINED_MODULES or module.startswith(NOT_INLINED_PREFIXES):
        return _IO_MODULE
    for package, rule in PACKAGE_BREAKS.items():
        if module == package or module.startswith(package + "."):
            return rule
    return _INLINE


def function_rule(module: str, code: types.CodeType) -> Rule:
    """The rule of a Python function of module `module` with code `code`: its own
    (`INLINED_CODE`, `INLINED_NAMES`, `NAMED_BREAKS`), else its module's (`python_rule`)."""
    return (INLINED_CODE.get(code) or INLINED_NAMES.get((module, code.co_qualname))
            or NAMED_BREAKS.get((module, code.co_qualname)) or python_rule(module))


def is_traceable(fn: types.FunctionType) -> bool:
    """Whether bytegraph inlines calls of Python function `fn`."""
    return function_rule(fn.__globals__.get("__name__", "") or "", fn.__code__).kind is Kind.INLINE


provides("trace_rule")(lookup)
provides("is_traceable")(is_traceable)


@provides("alias_trace_rule")
def alias_rule(fn, like) -> None:
    """Give `fn` the rule of `like` unless a table already has a row for `fn`."""
    if fn not in RULES:
        RULES[fn] = RULES[like]
