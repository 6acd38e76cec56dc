import pytest


@pytest.fixture
def demo(transactional_db):
    """The demo data, committed, for a server process started by the test itself (stdio)."""
    from tests.servers import manage

    manage("seed_demo")
