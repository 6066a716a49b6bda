"""Polyfills for the C types and functions of `itertools`.

Each stand-in does at call time what the C constructor does (argument checks, `iter()` of
its inputs, `tuple()` of the pools of `product`/`combinations`/`permutations`) and returns
a nested generator for the lazy part, so side effects of user iterables happen when they
happen in eager. Infinite iterators (`count`, `cycle`, `repeat`) are generators too: only
the items asked for are made."""
import itertools

from .registry import polyfill, unsupported

_MAXSIZE = 9223372036854775807  # sys.maxsize, the bound of islice's indices


@polyfill(itertools.chain, returns=itertools.chain)
def chain(*iterables):
    """`itertools.chain(*iterables)`: each iterable is iterated only when reached."""
    for iterable in iterables:
        for element in iterable:
            yield element


@polyfill(itertools.chain.from_iterable, returns=itertools.chain)
def chain_from_iterable(iterables, /):
    """`itertools.chain.from_iterable(iterables)`: lazy in the outer iterable too."""
    for iterable in iterables:
        for element in iterable:
            yield element


@polyfill(itertools.accumulate, returns=itertools.accumulate)
def accumulate(iterable, func=None, *, initial=None):
    """`itertools.accumulate(iterable, func=None, *, initial=None)`: running `func` (or `+`)."""
    it = iter(iterable)

    def run():
        total = initial
        if initial is None:
            for total in it:
                break
            else:
                return
        yield total
        for element in it:
            total = total + element if func is None else func(total, element)
            yield total
    return run()


@polyfill(itertools.compress, returns=itertools.compress)
def compress(data, selectors):
    """`itertools.compress(data, selectors)`: the items of `data` whose selector is true."""
    data_it, selectors_it = iter(data), iter(selectors)

    def run():
        for item in data_it:
            for selector in selectors_it:
                if selector:
                    yield item
                break
            else:
                return
    return run()


@polyfill(itertools.cycle, returns=itertools.cycle)
def cycle(iterable, /):
    """`itertools.cycle(iterable)`: the items once while saving them, then the saved ones forever."""
    it = iter(iterable)

    def run():
        saved = []
        for element in it:
            yield element
            saved.append(element)
        if not saved:
            return
        while True:
            for element in saved:
                yield element
    return run()


@polyfill(itertools.dropwhile, returns=itertools.dropwhile)
def dropwhile(predicate, iterable, /):
    """`itertools.dropwhile(predicate, iterable)`."""
    it = iter(iterable)

    def run():
        for element in it:
            if not predicate(element):
                yield element
                break
        for element in it:
            yield element
    return run()


@polyfill(itertools.takewhile, returns=itertools.takewhile)
def takewhile(predicate, iterable, /):
    """`itertools.takewhile(predicate, iterable)`: the failing item is consumed, as in C."""
    it = iter(iterable)

    def run():
        for element in it:
            if not predicate(element):
                return
            yield element
    return run()


@polyfill(itertools.filterfalse, returns=itertools.filterfalse)
def filterfalse(function, iterable, /):
    """`itertools.filterfalse(function, iterable)`: items for which `function` (or truth) is false."""
    it = iter(iterable)

    def run():
        for element in it:
            if not (element if function is None else function(element)):
                yield element
    return run()


@polyfill(itertools.starmap, returns=itertools.starmap)
def starmap(function, iterable, /):
    """`itertools.starmap(function, iterable)`: `function(*args)` for each `args`."""
    it = iter(iterable)

    def run():
        for args in it:
            yield function(*args)
    return run()


