"""Variable trackers: symbolic stand-ins for the Python values a traced frame sees.

The package is built in floors, each importing only from the floors below it (no module
reaches back up: tests/test_import_cycles.py):
- the protocol: `context` (what a tracker may ask of the capture: `TraceContext`), `method_table`
  (a kind's methods as a table of rows), `factory` (making a value of another kind: functions that look the kind up
  at call time), `registry` (builders by type, builtin handlers), `base` (the tracker and
  its slots), `object_protocol` (the slots' generic fallbacks), `class_lookup`;
- the kinds, one module each (`constant`, `containers`, `iterators`, `tensor`, `objects`,
  `nn_module`, ...; features in folders: `autocast/`, `hooks/`, `hops/`): a kind imports the
  protocol and the kinds it subclasses or recognises, below it;
- the rules, tables of how callables are traced: `builtins`, `torch_functions`,
  `polyfills/`, `trace_rules` (merges them);
- `builder`: `wrap(tx, value, source)`, the registry's user.
This module is the manifest at the top: it imports every module once, so every builder,
handler, factory and polyfill is registered, and then merges the trace-rule tables
(`trace_rules.merge_tables`), before the first capture. A new kind is a new module, named
here, whose rows fill the tables (docs/architecture.md, "Adding a kind").
"""
from . import (autocast, autograd_function, autograd_ops, base, builder, builtin_methods, builtins,  # noqa: F401
               class_lookup, classes, code_object, constant, constant_results, construction, context,
               container_subclass, containers, context_vars, counter, dataclass_fields, deque, dict_keys,
               dict_subclass, dict_views, disabled_functions, dunders, environ, exceptions, factory, function_ctx,
               functions, globals_dict, hooks, hops, iterators, keyed_dicts, lazy_int, lazy_list, lazy_modules,
               legacy_tensor_types, locks, logging_calls, lru_cache, made_modules, mapping_proxy, mappings,
               method_table, namedtuples, nn_module, numpy_calls, object_protocol, objects, polyfills,
               process_groups, random_draws, registry, repeated_blocks, requires_grad, scalar_reads, set_order,
               signatures, sorting, super_object, symbolic, tensor, tensor_scalar_args, torch_contexts,
               torch_functions, torch_op_rule, trace_rules, typing_forms)
from .autocast import emit, state, trackers  # noqa: F401
from .hooks import intermediate, module, registry as hook_registry, tensor as tensor_hooks  # noqa: F401

trace_rules.merge_tables()
