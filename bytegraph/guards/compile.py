"""Joining all guards of one cache entry into a single generated function.

The function takes the frame's argument locals positionally (the same order as
`co_varnames`), reads globals through `G` and closure cells through `C`, and returns
True only if every clause holds; any exception while checking means "no match".
`first_failure` re-checks clause by clause to tell the user which guard failed, and
`observed` reads what that guard's source holds now.

Note [Shared guard paths]
Clauses spell their sources in full, and in a model most share long prefixes: the tensor
guard of `kwargs['input_ids']` reads that item six times, and a transformers forward's
globals are reached through the same six `__closure__` cells by dozens of clauses. The
generated function therefore reads each path that clauses spell more than once (a source
whose text is not a plain name) once, into a local `__bg_pN`, bound by the first clause
that spells it, and every later spelling uses the local (one text, one local: equal texts
are the same expression over the same scope). Everything is decided on the spelling tree of
the build (Note [Guard spelling tree] in guards/spelling.py): how often a path is read is
counted there, the spellings inside one shared outer path counting once (`_shared`), and a
clause that reads a shared path is spelled again from the tree with the locals in place,
never rendered again. The binding goes where that clause first spells the path
(`type((__bg_p0 := kwargs['input_ids'])) is ...`) when the clause is sure to evaluate it
there first: what precedes it is only names, calls and parentheses being opened, other
bindings, or one constant's `in`/`not in`, and the clause has no conditional expression,
comprehension or lambda (`_binds_first`). Otherwise (and for printed shape clauses) a
statement `__bg_pN = path` right before the clause reads it, ending the `and` chain there.
Either way the order of reads is kept: a clause reads its source before anything else, so
the read moves at most to just before the clause (never before the guards of what it reads
through), and a path whose text uses a name that its clause binds with `:=` is not shared
there. One `and` chain instead of a statement and an `if` per shared path is about a fifth
less for `compile()` (hf_bart: 18.7k AST nodes -> 15.3k) and the same per call.
`clauses` (what explain, logs and `first_failure` show) keep the full spelling.
"""
from __future__ import annotations

import re

from .guard import Guard, GuardKind
from .sources import GENERIC_GETATTR, OBJECT_REFS
from .spelling import Spelling
import torch
import math


class _Binder:
    def __init__(self):
        self.values: dict[str, object] = {}
        self._by_id: dict[int, str] = {}

    def __call__(self, obj) -> str:
        name = self._by_id.get(id(obj))
        if name is None:
            name = f"__bg_k{len(self.values)}"
            self._by_id[id(obj)] = name
            self.values[name] = obj
        return name


class CompiledGuards:
    """The guard function of one cache entry plus what is needed to explain a miss."""

    restored = False  # made by `from_text`: no `Guard` objects

    def __init__(self, guards: list[Guard], argnames: tuple[str, ...], f_globals: dict, closure):
        self.guards = guards
        self.argnames = argnames
        binder = _Binder()
        spelling = Spelling()
        nodes = spelling.clauses(guards, binder)
        self._spelled = (spelling.calls, spelling.templates, spelling.markers, nodes)
        self._clauses = None
        self.source, objects, code = _rendered(guards, spelling, nodes, argnames)
        scope = _scope(binder.values, f_globals, closure, self.source, objects)
        exec(code, scope)
        self.fn = scope["__bg_guard"]
        self._scope = scope

    @property
    def clauses(self) -> list[str]:
        """Each guard's clause, spelled in full (made when first asked: most entries never miss)."""
        if self._clauses is None:
            calls, templates, markers, nodes = self._spelled
            spelling = Spelling()
            spelling.calls, spelling.templates, spelling.markers = calls, templates, markers
            texts = spelling.texts
            self._clauses = [texts[node] for node in nodes]
        return self._clauses

    @classmethod
    def from_text(cls, source: str, values: dict, argnames: tuple[str, ...], f_globals: dict,
                  closure, code=None) -> "CompiledGuards":
        """The guard function of text `source` (a `.source` written by another process) with
        its `__bg_k<N>`/`__bg_o<N>` names bound to `values` (the capture cache). It has no
        `Guard` objects: `first_failure` cannot name the one that fails (None). `code`: the
        text's code object, as `code()` gave it (else the text is compiled)."""
        self = cls.__new__(cls)
        self.guards, self._clauses, self.argnames, self.source = [], [], argnames, source
        self.restored = True
        scope = _scope(values, f_globals, closure, source, {})
        exec(code if code is not None else _code_of(source), scope)
        self.fn = scope["__bg_guard"]
        self._scope = scope
        return self

    def code(self):
        """The code object of the guard function's text (`from_text` takes it again)."""
        return _code_of(self.source)

    def bound_values(self) -> dict:
        """The objects the function's text names `__bg_k<N>` and `__bg_o<N>`, by name."""
        return {name: self._scope[name] for name in dict.fromkeys(_BOUND_NAME.findall(self.source))}

    def first_failure(self, values: tuple) -> Guard | None:
        """The first guard that does not hold for the bound argument `values`, if any."""
        local_scope = dict(zip(self.argnames, values))
        for guard, clause in zip(self.guards, self.clauses):
            try:
                ok = eval(clause, self._scope, local_scope)
            except Exception:  # a guard expression that raises means "does not hold"
                ok = False
            if not ok:
                return guard
        return None

    def observed(self, guard: Guard, values: tuple):
        """What `guard`'s source holds now for the argument `values` (`UNREADABLE` if reading
        it raises). The clauses up to `guard`'s run first, for the aliases they bind."""
        if guard.source is None:
            return UNREADABLE
        local_scope = dict(zip(self.argnames, values))
        try:
            for g, clause in zip(self.guards, self.clauses):
                eval(clause, self._scope, local_scope)
                if g is guard:
                    return eval(guard.source.name(), self._scope, local_scope)
        except Exception:  # the value cannot be read (a missing attribute, a changed type)
            return UNREADABLE
        return UNREADABLE


