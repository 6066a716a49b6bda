"""Fixtures shared by the dynamic-shape tests."""
import pytest

from bytegraph.graph import fake_memo, shapes


@pytest.fixture
def empty_memo(monkeypatch):
    """A fake-tensor memo and ShapeEnv state tokens with nothing remembered, for this test only."""
    monkeypatch.setattr(fake_memo, "_memo", {})
    monkeypatch.setattr(shapes, "_STATE_TOKENS", {})
