"""Memo of fake-tensor results by (op, argument metadata).

Under static shapes an op's output metadata is a function of the op, the metadata of
its tensor arguments (shape, stride, storage offset, dtype, device, requires_grad) and
its constant arguments, plus the default dtype and the grad mode. Running an op through
`FakeTensorMode` costs tens of microseconds, and an op on tensors that require grad
(parameters) hundreds, more for composite ops such as `matmul` or `linear` that
decompose into several; building a fake tensor from remembered metadata costs about ten.

Only a result that is one tensor sharing no storage with any argument is memoized (so
not an in-place or `out=` result, nor a view of an argument), at storage offset 0, and
not a leaf that requires grad. Such a result may still be a view of a temporary the op
made (`linear` of a 3-d input returns one); as the program cannot reach that temporary
and reads of view-ness break the graph (`vars/tensor.py`), it is rebuilt as a plain
tensor when made with grad mode on, and as a view of a fresh temporary (`as_strided` of
one with the old temporary's sizes, dispatched under no_grad like the op was) when made
under no_grad: such a view refuses a later in-place op that needs grad, as the op's own
result does. A result that requires grad gets autograd history from
`_FreshResult`, a node whose input is an argument that requires grad (one is enough:
fake tensors never run backward, and each input costs a device query): it is a
non-leaf like the op's real result, so `requires_grad`, `is_leaf`, `grad_fn is None`
and later in-place ops behave the same. Everything else dispatches for real.

Under symbolic sizes (graph/shapes.py) the same memo answers, Note [Symbolic memo], and
it also answers views of symbolic fakes, at the fake mode's dispatch, Note [Symbolic views],
and above autograd for an op's view of its argument, Note [Views of arguments].
"""
from __future__ import annotations

import operator

import torch
from torch._subclasses.fake_tensor import FakeTensor, FakeTensorMode, in_kernel_invocation_manager
from torch.fx.experimental.sym_node import SymNode

from .fake_alloc import empty_fake, empty_symbolic_fake, new_fake

_CONSTANT_TYPES = frozenset({int, float, bool, str, type(None), torch.dtype, torch.device, torch.layout,
                             torch.memory_format, type(Ellipsis)})
_memo: dict = {}


class _NotMemoizable(Exception):
    pass


# Note [Symbolic memo]
# With a ShapeEnv, a symbolic op's result is a function of the op, its arguments' metadata
# as expressions over the input symbols (sizes, strides, SymInt arguments: `node.expr`,
# replacements applied), and the ShapeEnv's facts: the symbols' hints and ranges, the
# replacements, the guards so far (`Shapes.state_token`, which interns them). A key with a
# symbolic part carries that token, so an answer is only reused in the same state (in a
# later capture of the same function, or anywhere the facts are the same). From the same
# state the kernel teaches the ShapeEnv the same facts, and an answer must teach them too:
# a run that only added guards (with the axioms they imply: slicing to `t // 2` guards
# `t // 2 <= t`, which the ShapeEnv cannot prove) is remembered with that lesson, which the
# answer replays (`Shapes.lesson_since`, `Shapes.replay`); a run that learned anything else
# (a range refined, a replacement, divisibility) is not remembered. A symbolic result is
# rebuilt with SymInts over the same expressions and hints, which is what the kernel's own
# SymInt arithmetic makes, over a storage of the size the result's own had (Note [Symbolic
# allocation], graph/fake_alloc.py).
_SYMBOLIC = object()  # marks a key part holding expressions (the key then needs the state token)


def _size_key(s):
    t = type(s)
    if t is int:
        return s
    if t is torch.SymInt:
        return (_SYMBOLIC, s.node.expr)
    raise _NotMemoizable


def _key_of(x, symbolic: list):
    t = type(x)
    if t is FakeTensor:
        if x._has_symbolic_sizes_strides:
            symbolic.append(True)
            return (t, tuple(map(_size_key, x.shape)), tuple(map(_size_key, x.stride())),
                    _size_key(x.storage_offset()), x.dtype, x.device, x.requires_grad)
        return (t, tuple(x.shape), x.stride(), x.storage_offset(), x.dtype, x.device, x.requires_grad)
    if t in _CONSTANT_TYPES:
        return (t, x)
    if t is tuple or t is list or t is torch.Size:
        return (t, tuple(_key_of(i, symbolic) for i in x))
    if t is slice:
        return (t, _key_of(x.start, symbolic), _key_of(x.stop, symbolic), _key_of(x.step, symbolic))
    if t is torch.SymInt or t is torch.SymFloat or t is torch.SymBool:
        symbolic.append(True)
        return (t, x.node.expr)
    raise _NotMemoizable


