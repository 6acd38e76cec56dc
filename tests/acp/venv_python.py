"""Runs a harness script of the tests with this test environment's packages, from an interpreter
the harness users can reach (tests/acp/harness_fixtures.PYTHON).

`python3.X venv_python.py <site-packages> <script> [args...]`. Needed where the tests' own Python
lives where other users cannot go (a pyenv under /root, mode 0700): a harness runs as a user of
its own (sessions_app/acp/sandbox.py), so it starts the system's Python of the same version and
puts the test environment's site-packages first on its path.
"""

import runpy
import sys

site_packages, script = sys.argv[1], sys.argv[2]
sys.path.insert(0, site_packages)
sys.argv = sys.argv[2:]
runpy.run_path(script, run_name="__main__")
