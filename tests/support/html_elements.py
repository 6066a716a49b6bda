"""A page's elements for the report's tests: (tag, attributes, text inside it) each, from the
standard library's HTML parser (text unescaped), for files and for Chromium's `--dump-dom`."""
from __future__ import annotations

import html.parser
import pathlib

_VOID = {"meta", "link", "br", "img", "input", "hr", "line", "rect", "path", "circle"}


class _Elements(html.parser.HTMLParser):
    def __init__(self):
        super().__init__(convert_charrefs=True)
        self.done, self.stack = [], []

    def handle_starttag(self, tag, attrs):
        if tag in _VOID:
            self.done.append((tag, dict(attrs), ""))
        else:
            self.stack.append([tag, dict(attrs), []])

    def handle_startendtag(self, tag, attrs):
        self.done.append((tag, dict(attrs), ""))

    def handle_endtag(self, tag):
        while self.stack:
            element = self.stack.pop()
            text = "".join(element[2])
            self.done.append((element[0], element[1], text))
            if self.stack:
                self.stack[-1][2].append(text)
            if element[0] == tag:
                break

    def handle_data(self, data):
        if self.stack:
            self.stack[-1][2].append(data)


def elements_of(text: str) -> list:
    parser = _Elements()
    parser.feed(text)
    parser.close()
    return parser.done


def elements(path) -> list:
    return elements_of(pathlib.Path(path).read_text())


def find_in(found: list, tag: str, **attrs) -> list:
    """(attributes, text) of the elements of `found` with `tag` and these attribute values."""
    return [(a, text) for t, a, text in found if t == tag and all(a.get(k) == v for k, v in attrs.items())]


def find(path, tag: str, **attrs) -> list:
    return find_in(elements(path), tag, **attrs)
