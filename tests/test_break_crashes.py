"""Programs that raised only when compiled, at graph breaks, each a differential
check on fresh state plus its graph and break counts (`explain`)."""
import torch

import bytegraph
from helpers import check, check_calls, check_sequence


def T(*shape, grad=False):
    return torch.randn(*shape, requires_grad=grad)


def counts(fn, *args):
    """(graphs, breaks, frames run eagerly) of one compiled call."""
    out = bytegraph.explain(fn, *args)
    return out.graph_count, out.graph_break_count, len(out.eager_frames)


class Obj:
    def __init__(self):
        self.w = 2.0
        self.b = 0.5


class Ctx:
    def __init__(self):
        self.entered = 0

    def __enter__(self):
        self.entered += 1
        return self

    def __exit__(self, *exc):
        return False


G = 1.5


# ---- Root cause 1: liveness of a resume function's own code -----------------------------
# A break inside a resume function took the live locals from the resume function's code,
# where `vars(...)` (read all locals, Note [Implicit reads of locals]) also counts its
# `__bg_stack_<k>` parameters: the next resume function got them as locals, with
# duplicate parameter names, so its arguments landed in the wrong locals.

def _scale(*xs, o):
    return sum(xs) * vars(o)["w"]


def loop_vars_starred(x, o):
    for i in range(2):  # the iterator is a stack slot: the resume function's parameter
        print("step", i)
        x = _scale(*[x, x], o=o)
        x = x + vars(o)["b"]
    return x


def test_break_in_resume_function_reading_vars():
    check(loop_vars_starred, T(3), Obj(), graphs=2)
    assert counts(loop_vars_starred, T(3), Obj()) == (2, 2, 0)


def while_tensor_condition_vars(x, o):
    j = 0
    while j < 2 and (x > -10).any():
        for k in range(1):
            bytegraph.graph_break()
            x = _scale(*[x], o=o) + vars(o)["b"] + k
        j += 1
    return x


def test_break_in_loop_with_tensor_condition_reading_vars():
    check(while_tensor_condition_vars, T(3), Obj())
    assert counts(while_tensor_condition_vars, T(3), Obj())[2] == 0


def _hook(g):
    return g * 2


def hook_removed_then_loop(x, o):
    handle = x.register_hook(_hook)
    handle.remove()
    j = 0
    while j < 2 and (x.sum() > -100):
        with Ctx():
            x = x * vars(o)["w"]
        j += 1
    return x


def test_hook_removed_then_loop_with_user_with_block():
    # RemovableHandle.remove's keys guard makes each call recompile (the handle id grows):
    # compared call after call on fresh state, not for "no recompile".
    check_calls(hook_removed_then_loop, T(3, grad=True), Obj(), calls=3)
    assert counts(hook_removed_then_loop, T(3, grad=True), Obj())[2] == 0


# ---- Root cause 2: a CALL entered on its own in a copy of the body -----------------------
# A break at a call inside a user `with` block runs the rest from a copy of the body,
# entered at the CALL: its KW_NAMES had been consumed by the tracer, so CPython passed the
# keyword arguments positionally.

def _kw_only(x, *, bias, mode="default"):
    print("in _kw_only", mode)
    return x + bias if mode == "other" else x


def with_kw_only_call(x):
    with Ctx():
        y = _kw_only(x, bias=G, mode="other")
    return y * 2


def test_break_at_keyword_call_inside_user_with():
    # a frame broken inside a user `with` resumes inside the block (Note [Breaks inside
    # blocks]): the callee and the rest of the frame are captured
    check(with_kw_only_call, T(3), graphs=2)
    assert counts(with_kw_only_call, T(3)) == (2, 2, 0)


def kw_only_call_in_except_body(x):
    try:
        raise ValueError("v")
    except ValueError:
        y = _kw_only(x, bias=G, mode="other")
    return y * 2


def test_break_at_keyword_call_in_except_body():
    # an `except` body keeps the body-copy path, entered before the call's KW_NAMES
    check(kw_only_call_in_except_body, T(3))
    assert counts(kw_only_call_in_except_body, T(3))[2] == 0


def _kw_break(x, *, bias):
    bytegraph.graph_break()
    return x + bias


def with_kw_call_in_expression(x, ctx):
    with ctx:
        y = _kw_break(x, bias=G) * 2
    return y + ctx.entered


def test_break_at_keyword_call_in_expression_inside_user_with():
    check(with_kw_call_in_expression, T(3), Ctx())


def with_method_kw_call(x, o):
    with Ctx():
        y = o.method(x, scale=3)
    return y


class _WithMethod:
    def method(self, x, *, scale):
        print("method")
        return x * scale


def test_break_at_method_keyword_call_inside_user_with():
    check(with_method_kw_call, T(3), _WithMethod())


