"""The old dotted path of manage/agents.py, kept for one release (issue 25): scripts outside
this repository import `upsert_agent` from here (../shared/peer/side_by_side.py does)."""

from .manage.agents import upsert_agent

__all__ = ["upsert_agent"]
