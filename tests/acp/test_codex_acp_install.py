"""The codex-acp test setup (tests/acp/codex_acp.py) says why it cannot run: a skip with the
reason when npm is missing or the registry cannot be reached, a failure when CI requires it."""

from __future__ import annotations

import pytest

from tests.acp import codex_acp


@pytest.fixture
def offline(tmp_path, monkeypatch):
    """An empty cache and an npm that cannot reach the registry."""
    bin_dir = tmp_path / "bin"
    bin_dir.mkdir()
    npm = bin_dir / "npm"
    npm.write_text("#!/bin/sh\necho 'npm error code ENOTFOUND registry.npmjs.org' >&2\nexit 1\n")
    npm.chmod(0o755)
    monkeypatch.setenv("OPENCLAW_TEST_CACHE", str(tmp_path / "cache"))
    monkeypatch.setenv("PATH", str(bin_dir))
    monkeypatch.delenv("OPENCLAW_REQUIRE_CODEX_ACP", raising=False)
    return tmp_path


def test_an_unreachable_registry_is_a_skip_that_says_so(offline):
    with pytest.raises(pytest.skip.Exception) as skipped:
        codex_acp.install()
    assert "the npm registry cannot be reached" in str(skipped.value)
    assert "ENOTFOUND registry.npmjs.org" in str(skipped.value)
    assert not (offline / "cache" / f"codex-acp-{codex_acp.VERSION}").exists()


def test_no_npm_is_a_skip_that_says_so(offline, monkeypatch):
    monkeypatch.setenv("PATH", str(offline / "nowhere"))
    with pytest.raises(pytest.skip.Exception) as skipped:
        codex_acp.install()
    assert "npm is not installed" in str(skipped.value)


def test_ci_makes_it_a_failure(offline, monkeypatch):
    monkeypatch.setenv("OPENCLAW_REQUIRE_CODEX_ACP", "1")
    with pytest.raises(pytest.fail.Exception) as failed:
        codex_acp.install()
    assert "OPENCLAW_REQUIRE_CODEX_ACP=1" in str(failed.value)
