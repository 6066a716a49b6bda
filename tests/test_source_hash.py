"""Sources hash once (guards/sources.py `source_class`): the cached hash starts as None (an
unset slot would raise AttributeError at every source's first hash), is the dataclass
hash of the fields, and equal sources made apart hash and compare equal."""
from bytegraph.guards.sources import AttrSource, ItemSource, LocalSource


def test_a_new_source_holds_no_hash_until_hashed():
    src = AttrSource(LocalSource("self"), "weight")
    assert object.__getattribute__(src, "_hash") is None
    value = hash(src)
    assert object.__getattribute__(src, "_hash") == value == hash(src)


def test_equal_sources_made_apart_hash_equal():
    a = ItemSource(AttrSource(LocalSource("m"), "layers"), 0)
    b = ItemSource(AttrSource(LocalSource("m"), "layers"), 0)
    assert a is not b and a == b and hash(a) == hash(b)
    assert {a: 1}[b] == 1
    assert ItemSource(AttrSource(LocalSource("m"), "layers"), 1) not in {a: 1}