UNREADABLE = object()  # `observed` of a guard whose source cannot be read now


_WALRUS = re.compile(r"\b(\w+) :=")  # \b: a match is tried at word starts only, not inside each name
_NAME = re.compile(r"__bg_\w+")


def _render(guards: list[Guard], spelling: Spelling, clauses: list[int], argnames: tuple[str, ...]) -> str:
    """The guard function: the clauses joined by `and`, every shared path read once into a
    local, bound by the first clause that spells it or in a statement right before it
    (Note [Shared guard paths])."""
    shared = _shared(spelling, clauses)
    touched = spelling.touched(shared)
    texts = spelling.texts
    aliases: dict = {}  # the text of a shared path -> its local
    body: list[str] = []  # statements
    group: list[str] = []  # clauses since the last statement
    for guard, node in zip(guards, clauses):
        clause = texts[node]
        if not touched[node]:
            group.append(clause)
            continue
        walrus = None
        new: list = []  # (text, alias) of the paths this clause reads first
        new_nodes: list = []  # their nodes
        for read in spelling.reads(node, touched, aliases, set(), []):
            text = texts[read]
            if text not in shared:
                continue
            if walrus is None:
                walrus = set(_WALRUS.findall(clause)) if ":=" in clause else ()
            if walrus and walrus.intersection(_NAME.findall(text)):
                continue
            new.append((text, f"__bg_p{len(aliases) + len(new)}"))
            new_nodes.append(read)
        if new and guard.kind is not GuardKind.SHAPE:
            done: set = set()
            rendered = spelling.binding(node, touched, aliases, dict(new), done)
            if len(done) == len(new) and _binds_first(rendered, new):
                aliases.update(new)
                group.append(rendered)
                continue
        for (text, alias), read in zip(new, new_nodes):
            if group:
                body.append(f"if not {_conjunction(group)}: return False")
                group = []
            expression = spelling.expand(read, touched, aliases)
            aliases[text] = alias
            body.append(f"{alias} = {expression}")
        group.append(spelling.expand(node, touched, aliases))
    body.append(f"return {_conjunction(group)}" if group else "return True")
    statements = "\n        ".join(body)
    return (f"def __bg_guard({', '.join(argnames)}):\n"
            f"    try:\n"
            f"        {statements}\n"
            f"    except Exception:\n"
            f"        return False\n")


# Possessive: a prefix that does not match fails at once, with no retry of every way to split
# its names into `[\w(]` characters (the same strings match as with `(?:[\w(]|\w+ := )*`).
_FIRST_READ = re.compile(r"(?:'\w*' (?:not )?in )?(?:\(|\w++(?: := )?)*+")


def _binds_first(clause: str, new: list) -> bool:
    """Whether every alias of `new` is bound in `clause` before anything the clause might not
    evaluate or evaluates out of its written order: what precedes each `(alias := ` is only
    names, calls and parentheses being opened, other bindings, or one constant's `in` /
    `not in`, and the clause has no conditional expression, comprehension or lambda
    (Note [Shared guard paths])."""
    if "\0" in clause or " if " in clause or " for " in clause or "lambda" in clause:
        return False  # \0: a marker left (some alias was never spelled)
    for _, alias in new:
        at = clause.find(f"({alias} := ")
        if at < 0 or not _FIRST_READ.fullmatch(clause, 0, at):
            return False
    return True


def _shared(spelling: Spelling, clauses: list[int]) -> set:
    """The texts of the sources worth a local: read (spelled not as a plain name, not binding
    one) more than once, where the spellings inside one shared outer path count once (it is
    read once); outer paths are decided first (a source's text is longer than that of every
    source it reads through). A clause may spell its own source several times
    (`type(s) is F and s.__code__ is C`): counted in the clause's text when that clause is
    the only one spelling it (a text spelled by two is read twice whatever the counts)."""
    top, within = spelling.read_counts(clauses)
    texts = spelling.texts
    candidates = []  # (text, its reads by clauses, {the texts spelling it: how many times})
    for text, outers in within.items():
        reads, clause = top.pop(text, (0, None))
        if reads == 1:
            reads = texts[clause].count(text)
        if ":=" not in text and not text.isidentifier():
            candidates.append((text, reads, outers))  # whether it is read twice: decided below
    for text, (reads, clause) in top.items():
        if reads == 1:
            reads = texts[clause].count(text)
        if reads > 1 and ":=" not in text and not text.isidentifier():
            candidates.append((text, reads, {}))
    shared: set = set()
    for text, reads, outers in sorted(candidates, key=lambda c: len(c[0]), reverse=True):
        for outer, times in outers.items():
            reads += 1 if outer in shared else times
        if reads > 1:
            shared.add(text)
    return shared


