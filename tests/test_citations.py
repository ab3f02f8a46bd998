"""Code and docs cite only the repository: a pointer to design notes kept beside it (the
folder next to the project, or the notes by name) is a dead link in every clone. Each
fact they cited now has its page under docs/."""

from __future__ import annotations

import re
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
_TEXT_SUFFIXES = {".py", ".md", ".sh", ".yaml", ".yml", ".toml", ".txt", ".js", ".mjs", ".cfg", ".ini"}
_TEXT_NAMES = {"Makefile", "Dockerfile", "Containerfile"}
_SKIPPED_DIRS = {"__pycache__", "node_modules", "build", "dist"}  # and every folder starting with "."
_NOTES = ("DESIGN", "HARNESSES", "GUI", "STYLE")
# The notes by name (docs/harnesses.md is lower case: not one of them), or a path into the
# notes' folder: `../shared/...`, or `shared/...` where a path starts.
OUTSIDE = re.compile(rf"\b(?:{'|'.join(_NOTES)})\.md\b|(?<![\w./-])(?:\.\./)?shared/")


def _text_files() -> list[Path]:
    files = []
    for path in REPO.rglob("*"):
        parts = path.relative_to(REPO).parts
        if any(p.startswith(".") or p in _SKIPPED_DIRS or p.endswith(".egg-info") for p in parts[:-1]):
            continue
        if path.is_file() and (path.suffix in _TEXT_SUFFIXES or path.name in _TEXT_NAMES):
            files.append(path)
    return files


def _citations() -> dict[str, list[str]]:
    found: dict[str, list[str]] = {}
    for path in _text_files():
        if path == Path(__file__).resolve():
            continue  # its patterns name what it looks for
        for number, line in enumerate(path.read_text(errors="replace").splitlines(), 1):
            if OUTSIDE.search(line):
                found.setdefault(str(path.relative_to(REPO)), []).append(f"{number}: {line.strip()}")
    return found


def test_no_file_cites_the_notes_beside_the_repository() -> None:
    found = _citations()
    assert not found, "cite the page under docs/ that holds the fact instead:\n" + "\n".join(
        f"{path}:{line}" for path, lines in found.items() for line in lines
    )


def test_the_pattern_knows_a_citation_from_a_docs_page() -> None:
    cited = ["(HARNESSES.md)", "see ../shared/argo/schema.json", "(shared/GUI.md)", "STYLE.md says"]
    fine = ["docs/harnesses.md", "docs/environments.md", "/usr/share/doc", "pipelines/validate/schemas/", "a_shared/x"]
    assert all(OUTSIDE.search(text) for text in cited)
    assert not any(OUTSIDE.search(text) for text in fine)
