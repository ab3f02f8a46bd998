"""Passed when answer.txt names the largest file of data/ (as the task ships it)."""

import os
import sys
from pathlib import Path

data = Path(os.environ["OPENFORGE_TASK_DIR"]) / "workspace" / "data"
largest = max(data.iterdir(), key=lambda p: p.stat().st_size).name
path = Path("answer.txt")
answer = path.read_text(errors="replace").strip() if path.is_file() else None
print(f"largest is {largest}, answer.txt holds {answer!r}")
sys.exit(0 if answer == largest else 1)
