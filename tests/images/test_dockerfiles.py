"""images/: every Dockerfile is pinned, non-root and built from this package (read, not built:
no `docker build` can run here), and there is one per containerised step and harness."""

from __future__ import annotations

from pathlib import Path

import pytest
from tests.images._dockerfile_lint import lint, unpinned_requirements

from components.rollout.harnesses import HARNESSES

ROOT = Path(__file__).resolve().parents[2]
IMAGES = ROOT / "images"
DOCKERFILES = sorted([*IMAGES.rglob("Dockerfile"), *IMAGES.rglob("Containerfile")])

GOOD = """\
FROM python:3.11.7-slim-bookworm AS build
COPY pyproject.toml ./
FROM build
RUN pip install --no-cache-dir -r /tmp/r.txt && pip install --no-deps /tmp/wheels/*.whl aiohttp==3.14.5
USER 1000
"""


@pytest.mark.parametrize("path", DOCKERFILES, ids=lambda p: str(p.relative_to(IMAGES)))
def test_dockerfile_is_pinned_non_root_and_built_from_the_package(path: Path) -> None:
    assert lint(path.read_text(), ROOT) == []


def test_every_step_and_harness_has_an_image() -> None:
    steps = {"proxy", "runtime", "trainer", "engine"}
    harnesses = {f"harness/{name}" for name in HARNESSES if name != "reference"}  # reference: in runtime
    assert {str(p.parent.relative_to(IMAGES)) for p in IMAGES.rglob("Dockerfile")} == steps | harnesses


def test_requirement_files_pin_every_package() -> None:
    files = list(IMAGES.rglob("requirements*.txt"))
    assert files
    assert {str(p): unpinned_requirements(p) for p in files} == {str(p): [] for p in files}


def test_linter_passes_a_good_dockerfile() -> None:
    assert lint(GOOD, ROOT) == []


@pytest.mark.parametrize(
    ("mutation", "problem"),
    [
        (("python:3.11.7-slim-bookworm AS", "python AS"), "pin the base image"),
        (("python:3.11.7-slim-bookworm AS", "python:latest AS"), "latest"),
        (("python:3.11.7-slim-bookworm AS", "localhost:5000/python AS"), "pin the base image"),
        (("USER 1000\n", ""), "USER <non-zero uid>"),
        (("USER 1000", "USER 0"), "USER <non-zero uid>"),
        (("USER 1000", "USER openforge"), "USER <non-zero uid>"),
        (("aiohttp==3.14.5", "aiohttp"), "pip install aiohttp: pin it"),
        (("aiohttp==3.14.5", "aiohttp>=3"), "pin it with =="),
        (("COPY pyproject.toml", "COPY setup.py"), "COPY setup.py: no such path"),
    ],
)
def test_linter_catches_each_mistake(mutation: tuple[str, str], problem: str) -> None:
    old, new = mutation
    assert old in GOOD
    problems = lint(GOOD.replace(old, new), ROOT)
    assert any(problem in p for p in problems), problems


def test_a_user_set_in_an_earlier_stage_does_not_cover_the_final_one() -> None:
    text = "FROM python:3.11.7-slim-bookworm AS build\nUSER 1000\nFROM python:3.11.7-slim-bookworm\n"
    assert any("USER" in p for p in lint(text, ROOT))