@polyfill(itertools.islice, returns=itertools.islice)
def islice(iterable, *args):
    """`itertools.islice(iterable, stop)` / `(iterable, start, stop[, step])`."""
    if not args or len(args) > 3:
        raise TypeError(f"islice expected {'at least' if not args else 'at most'} "
                        f"{2 if not args else 4} arguments, got {1 + len(args)}")
    start, step = 0, 1
    if len(args) == 1:
        stop = args[0]
    else:
        start, stop = args[0], args[1]
        if len(args) == 3:
            step = args[2]
    if stop is not None and not (type(stop) is int and 0 <= stop <= _MAXSIZE):
        raise ValueError("Stop argument for islice() must be None or an integer: 0 <= x <= sys.maxsize.")
    if start is None:
        start = 0
    elif not (type(start) is int and 0 <= start <= _MAXSIZE):
        raise ValueError("Indices for islice() must be None or an integer: 0 <= x <= sys.maxsize.")
    if step is None:
        step = 1
    elif not (type(step) is int and 1 <= step <= _MAXSIZE):
        raise ValueError("Step for islice() must be a positive integer or None.")
    it = iter(iterable)

    def run():
        nxt = start
        index = 0
        if stop is not None and stop <= nxt:
            for _ in range(stop):  # the C type consumes up to `stop` items before ending
                for _ in it:
                    break
                else:
                    return
            return
        for element in it:
            if index == nxt:
                yield element
                nxt = nxt + step
                if stop is not None and nxt >= stop:
                    for _ in range(index + 1, stop):  # consume the skipped items up to stop
                        for _ in it:
                            break
                        else:
                            return
                    return
            index += 1
    return run()


@polyfill(itertools.pairwise, returns=itertools.pairwise)
def pairwise(iterable, /):
    """`itertools.pairwise(iterable)`: overlapping pairs `(a, b), (b, c), ...`."""
    it = iter(iterable)

    def run():
        for previous in it:
            break
        else:
            return
        for element in it:
            yield previous, element
            previous = element
    return run()


@polyfill(itertools.product, returns=itertools.product)
def product(*iterables, repeat=1):
    """`itertools.product(*iterables, repeat=1)`: the pools are read at call time, as in C."""
    if type(repeat) is not int:
        raise TypeError(f"'{type(repeat).__name__}' object cannot be interpreted as an integer")
    if repeat < 0:
        raise ValueError("repeat argument cannot be negative")
    pools = [tuple(pool) for pool in iterables] * repeat

    def run():
        result = [()]
        for pool in pools:
            result = [prefix + (element,) for prefix in result for element in pool]
        for combination in result:
            yield combination
    return run()


def _check_r(r):
    """The `r` argument of `combinations`/`permutations`: a non-negative int."""
    if type(r) is not int:
        raise TypeError(f"'{type(r).__name__}' object cannot be interpreted as an integer")
    if r < 0:
        raise ValueError("r must be non-negative")


@polyfill(itertools.combinations, returns=itertools.combinations)
def combinations(iterable, r):
    """`itertools.combinations(iterable, r)`: index walk of the CPython docs' equivalent."""
    if type(r) is not int:
        raise TypeError(f"'{type(r).__name__}' object cannot be interpreted as an integer")
    pool = tuple(iterable)
    _check_r(r)

    def run():
        n = len(pool)
        if r > n:
            return
        indices = list(range(r))
        yield tuple(pool[i] for i in indices)
        while True:
            for i in reversed(range(r)):
                if indices[i] != i + n - r:
                    break
            else:
                return
            indices[i] += 1
            for j in range(i + 1, r):
                indices[j] = indices[j - 1] + 1
            yield tuple(pool[i] for i in indices)
    return run()


@polyfill(itertools.combinations_with_replacement, returns=itertools.combinations_with_replacement)
def combinations_with_replacement(iterable, r):
    """`itertools.combinations_with_replacement(iterable, r)`."""
    if type(r) is not int:
        raise TypeError(f"'{type(r).__name__}' object cannot be interpreted as an integer")
    pool = tuple(iterable)
    _check_r(r)

    def run():
        n = len(pool)
        if not n and r:
            return
        indices = [0] * r
        yield tuple(pool[i] for i in indices)
        while True:
            for i in reversed(range(r)):
                if indices[i] != n - 1:
                    break
            else:
                return
            indices[i:] = [indices[i] + 1] * (r - i)
            yield tuple(pool[i] for i in indices)
    return run()


@polyfill(itertools.permutations, returns=itertools.permutations)
def permutations(iterable, r=None):
    """`itertools.permutations(iterable, r=None)`: cycle walk of the CPython docs' equivalent."""
    pool = tuple(iterable)
    n = len(pool)
    if r is None:
        r = n
    else:
        _check_r(r)

    def run():
        if r > n:
            return
        indices = list(range(n))
        cycles = list(range(n, n - r, -1))
        yield tuple(pool[i] for i in indices[:r])
        while n:
            for i in reversed(range(r)):
                cycles[i] -= 1
                if cycles[i] == 0:
                    indices[i:] = indices[i + 1:] + indices[i:i + 1]
                    cycles[i] = n - i
                else:
                    j = cycles[i]
                    indices[i], indices[-j] = indices[-j], indices[i]
                    yield tuple(pool[i] for i in indices[:r])
                    break
            else:
                return
    return run()


