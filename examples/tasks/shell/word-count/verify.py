"""Passed when count.txt holds the word count of notes.txt (as the task ships it)."""

import os
import sys
from pathlib import Path

expected = len((Path(os.environ["OPENFORGE_TASK_DIR"]) / "workspace" / "notes.txt").read_text().split())
path = Path("count.txt")
answer = path.read_text(errors="replace").strip() if path.is_file() else None
print(f"expected {expected}, count.txt holds {answer!r}")
sys.exit(0 if answer == str(expected) else 1)
