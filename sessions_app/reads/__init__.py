"""Reads that shape stored rows for a caller: history pages, list enrichment, search, the
status card, activity, the transcript download."""
