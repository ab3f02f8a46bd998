"""``python -m components.environments write-web-tasks DIR``: (re)write the web task folders."""

import sys
from pathlib import Path

from components.environments.web_tasks import write_suite

if len(sys.argv) != 3 or sys.argv[1] != "write-web-tasks":
    sys.exit("usage: python -m components.environments write-web-tasks DIR")
for folder in write_suite(Path(sys.argv[2])):
    print(folder)