def static_view(target, args: tuple, shapes) -> bool:
    """Whether the call is basic indexing of a static fake (`x[:, :, ::2]`, `x[0, None]`):
    its result is a view of `x`, which the memo does not keep (Note [Views of arguments]),
    so its key is not worth making. A model slices tensors dozens of times per capture."""
    return shapes is None and target is operator.getitem and len(args) == 2 and type(args[0]) is FakeTensor \
        and _basic_index(args[1])


def _basic_index(index) -> bool:
    if type(index) is tuple:
        return all(map(_basic_item, index))
    return _basic_item(index)


def _basic_item(item) -> bool:
    t = type(item)
    if t is slice:
        return all(type(p) is int or p is None for p in (item.start, item.stop, item.step))
    return t is int or item is None or item is Ellipsis


def memo_key(kind: str, target, args: tuple, kwargs: dict, shapes=None):
    """The memo key of a call, or None when the call is not memoizable; `shapes` is the
    capture's `Shapes` (graph/shapes.py) if it has symbolic values."""
    symbolic: list = []
    try:
        key = (kind, target, _key_of(args, symbolic), tuple((k, _key_of(v, symbolic)) for k, v in kwargs.items()),
               torch.get_default_dtype(), torch.is_grad_enabled())
        if symbolic:
            if shapes is None:
                return None
            key = (key, shapes.state_token())
        hash(key)
    except _NotMemoizable:
        return None
    except TypeError:  # an unhashable target or constant
        return None
    return key


class _FreshResult(torch.autograd.Function):
    """Gives a fake result built from remembered metadata the autograd history of a real
    op result: `apply(fake_mode, spec, an argument requiring grad)`."""

    @staticmethod
    def forward(ctx, fake_mode, spec, grad_input):
        return _allocate(fake_mode, spec)

    @staticmethod
    def backward(ctx, *grads):
        raise RuntimeError("bytegraph: a fake tensor's autograd history is not differentiable")


def _allocate(fake_mode, spec) -> FakeTensor:
    shape, stride, storage, dtype, device, base, _, _ = spec
    if base is not None:  # a no-grad view of a temporary: made anew the same way
        return torch.as_strided(_empty(fake_mode, *base, dtype, device), _sizes(fake_mode, shape),
                                _sizes(fake_mode, stride))
    return _empty(fake_mode, shape, stride, storage, dtype, device)


def _sizes(fake_mode, sizes):
    return sizes.rebuild(fake_mode.shape_env) if type(sizes) is _SymbolicSizes else sizes


def _empty(fake_mode, shape, stride, storage, dtype, device) -> FakeTensor:
    if storage is None:
        return empty_fake(fake_mode, shape, stride, dtype, device)
    env = fake_mode.shape_env
    return empty_symbolic_fake(fake_mode, shape.rebuild(env), stride.rebuild(env), storage.rebuild(env)[0],
                               dtype, device)


def _tensors(x, found: list) -> list:
    """The fake tensors in an argument structure (the structures `_key_of` accepts)."""
    t = type(x)
    if t is FakeTensor:
        found.append(x)
    elif t is tuple or t is list:
        for item in x:
            _tensors(item, found)
    elif t is slice:
        _tensors((x.start, x.stop, x.step), found)
    return found


def _arguments(args: tuple, kwargs: dict) -> list:
    return _tensors(tuple(kwargs.values()), _tensors(args, []))


def lookup(fake_mode, key, args: tuple, kwargs: dict, shapes=None) -> FakeTensor | None:
    """The remembered result of the call `key` was made from, or None (dispatch for real);
    an answer teaches `shapes` what the call taught it (Note [Symbolic memo])."""
    spec = _memo.get(key)
    if spec is None:
        return None
    if type(spec) is _ArgumentView:
        result = _view_of_argument(fake_mode, _arguments(args, kwargs)[0], spec)
        if spec[3]:
            shapes.replay(spec[3])
        return result
    if not spec[-1]:
        result = _allocate(fake_mode, spec)
    else:
        grad_input = next((a for a in _arguments(args, kwargs) if a.requires_grad), None)
        if grad_input is None:
            return None
        result = _FreshResult.apply(fake_mode, spec, grad_input)
        if not result.requires_grad:
            return None
    if spec[-2]:
        shapes.replay(spec[-2])
    return result


