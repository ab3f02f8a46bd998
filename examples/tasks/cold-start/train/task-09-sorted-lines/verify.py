"""Passed when the output file holds the expected answer (answer.json, written with the task)."""

import json
import os
import sys
from pathlib import Path

answer = json.loads((Path(os.environ["OPENFORGE_TASK_DIR"]) / "answer.json").read_text())
path = Path(answer["file"])
got = path.read_text(errors="replace").strip() if path.is_file() else None
print(f"expected {answer['text'][:80]!r}, {answer['file']} holds {(got or '')[:80]!r}")
sys.exit(0 if got == answer["text"] else 1)
