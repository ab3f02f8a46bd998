"""``python -m components.engine serve --model DIR ...``: the engine without the full CLI."""

import os
import sys

from components.engine.cli import engine_app

try:
    engine_app(prog_name="python -m components.engine")
except SystemExit as done:
    code = done.code if isinstance(done.code, int) else (0 if done.code is None else 1)
    if isinstance(done.code, str):
        print(done.code, file=sys.stderr)
else:
    code = 0
# The server has shut down cleanly; tearing down torch and transformers at interpreter
# exit only costs seconds per engine restart, so leave without it.
sys.stdout.flush()
sys.stderr.flush()
os._exit(code)
