"""Passed when hello.txt in the workspace holds exactly "hello" (a trailing newline is fine)."""

import sys
from pathlib import Path

path = Path("hello.txt")
if not path.is_file():
    print("hello.txt was not created")
    sys.exit(1)
content = path.read_text(errors="replace")
print(f"hello.txt holds {content!r}")
sys.exit(0 if content.rstrip("\n") == "hello" else 1)
