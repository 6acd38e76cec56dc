"""`{% when value %}`: a time as every page shows one (lib/when.py): "3 min ago", the absolute
UTC time on hover. `value` is epoch milliseconds or an aware datetime."""

from __future__ import annotations

from django import template

from ..lib.when import time_tag

register = template.Library()


@register.simple_tag(name="when")
def when_tag(value):
    return time_tag(value)
