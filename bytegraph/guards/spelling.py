"""The clauses of one guard build spelled once, as a tree over the sources they read.

Note [Guard spelling tree]
A model's guards spell the same sources hundreds of times (every parameter's clause spells
its module's path, ten sources deep), and the guard compiler needs three things from them:
each clause in full (what explain and `first_failure` show), how often each path is read
(which paths get a local, Note [Shared guard paths] in guards/compile.py), and each clause
again with some paths read from locals. `Spelling` is the active naming
(`sources.naming(hook=...)`) while the clauses are spelled once: every `name()` of a source
answers a marker `\\0N\\0` for node N, and the first time a source object is spelled its own
text is rendered the same way, a template over the nodes it spells, so each source is
rendered once per build. A node records its source, its template split at the markers
(`parts`: literal, node, literal, ..., literal), the nodes its rendering spelled in order,
repeats included (`calls`: what a spelling of it reads), and its text in full. A clause is a
node too (no source; its calls are what the clause spells itself). Nodes are numbered in
post-order: a node after every node it spells, so one walk down the numbers visits every
node after all that spell it (`read_counts`). Everything later is a walk over the tree:
`expand` spells a node with some sources read from locals, no clause is spelled twice.
Keyed by the source object's identity, holding the source so its id is not reused while the
build lives (not by equality: `d[1]` and `d[True]` are equal sources spelled differently).
"""
from __future__ import annotations

import re
import threading

from .sources import naming


_MARKER = re.compile("\0(\\d+)\1")


