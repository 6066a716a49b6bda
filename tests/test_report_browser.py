"""The compile report in a real browser: headless Chromium (Debian's `chromium` package;
`.ci/run` installs it) loads index.html, follows its link to a frame page, and screenshots it.

A small model with a graph break (a print in its forward) and a recompile (a new batch size)
is reported; Chromium's DOM (`--dump-dom`, after the page's script ran) must hold the break's
reason on the highlighted source line, a guard pointing at the user's line and the graph's
code, and the screenshot must show the page (not a blank one).
"""
from __future__ import annotations

import os
import shutil
import subprocess
import urllib.parse

import pytest
import torch

import bytegraph
from helpers import line_of
from support.html_elements import elements_of, find_in
from support.png_pixels import pixel_counts

HERE = os.path.abspath(__file__)
CHROMIUM = shutil.which("chromium") or shutil.which("chromium-browser")

pytestmark = pytest.mark.skipif(CHROMIUM is None, reason="headless Chromium is not installed (Debian: "
                                "apt-get install -y chromium; .ci/run installs it before the tests)")


class SmallModel(torch.nn.Module):
    def __init__(self):
        super().__init__()
        self.fc = torch.nn.Linear(8, 8)

    def forward(self, x):
        h = self.fc(x).relu()  # BROWSER-GUARD
        print("batch of", x.shape[0])  # BROWSER-BREAK
        return h * 2


def chromium(profile, *args) -> str:
    done = subprocess.run([CHROMIUM, "--headless", "--no-sandbox", "--disable-gpu", "--disable-quic", "--no-first-run",
                           "--disable-background-networking", "--disable-component-update", "--disable-sync",
                           f"--user-data-dir={profile}", *args], capture_output=True, text=True, timeout=180)
    assert done.returncode == 0, done.stderr[-2000:]
    return done.stdout


@pytest.fixture
def report_dir(tmp_path, capsys):
    out = tmp_path / "report"
    with bytegraph.report(out):
        model = bytegraph.compile(SmallModel())
        model(torch.randn(2, 8))
        model(torch.randn(3, 8))  # a new batch size: recompiles
    capsys.readouterr()
    return out


def test_index_links_to_the_frame_page_with_break_guard_and_graph(report_dir, tmp_path):
    profile = tmp_path / "profile"
    index_url = (report_dir / "index.html").resolve().as_uri()
    index = elements_of(chromium(profile, "--dump-dom", index_url))
    assert [t for a, t in find_in(index, "h1")] == ["What bytegraph compiled"]
    sortable = [a for a, _ in find_in(index, "th") if "data-sort" in a]
    assert sortable and all(a.get("tabindex") == "0" for a in sortable)  # the page's script ran
    ((link, name),) = [(a, t) for a, t in find_in(index, "a") if a.get("class") == "frame-link"]
    assert name == "SmallModel"

    page_url = urllib.parse.urljoin(index_url, link["href"])
    page = elements_of(chromium(profile, "--dump-dom", page_url))
    (title,) = [t for a, t in find_in(page, "h1", id="frame-name")]
    assert title.startswith("SmallModel")
    break_line = line_of("# BROWSER-BREAK", HERE)
    ((row, text),) = find_in(page, "tr", id=f"L{break_line}")
    assert row["class"] == "brk" and "print() writes to stdout" in text and 'print("batch of"' in text
    guard_line = line_of("# BROWSER-GUARD", HERE)
    guards = [t for a, t in find_in(page, "li") if f"test_report_browser.py:{guard_line}" in t]
    assert any("self.fc" in g and "h = self.fc(x).relu()" in g for g in guards), guards
    codes = [t for a, t in find_in(page, "pre") if a.get("class") == "fx-code"]
    assert any(c.startswith("def forward(self") and "torch._C._nn.linear" in c and "relu" in c for c in codes), codes
    failures = [t for a, t in find_in(page, "table") if a.get("class") == "failures"]
    assert failures and "shape (3, 8) (expected (2, 8))" in failures[0]


def test_screenshot_is_not_blank(report_dir, tmp_path):
    shot = tmp_path / "index.png"
    chromium(tmp_path / "profile", "--window-size=1200,800", "--hide-scrollbars", f"--screenshot={shot}",
             (report_dir / "index.html").resolve().as_uri())
    counts = pixel_counts(shot)
    total = sum(counts.values())
    background = max(counts.values())
    assert total == 1200 * 800
    assert len(counts) > 50, f"only {len(counts)} colours"
    assert total - background > total // 50, "almost every pixel is the background colour"
    dark_header = counts.get((0x1d, 0x23, 0x2a), 0)   # the stylesheet was applied: its header bar
    amber_mark = counts.get((0xc7, 0x7c, 0x02), 0)    # and the amber "breaks" mark of the model
    assert dark_header > 1200 * 20 and amber_mark > 100, (dark_header, amber_mark)
