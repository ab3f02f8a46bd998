"""Passed when the final answer names the largest file of data/ and no other file."""

import os
import sys
from pathlib import Path

data = Path(os.environ["OPENFORGE_TASK_DIR"]) / "workspace" / "data"
sizes = {p.name: p.stat().st_size for p in data.iterdir()}
largest = max(sizes, key=sizes.get)
answer = Path(os.environ["OPENFORGE_FINAL_ANSWER"]).read_text(errors="replace")
named = {name for name in sizes if name in answer or name.rsplit(".", 1)[0] in answer}
print(f"largest is {largest}; the answer names {sorted(named)}")
sys.exit(0 if named == {largest} else 1)
