"""What both apps need and neither owns: the session-key grammar (`keys`), the domain errors every
adapter maps to its protocol (`errors`), and the task queue (`taskqueue`).

Imports point one way: `sessions_app` asks `policies_app` to decide and never the reverse, and
both import this package, which imports neither (tests/test_app_boundaries.py checks it).
"""
