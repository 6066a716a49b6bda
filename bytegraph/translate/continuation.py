"""Continuations: the rest of a chain of inlined frames after a graph break inside them.

Note [Continuations]
A break inside inlined calls leaves frames f0 (the root) ... fk (the breaking one), each
of f0..f(k-1) waiting for the result of the call it is in. After the breaking
instruction runs eagerly, the rest is `r0(..., r1(..., rk(...), ...), ...)`, where `ri`
is the resume function of fi after its call (Note [Resume function signature]) and the
value passed between the arguments of `ri` is the result of the inner call. A
continuation is that expression as one generated function, compiled through bytegraph
like any function: its capture inlines every resume function, so everything after the
break is one graph, and Python evaluates the calls innermost first, as eager would.

A continuation takes, positionally, the arguments of each waiting resume function
(outermost first) without the inner result, then all arguments of the innermost one.
It is cached per (resume functions, result positions), so a break reached again reuses
it. A break inside a continuation's capture, in a resume function it inlined, continues
the calls still waiting in the continuation (`waiting_calls`) instead of resuming the
continuation's own code, so the resume functions of a loop with a break converge.
"""
from __future__ import annotations

import types

from bytecode import Instr

from .._bytecode.assemble import make_code
from .._bytecode import sequences
from .._bytecode.code_map import CodeMap
from .._bytecode.instructions import instructions_of

_FILENAME = "<bytegraph continuation>"
_cache: dict = {}
# continuation code -> (calls, instruction index of each call's CALL: innermost first, the
# function it calls first); by identity (`CodeMap`): the entry goes with the continuation's code
_CALLS = CodeMap()


def forget_continuations() -> None:
    """Drop the cache of continuations (`bytegraph.reset()`), which hold resume functions."""
    _cache.clear()


def is_continuation_code(code: types.CodeType) -> bool:
    return code in _CALLS


def _param(link: int, name: str) -> str:
    return f"__bg_{link}_{name.removeprefix('__bg_')}"


def make_continuation(waiting: tuple, last: types.FunctionType) -> types.FunctionType:
    """The continuation calling `last`, then each `(resume function, result position)` of
    `waiting` from the innermost (the end) outwards (cached)."""
    key = (waiting, last)
    fn = _cache.get(key)
    if fn is None:
        fn = _cache[key] = _build(waiting, last)
    return fn


def _build(waiting: tuple, last: types.FunctionType) -> types.FunctionType:
    params, body, after = [], [], []
    for link, (resume, result_at) in enumerate(waiting):
        names = resume.__code__.co_varnames[:resume.__code__.co_argcount]
        before = [_param(link, n) for n in names[:result_at]]
        after.append([_param(link, n) for n in names[result_at + 1:]])
        params += before + after[-1]
        body += [*sequences.push_callable([Instr("LOAD_CONST", resume)]), *(Instr("LOAD_FAST", n) for n in before)]
    code = last.__code__
    inner = [_param(len(waiting), n) for n in code.co_varnames[:code.co_argcount]]
    params += inner
    body += [*sequences.push_callable([Instr("LOAD_CONST", last)]), *(Instr("LOAD_FAST", n) for n in inner),
             *sequences.call(len(inner))]
    for (resume, _), names in zip(reversed(waiting), reversed(after)):
        nargs = resume.__code__.co_argcount
        body += [*(Instr("LOAD_FAST", n) for n in names), *sequences.call(nargs)]
    body.append(Instr("RETURN_VALUE"))
    name = f"__bg_continue_{last.__code__.co_name.removeprefix('__bg_resume_')}"
    like = types.SimpleNamespace(
        co_argcount=len(params), co_posonlyargcount=0, co_kwonlyargcount=0, co_varnames=tuple(params),
        co_cellvars=(), co_freevars=(), co_flags=0x43, co_filename=_FILENAME, co_name=name,
        co_qualname=name, co_firstlineno=1, co_consts=(None,))
    new_code = make_code(body, like=like)
    calls = [i for i, inst in enumerate(instructions_of(new_code)) if inst.opname == "CALL"]
    _CALLS[new_code] = (waiting, tuple(calls), last)
    return types.FunctionType(new_code, last.__globals__, name)


def first_call(code: types.CodeType) -> types.FunctionType | None:
    """The function a continuation calls first (the resume function of the frame that broke);
    None if `code` is not a continuation's."""
    entry = _CALLS.get(code)
    return entry[2] if entry is not None else None


def waiting_calls(code: types.CodeType, index: int, local_vars: dict) -> list | None:
    """In a continuation stopped at its CALL instruction `index`: the calls still waiting
    for that call's result, as (resume function, trackers before the result, trackers
    after it), outermost first; None if `code` is not a continuation."""
    entry = _CALLS.get(code)
    if entry is None:
        return None
    waiting, calls, _ = entry
    n = len(waiting) - calls.index(index)  # the first CALL runs the innermost function
    out = []
    for link, (resume, result_at) in enumerate(waiting[:n]):
        names = resume.__code__.co_varnames[:resume.__code__.co_argcount]
        out.append((resume, [local_vars[_param(link, p)] for p in names[:result_at]],
                    [local_vars[_param(link, p)] for p in names[result_at + 1:]]))
    return out
