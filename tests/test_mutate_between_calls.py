"""Change a value the trace read between two calls; the second call
equals eager (a guard fails and the frame recompiles, or a guard proves the old entry still
right), and the `recompiles` log names the changed value and the user line that read it.

Lines that read the value end in a marker comment so the tests can find their numbers."""
import pytest
import torch
from torch import nn

import bytegraph
from helpers import CompileCounter, assert_same, line_of

FILE = __file__
G_SCALE = 2.0


@pytest.fixture
def recompiles(recompile_log):
    return recompile_log.lines


def run_twice(fn, make_args, mutate, recompiles, *, expect_recompile=True):
    """Call `fn` eagerly and compiled, `mutate()`, call both again; compare each time.
    Returns the recompile log messages of the second call."""
    bytegraph.reset()
    counter = CompileCounter()
    compiled = bytegraph.compile(fn, backend=counter)
    assert_same(fn(*make_args()), compiled(*make_args()), "first call")
    assert counter.frame_count == 1 and recompiles == []
    mutate()
    assert_same(fn(*make_args()), compiled(*make_args()), "call after the change")
    assert counter.frame_count == (2 if expect_recompile else 1)
    return list(recompiles)


def assert_names(messages, *needles, marker):
    assert len(messages) == 1, messages
    for needle in needles:
        assert needle in messages[0], f"{needle!r} not in the recompile log: {messages[0]}"
    where = f"{FILE}:{line_of(marker, FILE)}"
    assert where in messages[0], f"{where} not in the recompile log: {messages[0]}"


X = torch.randn(3)


# ---------------------------------------------------------------- instance attribute


class Holder:
    factor = 3.0

    def __init__(self):
        self.k = 2.0

    def scaled(self, x):
        return x * self.factor  # MB-CLASS-ATTR


def read_instance_attr(x, o):
    return x * o.k  # MB-INSTANCE-ATTR


def test_instance_attribute_changed(recompiles):
    o = Holder()

    def change():
        o.k = 5.0

    messages = run_twice(read_instance_attr, lambda: (X, o), change, recompiles)
    assert_names(messages, "o.k", "2.0", marker="# MB-INSTANCE-ATTR")


def test_instance_attribute_added_shadowing_class_attribute(recompiles):
    o = Holder()

    def change():
        o.factor = 7.0

    messages = run_twice(lambda x, h: h.scaled(x), lambda: (X, o), change, recompiles)
    assert_names(messages, "factor", marker="# MB-CLASS-ATTR")


# ---------------------------------------------------------------- class attribute


def test_class_attribute_changed(recompiles):
    class Local(Holder):
        pass

    o = Local()

    def change():
        Local.factor = 11.0

    messages = run_twice(lambda x, h: h.scaled(x), lambda: (X, o), change, recompiles)
    assert_names(messages, "factor", "3.0", marker="# MB-CLASS-ATTR")


class Settings:
    gain = 1.5


def read_class_attr_through_class(x):
    return x * Settings.gain  # MB-CLASS-VIA-CLASS


def test_class_attribute_read_through_the_class_changed(recompiles):
    def change():
        Settings.gain = 4.0

    try:
        messages = run_twice(read_class_attr_through_class, lambda: (X,), change, recompiles)
    finally:
        Settings.gain = 1.5
    assert_names(messages, "Settings.gain", "1.5", marker="# MB-CLASS-VIA-CLASS")


def test_method_replaced_on_class(recompiles):
    class Local(Holder):
        def scaled(self, x):
            return x + 1

    o = Local()

    def change():
        Local.scaled = lambda self, x: x - 1

    messages = run_twice(lambda x, h: h.scaled(x), lambda: (X, o), change, recompiles)
    assert len(messages) == 1 and "scaled" in messages[0], messages


# ---------------------------------------------------------------- global


def read_global(x):
    return x * G_SCALE  # MB-GLOBAL


def test_global_changed(recompiles):
    def change():
        global G_SCALE
        G_SCALE = 9.0

    try:
        messages = run_twice(read_global, lambda: (X,), change, recompiles)
    finally:
        globals()["G_SCALE"] = 2.0
    assert_names(messages, "G_SCALE", "2.0", marker="# MB-GLOBAL")


