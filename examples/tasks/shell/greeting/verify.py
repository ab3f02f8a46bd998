"""Passed when greeting.txt holds exactly "hello" (a trailing newline is fine)."""

import sys
from pathlib import Path

path = Path("greeting.txt")
content = path.read_text(errors="replace") if path.is_file() else None
print(f"greeting.txt holds {content!r}")
sys.exit(0 if content is not None and content.rstrip("\n") == "hello" else 1)
