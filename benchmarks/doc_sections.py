"""docs/benchmarks.md, shared by several benchmarks: each one rewrites only its own section.

A section runs from its ``## Title`` line to the next ``## `` line; a subsection, from its
``### Title`` line to the next ``### `` or ``## `` line, so a quick part of a benchmark can
rewrite its own figure inside the section of the whole. The file is read right before it
is written, so a section another benchmark wrote meanwhile is kept.
"""

from __future__ import annotations

import contextlib
import datetime as dt
import os
import platform
import subprocess
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any, TypeVar

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
    """The checked-out commit, and whether the code a benchmark runs, or the configs and tasks
    it runs (examples/), differ from it."""
    git = {"cwd": REPO, "capture_output": True, "text": True}
    head = subprocess.run(["git", "rev-parse", "--short", "HEAD"], **git).stdout.strip()
    # Not benchmarks/results: a resumable benchmark's own stored results are not what it runs.
    paths = ["components", "pipelines", "benchmarks", "examples", ":(exclude)benchmarks/results"]
    dirty = subprocess.run(["git", "status", "--porcelain", "--", *paths], **git)
    return head + (" with uncommitted changes" if dirty.stdout.strip() else "")


def now_text() -> str:
    return dt.datetime.now().astimezone().strftime("%Y-%m-%d %H:%M %Z")


@dataclass(frozen=True)
class Stamp:
    """When, where and from what code a benchmark part ran: its figures' first six fields."""

    command: str
    date: str
    commit: str
    machine: str
    load_before: tuple[float, ...]  # os.getloadavg() around the runs
    load_after: tuple[float, ...]

    def stamp_line(self) -> str:
        """The subsection's first line: command, date, commit, machine and load."""
        load = lambda values: ", ".join(f"{v:.1f}" for v in values)  # noqa: E731
        return (
            f"Command: `{self.command}`. Date: {self.date}. Commit: {self.commit}. Machine: {self.machine}; "
            f"load average (1, 5, 15 min) {load(self.load_before)} before, {load(self.load_after)} after."
        )


S = TypeVar("S", bound=Stamp)


def stamped(figures: Callable[..., S], command: str, measure: Callable[[], tuple[Any, ...]]) -> S:
    """``figures(<stamp fields>, *measure())``, the date, commit and load taken around the measuring."""
    date, commit, load_before = now_text(), commit_text(), os.getloadavg()
    measured = measure()
    return figures(command, date, commit, machine_summary(), load_before, os.getloadavg(), *measured)


def replace_section(doc: str, title: str, section: str, level: int = 2) -> str:
    """``doc`` with section ``## title`` (``level`` #s) replaced by ``section`` (appended when absent)."""
    start, end = _bounds(doc, title, level)
    if start < 0:
        return doc.rstrip("\n") + "\n\n" + section.rstrip("\n") + "\n"
    rest = doc[end:]
    return doc[:start] + section.rstrip("\n") + "\n" + ("\n" + rest if rest else "")


def replace_subsection(doc: str, title: str, subtitle: str, subsection: str) -> str:
    """``doc`` with ``### subtitle`` of section ``## title`` replaced by ``subsection`` (appended
    to the section when absent; the section is created when it is absent too)."""
    start, end = _bounds(doc, title, 2)
    if start < 0:
        return replace_section(doc, title, f"## {title}\n\n{subsection}")
    section = replace_section(doc[start:end].rstrip("\n") + "\n", subtitle, subsection, level=3)
    rest = doc[end:]
    return doc[:start] + section + ("\n" + rest if rest else "")


def _bounds(doc: str, title: str, level: int) -> tuple[int, int]:
    """Where heading ``title`` of ``level`` starts and where its part ends: at the next heading
    of that level or a shallower one, or at the end; (-1, -1) when there is no such heading."""
    heading = f"{'#' * level} {title}\n"
    if doc.startswith(heading):
        start = 0
    else:
        found = doc.find("\n" + heading)
        if found < 0:
            return -1, -1
        start = found + 1
    ends = [doc.find("\n" + "#" * n + " ", start) for n in range(2, level + 1)]
    return start, min((e + 1 for e in ends if e >= 0), default=len(doc))


def write_section(title: str, section: str, path: Path = DOC) -> None:
    """Replace (or append) one section of ``path``, keeping every other section as it is now."""
    path.parent.mkdir(parents=True, exist_ok=True)
    doc = path.read_text() if path.exists() else DOC_HEADER
    path.write_text(replace_section(doc, title, section))


def replace_marked(doc: str, name: str, text: str) -> str:
    """``doc`` with what sits between ``<!-- name:begin -->`` and ``<!-- name:end -->`` replaced
    by ``text``: a script's figures inside a page that is otherwise written by hand."""
    begin, end = f"<!-- {name}:begin -->", f"<!-- {name}:end -->"
    if begin not in doc or end not in doc:
        raise ValueError(f"the page has no {begin} ... {end} block: add the two markers where the figures belong")
    start, stop = doc.index(begin) + len(begin), doc.index(end)
    return doc[:start] + "\n" + text.rstrip("\n") + "\n" + doc[stop:]


def _subsections(section: str) -> list[tuple[str, str]]:
    """``section`` cut at its ``### `` headings: (title, text) pairs, the head's title empty."""
    parts, title, lines = [], "", []
    for line in section.splitlines(keepends=True):
        if line.startswith("### "):
            parts.append((title, "".join(lines)))
            title, lines = line[4:].strip(), []
        lines.append(line)
    parts.append((title, "".join(lines)))
    return parts


def write_section_keeping_subsections(title: str, section: str, path: Path = DOC) -> None:
    """Replace section ``title`` by ``section``, keeping (after it, in their order) the
    subsections of the present one that ``section`` lacks: those another run of the same
    benchmark, one part of it at a time, wrote."""
    doc = path.read_text() if path.exists() else DOC_HEADER
    start, end = _bounds(doc, title, 2)
    new_titles = {t for t, _ in _subsections(section)}
    kept = [text for t, text in _subsections(doc[start:end]) if t and t not in new_titles] if start >= 0 else []
    merged = section.rstrip("\n") + "\n" + "".join("\n" + text.rstrip("\n") + "\n" for text in kept)
    write_section(title, merged, path)


def write_subsection(title: str, subtitle: str, subsection: str, path: Path = DOC) -> None:
    """Replace (or append) one subsection of section ``title``, keeping the rest of ``path``."""
    path.parent.mkdir(parents=True, exist_ok=True)
    doc = path.read_text() if path.exists() else DOC_HEADER
    path.write_text(replace_subsection(doc, title, subtitle, subsection))
