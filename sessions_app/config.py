"""The old dotted path of manage/config.py, kept for one release (issue 25): scripts outside
this repository import `update_config` from here (../shared/peer/side_by_side.py does)."""

from .manage.config import update_config

__all__ = ["update_config"]
