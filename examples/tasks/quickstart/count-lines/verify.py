"""Passed when the last number in the final answer is the line count of poem.txt."""

import os
import re
import sys
from pathlib import Path

# Counted from the task's own copy: the agent may have edited the workspace's.
expected = len((Path(os.environ["OPENFORGE_TASK_DIR"]) / "workspace" / "poem.txt").read_text().splitlines())
answer = Path(os.environ["OPENFORGE_FINAL_ANSWER"]).read_text(errors="replace")
numbers = re.findall(r"-?\d+", answer)
print(f"expected {expected}, answer {answer.strip()[:200]!r}")
sys.exit(0 if numbers and int(numbers[-1]) == expected else 1)
