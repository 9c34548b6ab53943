from __future__ import annotations

import pytest

from mnemo_dialectic.adapters.fake import FakeReader


@pytest.fixture
def reader() -> FakeReader:
    return FakeReader()