def _conjunction(clauses: list[str]) -> str:
    return "(" + " and \\\n            ".join(f"({c})" for c in clauses) + ")"


def _scope(values: dict, f_globals: dict, closure, source: str, objects: dict) -> dict:
    """The generated function's globals: the bound values, the objects of `ObjectSource`s
    under both their numbered names (the function's) and their own (the clauses', which
    `first_failure` evaluates), `G`, `C` and the modules printed shape guards call."""
    scope = {"__builtins__": __builtins__, "G": f_globals, "C": closure}
    for own, numbered in objects.items():
        scope[own] = scope[numbered] = OBJECT_REFS[own]
    if GENERIC_GETATTR in source:
        scope[GENERIC_GETATTR] = object.__getattribute__
    if "math." in source or "torch." in source:  # printed shape guards (graph/shapes.py) may call them
        scope.update(math=math, torch=torch)
    scope.update(values)
    return scope


_OBJECT_NAME = re.compile(r"__bg_obj_\d+")  # ObjectSource.name()
_BOUND_NAME = re.compile(r"\b__bg_[ko]\d+\b")  # the names `_Binder` and `_numbered_objects` give


# Note [Guard code cache]
# `compile()` of a model's guard function is about half of building its guards (hf_bert: 15
# of 23 ms for ~490 clauses) and its text is the same whenever the same program is captured
# again on the same kind of inputs: a new instance of the model, each of a model's identical
# blocks compiled on its own, a capture after `bytegraph.reset()`. The only part of the text
# that names a particular object is an `ObjectSource`'s name (`__bg_obj_<id>`); the function's
# text numbers those in order of appearance instead (`__bg_o0`, ...; everything else it binds
# is numbered already, `_Binder`), so equal programs give equal texts, and the code object of
# a text is kept (the last `_CODE_CACHE_SIZE` texts). A kept code object is executed in the
# new entry's own scope, which binds every name to this capture's objects.
# Rendering the text (deciding the shared paths, spelling the clauses again with their locals)
# is then most of what is left, and it too is a function of the spelling tree alone: each
# node's kind of source, template and the nodes it spells, each clause's guard kind, the
# argument names (`Spelling.shape`; every object a clause binds is a name in its text). So the
# rendered text and its code are kept by that key as well (`_RENDERED`, as many): a capture of
# a program rendered before spells its clauses once, as templates, and renders and compiles
# nothing; its clauses in full are made only if asked for (`CompiledGuards.clauses`: a miss
# to explain). The key holds strings and tuples only, never the objects.
_CODE_CACHE: dict[str, object] = {}  # guard function text -> its code object, least recently used first
_CODE_CACHE_SIZE = 64


# spelling tree -> (function text, its numbered objects, its code), least recently used first
_RENDERED: dict[tuple, tuple] = {}


def _rendered(guards: list[Guard], spelling: Spelling, clauses: list[int], argnames: tuple[str, ...]) -> tuple:
    """The guard function's text with its objects numbered, the names numbered (as
    `_numbered_objects`) and its code, rendered and compiled or kept (Note [Guard code cache])."""
    key = (argnames, tuple([guard.kind for guard in guards]), *spelling.shape())
    rendered = _RENDERED.pop(key, None)
    if rendered is None:
        source, objects = _numbered_objects(_render(guards, spelling, clauses, argnames))
        rendered = (source, objects, _code_of(source))
        if len(_RENDERED) >= _CODE_CACHE_SIZE:
            del _RENDERED[next(iter(_RENDERED))]
    _RENDERED[key] = rendered
    return rendered


def _numbered_objects(source: str) -> tuple[str, dict]:
    """`source` with each `ObjectSource` name replaced by `__bg_o<N>` (N in order of first
    appearance), and the names replaced: {own name: numbered name}."""
    objects: dict = {}
    numbered = _OBJECT_NAME.sub(lambda m: objects.setdefault(m.group(0), f"__bg_o{len(objects)}"), source)
    return numbered, objects


def _code_of(source: str):
    """The code object of the guard function `source` (Note [Guard code cache])."""
    code = _CODE_CACHE.pop(source, None)
    if code is None:
        code = compile(source, "<bytegraph guards>", "exec")
        if len(_CODE_CACHE) >= _CODE_CACHE_SIZE:
            del _CODE_CACHE[next(iter(_CODE_CACHE))]
    _CODE_CACHE[source] = code
    return code
