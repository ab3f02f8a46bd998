"""``python -m components.environments``: ``write-web-tasks DIR`` (re)writes the web task folders;
``tasks ...`` is ``openforge tasks ...`` (miniwob, webvoyager, mind2web, osworld; cli.py)."""

import sys
from pathlib import Path

if sys.argv[1:2] == ["tasks"]:
    from components.environments.cli import tasks_app

    tasks_app(sys.argv[2:], prog_name="python -m components.environments tasks")
elif len(sys.argv) == 3 and sys.argv[1] == "write-web-tasks":
    from components.environments.web_tasks import write_suite

    for folder in write_suite(Path(sys.argv[2])):
        print(folder)
else:
    sys.exit("usage: python -m components.environments write-web-tasks DIR | tasks {miniwob,webvoyager,mind2web,osworld} ...")