@polyfill(itertools.repeat, returns=itertools.repeat)
def repeat(object, *args, **kwargs):
    """`itertools.repeat(object[, times])`: forever without `times`, else `max(times, 0)` times."""
    if len(args) + len(kwargs) > 1 or (kwargs and "times" not in kwargs):
        raise TypeError("repeat() takes at most 2 arguments")
    forever = not args and not kwargs
    times = args[0] if args else kwargs["times"] if kwargs else 0
    if type(times) is not int:
        raise TypeError(f"'{type(times).__name__}' object cannot be interpreted as an integer")

    def run():
        if forever:
            while True:
                yield object
        for _ in range(times):
            yield object
    return run()


@polyfill(itertools.zip_longest, returns=itertools.zip_longest)
def zip_longest(*iterables, fillvalue=None):
    """`itertools.zip_longest(*iterables, fillvalue=None)`: an exhausted input yields `fillvalue`
    and is not asked again."""
    iterators = [iter(iterable) for iterable in iterables]

    def run():
        if not iterators:
            return
        active = len(iterators)
        done = [False] * active
        while True:
            values = []
            for i, it in enumerate(iterators):
                if done[i]:
                    values.append(fillvalue)
                    continue
                for value in it:
                    values.append(value)
                    break
                else:
                    done[i] = True
                    active -= 1
                    if not active:
                        return
                    values.append(fillvalue)
            yield tuple(values)
    return run()


@polyfill(itertools.count, returns=itertools.count)
def count(start=0, step=1):
    """`itertools.count(start=0, step=1)`: `start`, `start + step`, ... by repeated addition
    (what the C type does, in its int fast path too). Numbers other than int and float
    (bool, complex, Fraction, tensors, ...) break: `PyNumber_Check` and the fast path's
    int results are not stated here."""
    if not (type(start) is int or type(start) is float) or not (type(step) is int or type(step) is float):
        unsupported("of a start or step other than an int or a float")

    def run():
        n = start
        while True:
            yield n
            n = n + step
    return run()


@polyfill(itertools.groupby, returns=itertools.groupby)
def groupby(iterable, key=None):
    """`itertools.groupby(iterable, key=None)`: the C type's state machine. A group's
    iterator ends once the outer one moved on; an item is read only when asked for; keys
    compare as `PyObject_RichCompareBool` does (identity first)."""
    it = iter(iterable)
    # [target key, current key, current value, target key set, current key/value set, group number]
    state = [None, None, None, False, False, 0]

    def step():
        value = next(it)
        state[1] = value if key is None else key(value)
        state[2] = value
        state[4] = True

    def group(target, number):
        while state[5] == number:
            if not state[4]:
                try:
                    step()
                except StopIteration:
                    return
            current = state[1]
            if not (target is current or target == current):
                return
            value = state[2]
            state[1] = state[2] = None
            state[4] = False
            yield value

    def run():
        while True:
            state[5] += 1  # the previous group's iterator ends
            while True:
                if state[4]:
                    if not state[3]:
                        break
                    target, current = state[0], state[1]
                    if not (target is current or target == current):
                        break
                try:
                    step()
                except StopIteration:
                    return
            state[0] = state[1]
            state[3] = True
            yield state[1], group(state[0], state[5])
    return run()


@polyfill(itertools.tee)
def tee(iterable, n=2, /):
    """`itertools.tee(iterable, n=2)`: `n` iterators over one buffer of the items read so
    far; one that reaches the end asks the underlying iterator again, as the C type does."""
    if type(n) is not int:
        raise TypeError(f"'{type(n).__name__}' object cannot be interpreted as an integer")
    if n < 0:
        raise ValueError("n must be >= 0")
    it = iter(iterable)
    buffer = []

    def member():
        i = 0
        while True:
            if i == len(buffer):
                for value in it:
                    buffer.append(value)
                    break
                else:
                    return
            yield buffer[i]
            i += 1
    return tuple([member() for _ in range(n)])
