"""`dataclasses.fields(obj)` answered from the class, without tracing its body.

`fields` is `getattr(obj, '__dataclass_fields__')` filtered by each field's kind, a
generator over the class's field table; `transformers`' `ModelOutput` calls it in
`__post_init__` and in `__setattr__` for every field set, so a model's output alone traced
about a thousand instructions of it. When the argument is a class or an instance whose
class the trace knows (pinned by its type guard or made in the trace), whose attribute
lookups are the generic ones, and which has no `__dataclass_fields__` of its own, the
table is read from the class that defines it, wrapped like any outside dict (guarded by
its type and keys; each `Field` guarded by its type when wrapped, and by the values the
program reads from it), and filtered on the fields' kinds at trace time: a field's kind is
set by `dataclass()` when the class is made, taken as fixed like the class. Any other
argument runs the function's own body, traced as written.
"""
from __future__ import annotations

import dataclasses

from .registry import handles
from .class_lookup import MISSING, class_dict_source, class_lookup
from .classes import ClassVariable
from .containers import TupleVariable
from .functions import UserFunctionVariable
from .objects import UserObjectVariable, _instance_dict, python_getattribute

_TABLE = "__dataclass_fields__"


@handles(dataclasses.fields)
def _fields(tx, fn, args, kwargs):
    cls = _known_class(tx, args[0]) if len(args) == 1 and not kwargs else None
    owner, table = class_lookup(cls, _TABLE) if cls is not None else (None, MISSING)
    if type(table) is not dict:
        return UserFunctionVariable(fn).call_function(tx, args, kwargs)
    source = class_dict_source(owner, _TABLE)
    table_vt = tx.wrap(table, source)
    return TupleVariable([table_vt.items[name] for name, field in table.items()
                          if field._field_type is dataclasses._FIELD])


def _known_class(tx, vt) -> type | None:
    """The class `getattr(vt, '__dataclass_fields__')` reads it from, when no Python hook
    or instance attribute can intervene (else None)."""
    if isinstance(vt, ClassVariable):
        cls = vt.cls
        meta = type(cls)
        return cls if python_getattribute(meta) is None and class_lookup(meta, _TABLE)[1] is MISSING else None
    if not isinstance(vt, UserObjectVariable):
        return None
    cls = type(vt.value)
    if python_getattribute(cls) is not None:
        return None
    if vt.attrs and _TABLE in vt.attrs:
        return None
    if vt.source is not None:
        own = _instance_dict(vt.value)
        if own is not None and _TABLE in own:
            return None
        if own is not None:
            tx.guard_attr_presence(vt.source, _TABLE, False)
    return cls