# ---- Root cause 3: user attributes of tensors ---------------------------------------------
# `getattr(x, "tag", 0)` / `hasattr(x, "tag")` asked the *fake* tensor, which never has
# the real tensor's user attributes, and guarded nothing.

def tag_then_read(x, n):
    t = getattr(x, "tag", 0)
    x.tag = n
    return x * t


def test_getattr_default_on_tensor_attribute_set_by_previous_call():
    check_calls(tag_then_read, T(3), 3, calls=3)


def hasattr_tag(x):
    if hasattr(x, "tag"):
        return x + x.tag
    x.tag = 5
    return x * 2


def test_hasattr_on_tensor_attribute_set_by_previous_call():
    check_calls(hasattr_tag, T(3), calls=3)


def _tagged(value):
    t = torch.ones(3)
    if value is not None:
        t.tag = value
    return t


def read_tag(x):
    return x * getattr(x, "tag", -1)


def test_tensor_attribute_present_absent_and_changed():
    check_sequence(read_tag, [(_tagged(None),), (_tagged(2),), (_tagged(None),), (_tagged(3),), (_tagged(2),)])


def test_tensor_attribute_read_when_present():
    check(read_tag, _tagged(4), graphs=1)


# ---- Root cause 4: hasattr() answered True without a guard --------------------------------

class _Plain:
    pass


def _with_n(present):
    o = _Plain()
    if present:
        o.n = 1
    return o


def hasattr_object(o, x):
    return x + 1 if hasattr(o, "n") else x - 1


def test_hasattr_present_then_absent_on_user_object():
    check_sequence(hasattr_object, [(_with_n(True), T(2)), (_with_n(False), T(2)), (_with_n(True), T(2))])


def _function():
    def fn():
        pass
    return fn


def hasattr_function(fn, x):
    return x + 1 if hasattr(fn, "marked") else x - 1


def _marked():
    fn = _function()
    fn.marked = True
    return fn


def test_hasattr_present_then_absent_on_function():
    # the same code and globals: the function guard alone does not tell them apart
    check_sequence(hasattr_function, [(_marked(), T(2)), (_function(), T(2)), (_marked(), T(2))])


# ---- Root cause 5: a call reading the frame's locals ran in the residual code's frame ------
# (Note [Breaks that read locals]) `locals()`, `vars()`, `dir()`, `eval(s)` at a break ran
# in the transformed frame, whose locals also held the residual code's temporaries and a
# resume function's `__bg_stack_<k>` parameters.

def locals_in_loop(x):
    a = 1
    for i in range(2):
        print("step")
        x = x + len(locals())
    return x, sorted(locals()), a


def test_locals_after_break_in_loop():
    check(locals_in_loop, T(2), graphs=0)


def vars_in_root(x):
    y = x + 1
    names = sorted(vars())
    return y * len(names), names


def test_vars_without_argument_sees_only_user_locals():
    check(vars_in_root, T(2), graphs=1)
    assert counts(vars_in_root, T(2)) == (1, 1, 0)


def _reads_own_locals(x, k=3):
    z = x * k
    return z, dir(), eval("k + 1")


def calls_locals_reader(x):
    y = x.sin()
    z, names, k = _reads_own_locals(y)
    return z + k, names


def test_callee_reading_its_locals():
    check(calls_locals_reader, T(2), graphs=3)


def eval_with_globals_resumes(x):
    y = x + 1
    k = eval("G * 2", {"G": G})
    return y * k


def test_eval_with_its_own_globals_resumes():
    check(eval_with_globals_resumes, T(2), graphs=2)


# ---- Root cause 6: a jump into the middle of a try region (Note [Entering a try region]) ---
# Generated code jumping into a try region whose body ends in `raise` made the bytecode
# library size the handler from the stack at the generated code's start: "Failed to
# compute stacksize" (an internal error: the frame ran eagerly, every call).

def try_raise_in_loop(x):
    acc = x
    for i in range(2):
        try:
            print("step", i)
            acc = acc * 2
            if acc.shape[0] == 4:  # not taken: the trace goes on
                raise ValueError("v")
        except ValueError:
            acc = acc - 1
    return acc


def test_break_in_try_ending_in_raise_inside_loop():
    check(try_raise_in_loop, T(3), graphs=2)
    assert counts(try_raise_in_loop, T(3)) == (2, 2, 0)


def try_raise_in_user_with(x, ctx):
    acc = x.cos()
    with ctx:
        try:
            print("in with")
            if acc.shape[0] == 3:
                raise ValueError("v")
        except ValueError as e:
            acc = acc - len(str(e))
    return acc


def test_break_in_try_ending_in_raise_inside_user_with():
    # resumed inside the `with` and the `try` (Note [Breaks inside blocks])
    check(try_raise_in_user_with, T(3), Ctx(), graphs=2)
    assert counts(try_raise_in_user_with, T(3), Ctx()) == (2, 1, 0)