def result_spec(example) -> tuple | None:
    """What `refresh` needs to make a result like the static fake `example` anew (its
    metadata), or None when it cannot be made so: as `remember` decides, not at storage
    offset 0, a leaf that requires grad, a view made under no_grad (and symbolic sizes)."""
    if type(example) is not FakeTensor or example._has_symbolic_sizes_strides:
        return None
    if (example.requires_grad and example.is_leaf) or (example._is_view() and not torch.is_grad_enabled()):
        return None
    sizes = _metadata(example)
    if sizes is None:
        return None
    return (*sizes, example.dtype, example.device, None, (), example.requires_grad)


def refresh(fake_mode, spec: tuple, grad_input) -> FakeTensor:
    """A new fake result of `result_spec`'s `spec`, with autograd history from `grad_input`
    (a fake that requires grad) when it requires grad."""
    if not spec[-1]:
        return _allocate(fake_mode, spec)
    return _FreshResult.apply(fake_mode, spec, grad_input)


def remember(key, args: tuple, kwargs: dict, result, lesson: tuple = ()) -> None:
    """Record `result`'s metadata if it is memoizable (see the module docstring), with what
    the call taught the ShapeEnv."""
    if type(result) is not FakeTensor:
        return
    tensors = _arguments(args, kwargs)
    if any(torch._C._is_alias_of(result, a) for a in tensors):
        view = _ArgumentView.of(result, tensors, kwargs, lesson)
        if view is not None:
            _memo[key] = view
        return
    if result.requires_grad and result.is_leaf:
        return
    sizes = _metadata(result)
    if sizes is None:
        return
    base = None
    if result._is_view() and not torch.is_grad_enabled():
        base = _metadata(result._base) if result._base.dtype == result.dtype else None
        if base is None:
            return
    _memo[key] = (*sizes, result.dtype, result.device, base, lesson, result.requires_grad)  # lookup reads the last two


def _metadata(t) -> tuple | None:
    """`t`'s (sizes, strides, storage size) as the memo keeps them (the storage size only
    for symbolic sizes), or None when they cannot be kept: `t` not at storage offset 0, or
    sizes not over backed input symbols."""
    offset = t.storage_offset()
    if type(offset) is not int or offset != 0:  # never a SymInt's bool (that would guard)
        return None
    if t._has_symbolic_sizes_strides:
        shape, stride = _SymbolicSizes.of(t.shape), _SymbolicSizes.of(t.stride())
        storage = _SymbolicSizes.of((t.untyped_storage().nbytes(),))
        return None if shape is None or stride is None or storage is None else (shape, stride, storage)
    return tuple(t.shape), t.stride(), None


# Note [Symbolic views]
# A view of a tensor with symbolic sizes (or with SymInt arguments) goes through torch's
# symbolic view kernels: `view`'s `_reshape_view_helper`, slicing's bound checks, ~0.5-2 ms
# each, where a memo answer costs ~80 µs. The result of a view op is a function of the op,
# its base's sizes, strides and offset as expressions, its other arguments and the ShapeEnv's
# facts, which is the key of Note [Symbolic memo] (kind "view"). Each result's sizes,
# strides and storage offset are remembered, and an answer is the meta `as_strided` of the
# base with them, run as Note [Direct views] (graph/fake_mode.py) runs a view's kernel: on
# the fake tensor itself, below autograd (whose view tracking above is the op's own), the
# storage shared. As for every symbolic memo entry, an answer replays the guards the kernel
# run added, and a run that taught the ShapeEnv anything else is not remembered.
_AS_STRIDED = torch.ops.aten.as_strided.default


def symbolic_view(mode, shapes, func, types, args: tuple):
    """The fake result(s) of view op `func` on `args` under the capture's `shapes`."""
    if mode.bg_view_known and func is _AS_STRIDED:  # Note [Views of arguments]
        return _strided_view(mode, *args)
    key = memo_key("view", func, args, {}, shapes)
    if key is not None:
        spec = _memo.get(key)
        if spec is not None:
            listed, specs, lesson = spec
            out = _views_of(mode, args[0], listed, specs)
            if lesson:
                shapes.replay(lesson)
            return out
        mark = shapes.mark()
    out = FakeTensorMode.dispatch(mode, func, types, args, {})
    lesson = shapes.lesson_since(mark) if key is not None else None
    if lesson is not None:
        listed = type(out) is list
        specs = [_view_spec(t) for t in (out if listed else (out,))]
        if None not in specs:
            _memo[key] = (listed, specs, lesson)
    return out


