"""`stack_depths` and `live_locals` on small functions with hand-computed answers."""
from __future__ import annotations

import dis
import json.decoder
import textwrap

from bytecode import Instr

from bytegraph._bytecode.analysis import UNREACHABLE, handlers, live_locals, stack_depths, stack_effect
from bytegraph._bytecode.assemble import make_code
from bytegraph._bytecode.instructions import instructions_of
from bytegraph._bytecode.versions import PY


def depth_table(fn):
    code = fn.__code__
    return [(inst.opname, depth) for inst, depth in zip(instructions_of(code), stack_depths(code))]


# 3.13's superinstructions that start with an instruction of this name on a local
_STARTS_WITH = {"LOAD_FAST": ("LOAD_FAST_LOAD_FAST",), "STORE_FAST": ("STORE_FAST_STORE_FAST", "STORE_FAST_LOAD_FAST")}


def index_of(fn, opname, argval=dis.UNKNOWN, nth=0):
    matches = [
        i for i, inst in enumerate(instructions_of(fn.__code__))
        if inst.opname == opname and (argval is dis.UNKNOWN or inst.argval == argval)
        or inst.opname in _STARTS_WITH.get(opname, ()) and (argval is dis.UNKNOWN or inst.argval[0] == argval)
    ]
    return matches[nth]


def live(fn, index):
    return live_locals(fn.__code__, index)


def add(a, b):
    return a + b


def call_with_keyword(f, x):
    return f(x, key=1)


def loop(xs):
    total = 0
    for x in xs:
        y = x * 2
        total += y
    return total + y


def try_except(f):
    msg = "fallback"
    try:
        return f()
    except ValueError:
        return msg


def generator(n):
    yield n


def test_depths_straight_line():
    two_loads = [("LOAD_FAST", 0), ("LOAD_FAST", 1)]
    assert depth_table(add) == [
        ("RESUME", 0),
        *{(3, 11): two_loads, (3, 12): two_loads, (3, 13): [("LOAD_FAST_LOAD_FAST", 0)]}[PY],  # pushes two
        ("BINARY_OP", 2), ("RETURN_VALUE", 1),
    ]


def test_depths_call_counts_null_callable_and_args_until_call():
    assert depth_table(call_with_keyword) == {
        (3, 11): [
            ("RESUME", 0), ("PUSH_NULL", 0), ("LOAD_FAST", 1), ("LOAD_FAST", 2), ("LOAD_CONST", 3),
            ("KW_NAMES", 4), ("PRECALL", 4), ("CALL", 4), ("RETURN_VALUE", 1),
        ],
        (3, 12): [  # no PRECALL
            ("RESUME", 0), ("PUSH_NULL", 0), ("LOAD_FAST", 1), ("LOAD_FAST", 2), ("LOAD_CONST", 3),
            ("KW_NAMES", 4), ("CALL", 4), ("RETURN_VALUE", 1),
        ],
        (3, 13): [  # the NULL above the callable; CALL_KW pops the names tuple too
            ("RESUME", 0), ("LOAD_FAST", 0), ("PUSH_NULL", 1), ("LOAD_FAST", 2), ("LOAD_CONST", 3),
            ("LOAD_CONST", 4), ("CALL_KW", 5), ("RETURN_VALUE", 1),
        ],
    }[PY]


def test_depths_loop_follows_for_iter_exit():
    head = [
        ("RESUME", 0), ("LOAD_CONST", 0), ("STORE_FAST", 1), ("LOAD_FAST", 0), ("GET_ITER", 1),
        ("FOR_ITER", 1), ("STORE_FAST", 2), ("LOAD_FAST", 1), ("LOAD_CONST", 2), ("BINARY_OP", 3),
        ("STORE_FAST", 2),
    ]
    add_and_jump = [("LOAD_FAST", 1), ("LOAD_FAST", 2), ("BINARY_OP", 3), ("STORE_FAST", 2), ("JUMP_BACKWARD", 1)]
    assert depth_table(loop) == head + {
        (3, 11): [*add_and_jump, ("LOAD_FAST", 0), ("LOAD_FAST", 1), ("BINARY_OP", 2), ("RETURN_VALUE", 1)],
        # FOR_ITER's exit edge reaches END_FOR with the iterator and a value (the compiler's
        # model: the interpreter pops the iterator and jumps past it); `y` may be unbound
        (3, 12): [*add_and_jump,
                  ("END_FOR", 2), ("LOAD_FAST", 0), ("LOAD_FAST_CHECK", 1), ("BINARY_OP", 2), ("RETURN_VALUE", 1)],
        # `total + y` loads both locals with one superinstruction; END_FOR pops the value and
        # the POP_TOP after it the iterator
        (3, 13): [("LOAD_FAST_LOAD_FAST", 1), ("BINARY_OP", 3), ("STORE_FAST", 2), ("JUMP_BACKWARD", 1),
                  ("END_FOR", 2), ("POP_TOP", 1),
                  ("LOAD_FAST", 0), ("LOAD_FAST_CHECK", 1), ("BINARY_OP", 2), ("RETURN_VALUE", 1)],
    }[PY]


