"""ACP agents shipped with the project (run as harness processes, never imported by it)."""
