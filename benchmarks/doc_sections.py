"""docs/benchmarks.md, shared by several benchmarks: each one rewrites only its own section.

A section runs from its ``## Title`` line to the next ``## `` line. The file is read
right before it is written, so a section another benchmark wrote meanwhile is kept.
"""

from __future__ import annotations

import contextlib
import datetime as dt
import platform
import subprocess
from pathlib import Path

import psutil

REPO = Path(__file__).resolve().parents[1]
DOC = REPO / "docs" / "benchmarks.md"
DOC_HEADER = """# Benchmarks

Every figure here comes with the command that made it, the date it was made and the
machine it ran on. The development machine has 2 CPU cores shared with other work, so
figures are noisy: compare ratios measured in the same run, not absolute numbers across
runs.
"""


def machine_summary() -> str:
    """Cores, CPU model, memory, OS and Python: enough to judge a figure's conditions."""
    model = ""
    with contextlib.suppress(OSError):
        for line in Path("/proc/cpuinfo").read_text().splitlines():
            if line.startswith("model name"):
                model = line.split(":", 1)[1].strip()
                break
    return (
        f"{psutil.cpu_count()} CPU cores shared with other work ({model or platform.processor()}), "
        f"{psutil.virtual_memory().total / 2**30:.0f} GiB, {platform.system()}, Python {platform.python_version()}"
    )


def commit_text() -> str:
    """The checked-out commit, and whether the code a benchmark runs differs from it."""
    git = {"cwd": REPO, "capture_output": True, "text": True}
    head = subprocess.run(["git", "rev-parse", "--short", "HEAD"], **git).stdout.strip()
    dirty = subprocess.run(["git", "status", "--porcelain", "--", "components", "pipelines", "benchmarks"], **git)
    return head + (" with uncommitted changes" if dirty.stdout.strip() else "")


def now_text() -> str:
    return dt.datetime.now().astimezone().strftime("%Y-%m-%d %H:%M %Z")


def replace_section(doc: str, title: str, section: str) -> str:
    """``doc`` with section ``## title`` replaced by ``section`` (appended when absent)."""
    heading = f"## {title}\n"
    if doc.startswith(heading):
        start = 0
    else:
        found = doc.find("\n" + heading)
        if found < 0:
            return doc.rstrip("\n") + "\n\n" + section.rstrip("\n") + "\n"
        start = found + 1
    end = doc.find("\n## ", start)
    rest = "" if end < 0 else doc[end + 1 :]
    return doc[:start] + section.rstrip("\n") + "\n" + ("\n" + rest if rest else "")


def write_section(title: str, section: str, path: Path = DOC) -> None:
    """Replace (or append) one section of ``path``, keeping every other section as it is now."""
    path.parent.mkdir(parents=True, exist_ok=True)
    doc = path.read_text() if path.exists() else DOC_HEADER
    path.write_text(replace_section(doc, title, section))