# ---------------------------------------------------------------- closure cell


def make_closure():
    k = 2.0

    def f(x):
        return x * k  # MB-CLOSURE

    def set_k(v):
        nonlocal k
        k = v

    return f, set_k


def test_closure_cell_changed(recompiles):
    f, set_k = make_closure()
    messages = run_twice(f, lambda: (X,), lambda: set_k(6.0), recompiles)
    assert_names(messages, "closure variable k", "2.0", marker="# MB-CLOSURE")


# ---------------------------------------------------------------- default argument


def helper_with_default(x, k=2.0):
    return x * k


def call_helper(x):
    return helper_with_default(x) + 1  # the call binds the default: MB-DEFAULT


def test_default_argument_of_inlined_function_changed(recompiles):
    def change():
        helper_with_default.__defaults__ = (8.0,)

    try:
        messages = run_twice(call_helper, lambda: (X,), change, recompiles)
    finally:
        helper_with_default.__defaults__ = (2.0,)
    assert_names(messages, "helper_with_default", "2.0", marker="MB-DEFAULT")


def root_with_default(x, k=2.0):
    return x * k  # MB-ROOT-DEFAULT


def test_default_argument_of_compiled_function_changed(recompiles):
    def change():
        root_with_default.__defaults__ = (4.0,)

    try:
        messages = run_twice(root_with_default, lambda: (X,), change, recompiles)
    finally:
        root_with_default.__defaults__ = (2.0,)
    assert_names(messages, "k", "2.0", marker="# MB-ROOT-DEFAULT")


# ---------------------------------------------------------------- modules


class Net(nn.Module):
    def __init__(self):
        super().__init__()
        self.lin = nn.Linear(3, 3)
        self.act = nn.ReLU()
        self.drop = nn.Dropout(0.5)

    def forward(self, x):
        return self.drop(self.act(self.lin(x)))  # MB-MODULE


def test_module_training_flag_changed(recompiles):
    torch.manual_seed(0)
    eager = Net()
    comp = Net()
    comp.load_state_dict(eager.state_dict())
    bytegraph.reset()
    counter = CompileCounter()
    compiled = bytegraph.compile(comp, backend=counter)
    x = torch.randn(4, 3)
    for mode in ("train", "eval"):
        getattr(eager, mode)()
        getattr(comp, mode)()
        torch.manual_seed(1)
        expected = eager(x)
        torch.manual_seed(1)
        assert_same(expected, compiled(x), f"{mode} mode")
    assert counter.frame_count == 2
    assert_names(recompiles, "training", "True", marker="# MB-MODULE")


def _swap_submodule(swap, recompiles, *, recompiled: bool):
    """A Net (eval mode) eager and compiled; `swap(net)` replaces a submodule of both the
    same way between two calls. Returns the recompile log messages."""
    torch.manual_seed(0)
    eager, comp = Net().eval(), Net().eval()
    comp.load_state_dict(eager.state_dict())
    bytegraph.reset()
    counter = CompileCounter()
    compiled = bytegraph.compile(comp, backend=counter)
    x = torch.randn(4, 3)
    assert_same(eager(x), compiled(x), "before the swap")
    for net in (eager, comp):
        torch.manual_seed(5)
        swap(net)
    assert_same(eager(x), compiled(x), "after the swap")
    assert counter.frame_count == (2 if recompiled else 1)
    return list(recompiles)


def test_submodule_swapped_for_another_type(recompiles):
    messages = _swap_submodule(lambda net: setattr(net, "act", nn.Tanh()), recompiles, recompiled=True)
    assert_names(messages, "act", marker="# MB-MODULE")


def test_submodule_swapped_for_same_type_with_other_weights(recompiles):
    # parameters are graph inputs read through their sources: the old entry stays right
    messages = _swap_submodule(lambda net: setattr(net, "lin", nn.Linear(3, 3)), recompiles, recompiled=False)
    assert messages == []


def test_submodule_swapped_for_one_without_bias(recompiles):
    messages = _swap_submodule(lambda net: setattr(net, "lin", nn.Linear(3, 3, bias=False)), recompiles,
                               recompiled=True)
    assert len(messages) == 1 and "lin" in messages[0], messages
