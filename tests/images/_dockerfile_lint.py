"""A small Dockerfile linter for images/: what `docker build` cannot check here, checked by reading.

Rules: every base image is pinned to an explicit tag other than ``latest``; the final
stage runs as a numeric non-root user; every package a RUN line installs with pip is
pinned with ``==``; every COPY source exists in the build
context (the repository root), so the image is built from this package.
"""

from __future__ import annotations

import re
import shlex
from pathlib import Path

_INSTRUCTION = re.compile(r"^\s*([A-Za-z]+)\s+(.*)$")
_ARG_REF = re.compile(r"\$\{?(\w+)\}?")
_PIP_FLAGS_WITH_VALUE = {"-r", "--requirement", "-c", "--constraint", "--index-url", "-i", "--wheel-dir", "-w"}


def instructions(text: str) -> list[tuple[str, str]]:
    """(INSTRUCTION, arguments) per logical line: continuations joined, comments dropped."""
    joined = re.sub(r"\\\n", " ", "\n".join(line for line in text.splitlines() if not line.lstrip().startswith("#")))
    return [(m.group(1).upper(), m.group(2).strip()) for m in map(_INSTRUCTION.match, joined.splitlines()) if m]


def lint(text: str, context: Path) -> list[str]:
    """Every rule the Dockerfile ``text`` breaks; empty when it passes."""
    problems: list[str] = []
    args: dict[str, str] = {}
    stages: set[str] = set()
    final_user: str | None = None
    if re.search(r"(?i):latest\b", text):
        problems.append("names a `latest` tag: pin an exact version")
    for name, rest in instructions(text):
        if name == "ARG":
            key, _, default = rest.partition("=")
            args.setdefault(key.strip(), default.strip().strip('"'))
        elif name == "FROM":
            final_user = None  # each stage starts as its base's user: root unless it says otherwise
            problems += _check_from(rest, args, stages)
        elif name == "USER":
            final_user = rest.split(":")[0]
        elif name == "RUN":
            problems += _check_pip(rest)
        elif name == "COPY" and "--from=" not in rest:
            sources = [s for s in shlex.split(rest)[:-1] if not s.startswith("--")]
            problems += [f"COPY {s}: no such path in the build context" for s in sources if not (context / s).exists()]
    if final_user is None or not final_user.isdigit() or int(final_user) == 0:
        problems.append(f"the final stage must end with `USER <non-zero uid>`, not {final_user!r}")
    return problems


def _check_from(rest: str, args: dict[str, str], stages: set[str]) -> list[str]:
    words = [w for w in rest.split() if not w.startswith("--")]
    image = _ARG_REF.sub(lambda m: args.get(m.group(1), ""), words[0])
    if len(words) >= 3 and words[1].upper() == "AS":
        stages.add(words[2])
    if image in stages:
        return []
    _, colon, tag = image.rpartition(":")
    if not colon or "/" in tag or tag == "latest":  # `host:5000/name` has a port, not a tag
        return [f"FROM {words[0]}: pin the base image to an explicit tag"]
    return []


def _check_pip(command: str) -> list[str]:
    problems: list[str] = []
    for part in re.split(r"&&|;", command):
        words = shlex.split(part)
        if "pip" not in words or "install" not in words:
            continue
        skip_next = False
        for word in words[words.index("install") + 1 :]:
            if skip_next or word.startswith(("-", "/", "$", ".")):
                # A flag's value, a flag, a wheel path, a variable: not a requirement.
                skip_next = word in _PIP_FLAGS_WITH_VALUE
                continue
            if "==" not in word:
                problems.append(f"pip install {word}: pin it with ==")
    return problems


def unpinned_requirements(path: Path) -> list[str]:
    """Lines of a requirements file that do not pin one exact version."""
    lines = (line.split("#")[0].strip() for line in path.read_text().splitlines())
    return [line for line in lines if line and "==" not in line]