class Spelling:
    """The spelling tree of one guard build (Note [Guard spelling tree]); the active naming
    while its clauses are spelled (`sources.naming(namer=...)`)."""

    __slots__ = ("sources", "renders", "calls", "texts", "templates", "thread", "_by_id", "_calls", "_top",
                 "_replay", "_parts")

    def __init__(self):
        self.sources: list = []  # node -> its source (None for a clause)
        self.renders: list = []  # node -> how its source spells itself (`render(source)`)
        self.calls: list[tuple] = []  # node -> the nodes its spelling spells, in order, repeats included
        self.texts: list[str] = []  # node -> its text in full
        self.templates: list = []  # node -> its text with what it spells as markers, once made
        self.thread = threading.get_ident()
        self._by_id: dict = {}  # id(source) -> node
        self._calls: list = []  # the nodes spelled so far by the rendering in progress
        self._top: list = []  # those of the clause in progress
        self._replay = None  # while `template` renders a node again: the nodes it spells, in order
        self._parts: dict = {}  # node -> its template split at the markers: [literal, node, ..., literal]

    def clauses(self, guards, bind) -> list[int]:
        """Spell every guard's clause (`bind` as for `Guard.clause`): the clause nodes."""
        nodes = []
        sources, renders, texts, templates = self.sources, self.renders, self.texts, self.templates
        with naming(namer=self):
            for guard in guards:
                self._calls = self._top = calls = []
                template = text = guard.clause(bind)
                if calls:
                    for child in (calls if len(calls) == 1 else dict.fromkeys(calls)):
                        text = text.replace(f"\0{child}\1", texts[child])
                nodes.append(len(sources))
                sources.append(None)
                renders.append(None)
                self.calls.append(tuple(calls))
                texts.append(text)
                templates.append(template)
        return nodes

    def name(self, source, render) -> str:
        """`source.name()` while this spelling is the active naming: a marker for a clause,
        the text for a source spelling another source."""
        if self._replay is not None:
            return f"\0{next(self._replay)}\1"
        node = self._by_id.get(id(source))
        if node is None or self.sources[node] is not source:
            outer = self._calls
            self._calls = calls = []
            try:
                text = render(source)
            finally:
                self._calls = outer
            node = self._by_id[id(source)] = len(self.sources)
            self.sources.append(source)
            self.renders.append(render)
            self.calls.append(tuple(calls))
            self.texts.append(text)
            self.templates.append(None if calls else text)
        calls = self._calls
        calls.append(node)
        return f"\0{node}\1" if calls is self._top else self.texts[node]

    def shape(self) -> tuple:
        """Everything the rendering of the guard function reads from this tree, before it
        reads anything: each node's kind of source, text and the nodes it spells, and each
        clause's template (a source's template follows from the other three)."""
        return (tuple(map(type, self.sources)), tuple(self.texts), tuple(self.calls), tuple(self.templates))

    def template(self, node: int) -> str:
        """The text of `node` with a marker for each node it spells: made when first asked,
        by rendering its source once more, each source it spells answered by the node that
        spelling was in the first rendering (spelling is deterministic: the same calls in the
        same order, `DefaultSource` making a new `ItemSource` each time included)."""
        template = self.templates[node]
        if template is None:
            self._replay = calls = iter(self.calls[node])
            try:
                with naming(namer=self):
                    template = self.renders[node](self.sources[node])
            finally:
                self._replay = None
            if next(calls, None) is not None:
                raise AssertionError(f"{self.texts[node]!r} spelled fewer sources than when first spelled")
            self.templates[node] = template
        return template

    def read_counts(self, clauses: list[int]) -> tuple[dict, dict]:
        """How each text is read: ({text: [spellings by clauses themselves, the last clause
        spelling it]}, {text: {the text of a path spelling it: how many times}}). A path
        spelled n times spells what it reads n times."""
        count = [0] * len(self.sources)
        for clause in clauses:
            count[clause] = 1
        top: dict = {}
        within: dict = {}
        texts, sources, calls = self.texts, self.sources, self.calls
        for node in range(len(count) - 1, -1, -1):
            times = count[node]
            if not times:
                continue
            if sources[node] is None:  # a clause: visited last to first
                for child in calls[node]:
                    count[child] += 1
                    entry = top.get(texts[child])
                    if entry is None:
                        top[texts[child]] = [1, node]
                    else:
                        entry[0] += 1
                continue
            outer = texts[node]
            for child in calls[node]:
                count[child] += times
                spelling = within.get(texts[child])
                if spelling is None:
                    within[texts[child]] = {outer: times}
                else:
                    spelling[outer] = spelling.get(outer, 0) + times
        return top, within

    def touched(self, shared: set) -> list[bool]:
        """For each node, whether its text is in `shared` or it spells (itself or through
        what it spells) a node whose text is: what `expand` may spell other than in full."""
        touched = []
        texts = self.texts
        for node, calls in enumerate(self.calls):
            hit = texts[node] in shared
            if not hit:
                for child in calls:
                    if touched[child]:
                        hit = True
                        break
            touched.append(hit)
        return touched

    def reads(self, node: int, touched: list[bool], aliases: dict, seen: set, out: list) -> list:
        """The touched nodes spelled under `node` in the order they are spelled (each after
        what it spells), appended to `out`; not those whose text is in `aliases` (read from
        its local: nothing under it is read) or in `seen` (met before in this walk: what is
        under it was met too), nor what they spell."""
        texts = self.texts
        for child in self.calls[node]:
            if touched[child]:
                text = texts[child]
                if text not in aliases and text not in seen:
                    seen.add(text)
                    self.reads(child, touched, aliases, seen, out)
                    out.append(child)
        return out

    def expand(self, node: int, touched: list[bool], aliases: dict) -> str:
        """The text of `node` with each text in `aliases` (text -> local) spelled as its local."""
        if not touched[node]:
            return self.texts[node]
        alias = aliases.get(self.texts[node])
        if alias is not None and self.sources[node] is not None:
            return alias
        text = self.template(node)
        calls = self.calls[node]
        for child in (calls if len(calls) == 1 else dict.fromkeys(calls)):
            text = text.replace(f"\0{child}\1", self.expand(child, touched, aliases))
        return text

    def binding(self, node: int, touched: list[bool], aliases: dict, binding: dict, bound: set) -> str:
        """`expand` where each text in `binding` (text -> local) is spelled `(local := its
        text)` where the text reaches it first, reading left to right, and as the local after
        (its local then added to `bound`)."""
        if not touched[node]:
            return self.texts[node]
        if self.sources[node] is not None:
            text = self.texts[node]
            alias = aliases.get(text)
            if alias is not None:
                return alias
            alias = binding.get(text)
            if alias is not None:
                if alias in bound:
                    return alias
                template = self.template(node)
                if template[0] == "\0" and template.index("\1") == len(template) - 1:
                    # spelled as another node (`DefaultSource`): that node, the one the local is for
                    return self.binding(int(template[1:-1]), touched, aliases, binding, bound)
                bound.add(alias)
                return f"({alias} := {self._bind_inner(node, touched, aliases, binding, bound)})"
        return self._bind_inner(node, touched, aliases, binding, bound)

    def _bind_inner(self, node: int, touched: list[bool], aliases: dict, binding: dict, bound: set) -> str:
        parts = self._parts.get(node)
        if parts is None:
            parts = self._parts[node] = _MARKER.split(self.template(node))
            for i in range(1, len(parts), 2):
                parts[i] = int(parts[i])
        pieces = parts[:]
        for i in range(1, len(pieces), 2):
            pieces[i] = self.binding(pieces[i], touched, aliases, binding, bound)
        return "".join(pieces)
