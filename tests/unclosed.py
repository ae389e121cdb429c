"""A fixture that fails a test when anything it opened was left unclosed (aiohttp sessions/connectors)."""
from __future__ import annotations

import gc
import logging
import warnings

import pytest


@pytest.fixture
def no_unclosed(caplog):
    """Fail on "Unclosed client session/connector" (ResourceWarning or asyncio's logged error)."""
    caplog.set_level(logging.ERROR, logger="asyncio")
    with warnings.catch_warnings(record=True) as seen:
        warnings.simplefilter("always", ResourceWarning)
        yield
        gc.collect()
    unclosed = [str(w.message) for w in seen if "nclosed" in str(w.message)]
    unclosed += [r.getMessage() for r in caplog.records if "nclosed" in r.getMessage()]
    assert not unclosed, unclosed
