"""sessions_spawn runtime="acp": ACP (Agent Client Protocol) harnesses as workers (docs/acp.md).

harnesses.py: the operator's `acp.agents` (validation, cwd and environment rules); spawn.py: the
tool's ACP branch (checks, then the child session and its run); runtime.py: the worker's turn
(drives client.py's harness processes, warm or new, and writes their updates through
transcript.py); sandbox.py: the user a harness runs as, so it cannot reach the worker's secrets.
"""
