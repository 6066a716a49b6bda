"""The clauses of one guard build spelled once, as a tree over the sources they read.

Note [Guard spelling tree]
A model's guards spell the same sources hundreds of times (every parameter's clause spells
its module's path, ten sources deep), and the guard compiler needs three things from them:
each clause in full (what explain and `first_failure` show), how often each path is read
(which paths get a local, Note [Shared guard paths] in guards/compile.py), and the clauses
that read a shared path again with their locals in place. `Spelling` is the active naming
(`sources.naming(namer=...)`) while the clauses are spelled, once: every `name()` of a source
answers a marker (`\\0N\\1` for node N), and the first time a source object is spelled its
own text is rendered the same way, so each source is rendered once per build. A node records
its source, its template (its text with the markers of the nodes it spells) and the nodes its
rendering spelled, in order, repeats included (`calls`: what one spelling of it reads); its
text in full (the template with each marker replaced by that node's text) is made only when
asked for (`texts`: a program rendered before needs none). A clause is a node too, with no
source. Nodes are numbered in post-order (a node after every node it
spells), so one walk down the numbers meets every node after all that spell it
(`read_counts`). The rest walks the tree: `reads` lists what a clause reads, `expand` and
`binding` spell a node from its template with some texts read from locals; no clause or
source is rendered twice. Nodes are keyed by the source object's identity, holding the
source so its id is not reused while the build lives (not by equality: `d[1]` and `d[True]`
are equal sources spelled differently). Spelling everything with markers and expanding them
costs about what the earlier two renderings did for a program rendered the first time; the
tree's gain is that it is the key of the rendered text (Note [Guard code cache]), which a
program captured again then does not render.
"""
from __future__ import annotations

import re
import threading

from .sources import naming


_MARKER = re.compile("\0(\\d+)\1")


class Spelling:
    """The spelling tree of one guard build (Note [Guard spelling tree]); the active naming
    while its clauses are spelled (`sources.naming(namer=...)`)."""

    __slots__ = ("sources", "calls", "templates", "markers", "thread", "_texts", "_by_id", "_calls", "_parts")

    def __init__(self):
        self.sources: list = []  # node -> its source (None for a clause)
        self.calls: list[tuple] = []  # node -> the nodes its spelling spells, in order, repeats included
        self.templates: list[str] = []  # node -> its text with a marker for each node it spells
        self.markers: list[str] = []  # node -> its marker
        self.thread = threading.get_ident()
        self._texts: list[str] = []  # node -> its text in full, for the nodes made so far (`texts`)
        self._by_id: dict = {}  # id(source) -> node
        self._calls: list = []  # the nodes spelled so far by the rendering in progress
        self._parts: dict = {}  # node -> its template split at the markers: [literal, node, ..., literal]

    def clauses(self, guards, bind) -> list[int]:
        """Spell every guard's clause (`bind` as for `Guard.clause`): the clause nodes."""
        with naming(namer=self):
            return [self._node(None, guard.clause, bind) for guard in guards]

    def name(self, source, render) -> str:
        """`source.name()` while this spelling is the active naming: the node's marker."""
        node = self._by_id.get(id(source))
        if node is None or self.sources[node] is not source:
            node = self._by_id[id(source)] = self._node(source, render, source)
        self._calls.append(node)
        return self.markers[node]

    def _node(self, source, render, arg) -> int:
        outer = self._calls
        self._calls = calls = []
        template = render(arg)  # if it raises, the build fails (InternalTracerError) and this tree goes
        self._calls = outer
        node = len(self.sources)
        self.sources.append(source)
        self.calls.append(tuple(calls))
        self.templates.append(template)
        self.markers.append(f"\0{node}\1")
        return node

    @property
    def texts(self) -> list[str]:
        """Each node's text in full: its template with each marker replaced by that node's
        text (made when first asked: a program rendered before needs only its clauses')."""
        texts = self._texts
        markers, templates = self.markers, self.templates
        for node in range(len(texts), len(templates)):
            text = templates[node]
            calls = self.calls[node]
            if len(calls) == 1:
                text = text.replace(markers[calls[0]], texts[calls[0]])
            elif calls:
                for child in dict.fromkeys(calls):
                    text = text.replace(markers[child], texts[child])
            texts.append(text)
        return texts

    def shape(self) -> tuple:
        """All that rendering the guard function reads from this tree: each node's kind of
        source (none for a clause), template and the nodes it spells (its text follows)."""
        return (tuple(map(type, self.sources)), tuple(self.calls), tuple(self.templates))

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
        what it spells) a node whose text is: what `expand` may spell other than in full. The
        walks below (`reads`, `expand`, `binding`) take this list, so `texts` are made by then."""
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
        texts = self._texts
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
            return self._texts[node]
        alias = aliases.get(self._texts[node])
        if alias is not None and self.sources[node] is not None:
            return alias
        text = self.templates[node]
        calls = self.calls[node]
        for child in (calls if len(calls) == 1 else dict.fromkeys(calls)):
            text = text.replace(self.markers[child], self.expand(child, touched, aliases))
        return text

    def binding(self, node: int, touched: list[bool], aliases: dict, binding: dict, bound: set) -> str:
        """`expand` where each text in `binding` (text -> local) is spelled `(local := its
        text)` where the text reaches it first, reading left to right, and as the local after
        (its local then added to `bound`)."""
        if not touched[node]:
            return self._texts[node]
        if self.sources[node] is not None:
            text = self._texts[node]
            alias = aliases.get(text)
            if alias is not None:
                return alias
            alias = binding.get(text)
            if alias is not None:
                if alias in bound:
                    return alias
                template = self.templates[node]
                if template[0] == "\0" and template.index("\1") == len(template) - 1:
                    # spelled as another node (`DefaultSource`): that node, the one the local is for
                    return self.binding(int(template[1:-1]), touched, aliases, binding, bound)
                bound.add(alias)
                return f"({alias} := {self._bind_inner(node, touched, aliases, binding, bound)})"
        return self._bind_inner(node, touched, aliases, binding, bound)

    def _bind_inner(self, node: int, touched: list[bool], aliases: dict, binding: dict, bound: set) -> str:
        parts = self._parts.get(node)
        if parts is None:
            parts = self._parts[node] = _MARKER.split(self.templates[node])
            for i in range(1, len(parts), 2):
                parts[i] = int(parts[i])
        pieces = parts[:]
        for i in range(1, len(pieces), 2):
            pieces[i] = self.binding(pieces[i], touched, aliases, binding, bound)
        return "".join(pieces)