def _view_spec(t) -> tuple | None:
    if type(t) is not FakeTensor:
        return None
    spec = (_SymbolicSizes.of(t.shape), _SymbolicSizes.of(t.stride()), _SymbolicSizes.of((t.storage_offset(),)))
    return None if None in spec else spec


def _views_of(mode, base, listed: bool, specs: list):
    env = mode.shape_env
    outs = [_strided_view(mode, base, shape.rebuild(env), stride.rebuild(env), offset.rebuild(env)[0])
            for shape, stride, offset in specs]
    return outs if listed else outs[0]


def _strided_view(mode, base, shape, stride, offset) -> FakeTensor:
    """The view of `base` with these sizes, strides and offset, below autograd."""
    with in_kernel_invocation_manager(mode):
        out = _AS_STRIDED(base, shape, stride, offset)
    return new_fake(mode, out, base.fake_device)


class _SymbolicSizes(tuple):
    """Sizes (or strides) of a symbolic result as ints and (expression, hint) pairs."""

    @classmethod
    def of(cls, sizes) -> "_SymbolicSizes | None":
        """The sizes remembered, or None when one is not over backed input symbols."""
        items = []
        for s in sizes:
            if type(s) is int:
                items.append(s)
                continue
            node = s.node
            hint = node._hint
            if type(s) is not torch.SymInt or type(hint) is not int:
                return None
            items.append((node.expr, hint))
        return cls(items)

    def rebuild(self, env) -> list:
        return [s if type(s) is int else torch.SymInt(SymNode(s[0], env, int, s[1])) for s in self]


# Note [Views of arguments]
# A composite view op (`reshape`, indexing, `flatten`) on a symbolic fake does its SymInt
# arithmetic above the fake mode's dispatch, in torch's C++ composite kernel, each step a
# Python `SymNode` operation (`reshape(b * t, d)`: ~0.7 ms; a slice to `t // 2`: ~0.45),
# which the memo of Note [Symbolic views] below it cannot skip. When an op's one tensor
# argument is symbolic and its result is a view of that argument's storage (its `_base` the
# argument's), with the same dtype and conj and neg bits, but not the argument itself, the
# result's sizes, strides and storage offset are a function of the key as for any symbolic
# result (Note [Symbolic memo]), and an answer is the argument's `as_strided` to them. That
# runs above autograd, so autograd makes the view (`_base`, the version counter, the
# creation mark of a view made under no_grad) as it does for the op's own result, and the
# fake mode answers it with its meta kernel (`bg_view_known`), not torch's fake path, whose
# storage bound checks could guard what the op's run did not. The lesson is replayed as for
# every symbolic answer. Not kept: static views (they cost microseconds above the dispatch,
# and their kernels are answered directly there, Note [Direct views] in graph/fake_mode.py);
# ops with another tensor argument (a tensor index: the offset can depend on the value of
# a constant fake, which the key does not hold); ops writing to `out=`.
class _ArgumentView(tuple):
    """(sizes, strides, storage offset as `_SymbolicSizes`, lesson) of a view of an op's
    one tensor argument."""

    @classmethod
    def of(cls, result, tensors: list, kwargs: dict, lesson: tuple) -> "_ArgumentView | None":
        """The entry for `result` of an op on `tensors` (its fake tensor arguments), or None."""
        if len(tensors) != 1 or "out" in kwargs:
            return None
        base = tensors[0]
        if result is base or not result._is_view():
            return None
        if not (result._has_symbolic_sizes_strides or base._has_symbolic_sizes_strides):
            return None
        if result._base is not (base._base if base._is_view() else base) or result.dtype != base.dtype \
                or result.is_conj() != base.is_conj() or result.is_neg() != base.is_neg():
            return None
        spec = _view_spec(result)
        return None if spec is None else cls((*spec, lesson))


def _view_of_argument(fake_mode, base, spec: _ArgumentView) -> FakeTensor:
    """The view of `base` that `spec` remembers, made above autograd."""
    shape, stride, offset, _ = spec
    env = fake_mode.shape_env
    fake_mode.bg_view_known = True
    try:
        return base.as_strided(shape.rebuild(env), stride.rebuild(env), offset.rebuild(env)[0])
    finally:
        fake_mode.bg_view_known = False