def test_depths_exception_handlers_use_table_depth_lasti_and_exception():
    table = depth_table(try_except)
    handler_start = index_of(try_except, "PUSH_EXC_INFO")
    assert table[handler_start:] == [
        ("PUSH_EXC_INFO", 1),  # entry depth 0, no lasti, + exception
        ("LOAD_GLOBAL", 2), ("CHECK_EXC_MATCH", 3), ("POP_JUMP_FORWARD_IF_FALSE" if PY < (3, 12) else
                                                     "POP_JUMP_IF_FALSE", 3), ("POP_TOP", 2),
        ("LOAD_FAST", 1), ("SWAP", 2), ("POP_EXCEPT", 2), ("RETURN_VALUE", 1),
        ("RERAISE", 2),
        ("COPY", 3),  # cleanup handler: entry depth 1, + lasti, + exception
        ("POP_EXCEPT", 4), ("RERAISE", 3),
    ]
    covering = handlers(try_except.__code__)
    call = index_of(try_except, "CALL")
    assert covering[call].target == index_of(try_except, "PUSH_EXC_INFO")
    assert (covering[call].depth, covering[call].lasti, covering[call].entry_depth) == (0, False, 1)
    assert covering[index_of(try_except, "RESUME")] is None


def test_depths_generator_prologue():
    head = [("RETURN_GENERATOR", 0), ("POP_TOP", 1), ("RESUME", 0), ("LOAD_FAST", 0), ("YIELD_VALUE", 1),
            ("RESUME", 1), ("POP_TOP", 1)]
    assert depth_table(generator) == head + {
        (3, 11): [("LOAD_CONST", 0), ("RETURN_VALUE", 1)],
        # the body's PEP 479 guard: a handler at depth 0, + lasti, + exception
        (3, 12): [("RETURN_CONST", 0), ("CALL_INTRINSIC_1", 2), ("RERAISE", 2)],
        (3, 13): [("RETURN_CONST", 0), ("CALL_INTRINSIC_1", 2), ("RERAISE", 2)],
    }[PY]


def test_depths_of_unreachable_code():
    code = make_code(
        [Instr("LOAD_CONST", 1), Instr("RETURN_VALUE"), Instr("LOAD_CONST", 2), Instr("RETURN_VALUE")],
        like=add.__code__,
    )
    assert stack_depths(code) == [0, 0, 1, UNREACHABLE, UNREACHABLE]


def test_depths_never_exceed_stacksize_in_real_code():
    for module in (json.decoder, textwrap):
        for fn in vars(module).values():
            code = getattr(fn, "__code__", None)
            if code is not None and code.co_filename == module.__file__:
                depths = stack_depths(code)
                ends = [d + stack_effect(i, False) for i, d in zip(instructions_of(code), depths) if d >= 0]
                assert max(depths + ends) <= code.co_stacksize, fn


def test_stack_depths_is_cached_and_returns_a_copy():
    first = stack_depths(add.__code__)
    first.append(99)
    assert stack_depths(add.__code__) == {(3, 11): [0, 0, 1, 2, 1], (3, 12): [0, 0, 1, 2, 1], (3, 13): [0, 0, 2, 1]}[PY]


def written_before_read(a):
    x = 1
    return x + a


def test_a_local_written_before_read_is_not_live():
    assert live(written_before_read, 0) == {"a"}
    assert live(written_before_read, index_of(written_before_read, "LOAD_FAST", "x")) == {"a", "x"}
    assert live(add, index_of(add, "BINARY_OP")) == frozenset()


def test_a_local_read_after_a_loop_is_live_inside_it():
    for_iter = index_of(loop, "FOR_ITER")
    store_y = index_of(loop, "STORE_FAST", "y")
    assert live(loop, for_iter) == {"total", "y"}
    assert live(loop, index_of(loop, "JUMP_BACKWARD")) == {"total", "y"}
    assert live(loop, index_of(loop, "LOAD_CONST", 2)) == {"total"}  # y is about to be overwritten
    assert live(loop, store_y + 1) == {"total", "y"}
    assert "x" not in live(loop, for_iter)  # FOR_ITER's successor stores x first


def test_a_local_read_only_in_an_except_handler_is_live_inside_the_try():
    call = index_of(try_except, "CALL")
    assert live(try_except, call) == {"msg"}
    # the call's first instruction: 3.13 loads the callable before its NULL
    null_first = ("PUSH_NULL", dis.UNKNOWN)
    call_start = {(3, 11): null_first, (3, 12): null_first, (3, 13): ("LOAD_FAST", "f")}[PY]
    assert live(try_except, index_of(try_except, *call_start)) == {"f", "msg"}
    assert live(try_except, index_of(try_except, "RETURN_VALUE")) == frozenset()


def deleter(a):
    x = a
    del x
    return a


def test_delete_fast_reads_the_local():
    assert live(deleter, index_of(deleter, "DELETE_FAST")) == {"a", "x"}


def cell_writer(a):
    c = a

    def inner():
        return c

    c = 2
    return inner


def test_cells_stay_live_across_stores():
    store = index_of(cell_writer, "STORE_DEREF", "c", nth=1)
    assert live(cell_writer, store) == {"c", "inner"}
    assert live(cell_writer, index_of(cell_writer, "STORE_DEREF", "c")) == {"c"}
    assert "c" in live(cell_writer, 0)


class Base:
    def m(self, k):
        return k


class Child(Base):
    def m(self, k):
        v = k
        return super().m(v)


def uses_locals(a, b):
    c = 1
    return locals()


def test_implicit_reads_by_super_and_locals_last_until_the_call():
    m = Child.m
    super_call = index_of(m, "CALL" if PY < (3, 12) else "LOAD_SUPER_ATTR")  # 3.12: `super().m` is one op
    assert live(m, super_call) == {"self", "v"}
    assert live(m, super_call + 1) == {"v"}
    call = index_of(uses_locals, "CALL")
    assert live(uses_locals, call) == {"a", "b", "c"}


def test_live_locals_is_cached():
    assert live(loop, 5) is live(loop, 5)
