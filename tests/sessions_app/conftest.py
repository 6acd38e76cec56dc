"""Fixtures of the sessions_app tests (the project-wide ones are in tests/conftest.py)."""

import pytest

from tests.conftest import make_session


@pytest.fixture
def main_session(agents):
    """agent:main:main, empty."""
    return make_session("main")
