"""Passed when sorted.txt holds the lines of names.txt in alphabetical order."""

import os
import sys
from pathlib import Path

names = (Path(os.environ["OPENFORGE_TASK_DIR"]) / "workspace" / "names.txt").read_text().splitlines()
path = Path("sorted.txt")
answer = path.read_text(errors="replace").splitlines() if path.is_file() else None
print(f"sorted.txt holds {answer!r}")
sys.exit(0 if answer == sorted(names) else 1)
