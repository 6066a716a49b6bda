"""Hooks in the trace, one module per kind: hooks on tensors from outside and their handles
(`tensor.py`), hooks registered on graph tensors, kept as hook nodes (`intermediate.py`),
module hooks and their guards (`module.py`), and the dicts torch keeps hooks in, keyed
by handle id and guarded up to a renaming of the ids (`registry.py`). The hook HOPs themselves (the graph nodes and the
per-call slot the residual code makes) are in `bytegraph/ops/hooks.py`, below every layer
that calls them; compiled autograd's capture of backward graphs is `runtime/compiled_autograd.py`, with
the autograd ops its graphs call in `vars/autograd_ops.py`.
"""
