"""`**obj` of a dict subclass made in the traced code whose class overrides `keys`,
`__getitem__` or `__iter__` (transformers' ModelOutput, an OrderedDict subclass): unpacked as
CPython's dict merge does, by `obj.keys()` and `obj[k]` when the class does not keep dict's
`__iter__`, so those methods run as eagerly."""
import collections

import torch

from tests.helpers import check


class Output(collections.OrderedDict):
    """ModelOutput's shape: string keys, `__getitem__` also taking an index."""

    def __getitem__(self, k):
        if isinstance(k, str):
            return dict(self.items())[k]
        return list(self.values())[k]


class Doubling(dict):
    """A dict subclass whose `__getitem__` differs from its items, with its own `__iter__`."""

    def __iter__(self):
        return iter(list(self.keys()))

    def __getitem__(self, k):
        return super().__getitem__(k) * 2


def _sink(**kwargs):
    return kwargs


def test_unpacking_an_ordered_dict_subclass_made_in_the_trace():
    def fn(x):
        out = Output(hidden=x + 1, pooled=x.sum())
        return _sink(**out, extra=x * 2)

    check(fn, torch.randn(3), graphs=1, fullgraph=True)


def test_unpacking_runs_the_classs_getitem():
    def fn(x):
        out = Doubling(a=x, b=3)
        return _sink(**out), _sink(c=1, **out)

    check(fn, torch.randn(3), graphs=1, fullgraph=True)


def test_unpacking_a_duplicate_keyword_raises_as_eager():
    def fn(x):
        out = Output(hidden=x)
        return _sink(hidden=x, **out)

    check(fn, torch.randn(3))


_KEYS_CALLS = []


class CountingKeys(collections.OrderedDict):
    def keys(self):
        _KEYS_CALLS.append(len(self))
        return super().keys()


def test_unpacking_next_to_keywords_calls_keys_once():
    def fn(x):
        out = CountingKeys(a=x + 1, b=2)
        return _sink(c=1, **out)

    check(fn, torch.randn(3), graphs=1, fullgraph=True, setup=_KEYS_CALLS.clear, state=lambda: list(_KEYS_CALLS))
