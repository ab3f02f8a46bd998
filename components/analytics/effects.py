"""What one tool call does to files and tests, as far as its arguments say: the files it
writes, the files it reads (or runs), whether it runs a test suite, and which command it
is (to tell a fix from an unrelated success). Rules and their limits: docs/analytics.md.
"""

from __future__ import annotations

import posixpath
from dataclasses import dataclass, field
from typing import Any, Mapping

from components.analytics._shell import SimpleCommand, patch_files, simple_commands

# Argument names: a shell command, a file path, a file's new content or an edit of it.
_COMMAND_ARGS = ("command", "cmd")
_PATH_ARGS = ("file_path", "path", "filename", "notebook_path")
_WRITE_ARGS = ("content", "contents", "text", "new_string", "new_str", "edits", "new_source", "file_text")
_PATCH_ARGS = ("input", "patch")
# The file editor tool of Anthropic's text-editor family: `command` is its sub-command.
_EDITOR_WRITES = frozenset({"create", "str_replace", "insert", "undo_edit"})
_EDITOR_READS = frozenset({"view"})
# Programs whose file arguments they read, and interpreters whose first argument they run.
_READERS = frozenset({"cat", "head", "tail", "less", "more", "nl", "wc", "grep", "egrep", "rg", "diff", "cmp", "od", "xxd", "file", "stat", "md5sum", "sha256sum"})  # fmt: skip
_INTERPRETERS = frozenset({"python", "python3", "bash", "sh", "node", "ruby", "perl"})
_WRITE_EVERY_OPERAND = frozenset({"tee", "touch"})
_WRITE_LAST_OPERAND = frozenset({"cp", "mv", "sed"})  # sed only with -i
# Programs whose first non-option argument says which command it is (`git commit`, `python x.py`).
_LAUNCHERS = _INTERPRETERS | {"git", "npm", "yarn", "pnpm", "go", "cargo", "uv", "pip", "make", "docker", "npx"}
# Test runners: a program, a module run with `-m`, or a program's sub-command.
_TEST_PROGRAMS = frozenset({"pytest", "py.test", "nosetests", "tox", "nox", "jest", "vitest", "mocha", "phpunit", "rspec", "ctest"})  # fmt: skip
_TEST_MODULES = frozenset({"pytest", "unittest", "nose"})
_TEST_SUBCOMMANDS = {
    **dict.fromkeys(("npm", "yarn", "pnpm", "bun"), ("test",)),
    **dict.fromkeys(("go", "cargo", "mvn", "dotnet", "mix", "deno", "gradle", "gradlew"), ("test",)),
    "make": ("test", "check"),
}
_RUNNERS = frozenset({"npx", "uv", "poetry", "pipenv"})  # `npx jest`, `uv run pytest`: the runner's program counts


@dataclass
class Effects:
    """What one tool call does, step by step (a shell line's simple commands in order)."""

    steps: list["Step"] = field(default_factory=list)
    identity: tuple[str, ...] = ()  # the tool and which command of it: a fix repeats it

    @property
    def writes(self) -> list[str]:
        return [path for step in self.steps for path in step.writes]


@dataclass
class Step:
    writes: list[str] = field(default_factory=list)
    reads: list[str] = field(default_factory=list)  # files read or run
    runs_tests: bool = False


def effects(tool: str, arguments: Mapping[str, Any]) -> Effects:
    """The effects of calling ``tool`` with ``arguments``."""
    command = shell_command(arguments)
    path = next((arguments[k] for k in _PATH_ARGS if isinstance(arguments.get(k), str)), None)
    if path is not None and arguments.get("command") in _EDITOR_WRITES | _EDITOR_READS:
        # The text editor: `command` names an edit (create, view, ...), not a shell line.
        writes = arguments["command"] in _EDITOR_WRITES
        reads = arguments["command"] in _EDITOR_READS
        return Effects([Step(writes=[path] if writes else [], reads=[path] if reads else [])], (tool, path))
    if command is not None:
        commands = simple_commands(command)
        steps = [_shell_step(c) for c in commands]
        if patched := patch_files(command):
            steps.append(Step(writes=patched))
        last = commands[-1] if commands else SimpleCommand("")
        return Effects(steps, (tool, *_command_identity(last)))
    patch = next((arguments[k] for k in _PATCH_ARGS if isinstance(arguments.get(k), str)), "")
    if patched := patch_files(patch):
        return Effects([Step(writes=patched)], (tool, *patched[:1]))
    if path is None:
        return Effects([Step()], (tool,))
    if any(k in arguments for k in _WRITE_ARGS):
        return Effects([Step(writes=[path])], (tool, path))
    return Effects([Step(reads=[path])], (tool, path))


def shell_command(arguments: Mapping[str, Any]) -> str | None:
    """The command line a shell tool was given: a string, or an argv (``["bash", "-lc", LINE]``)."""
    value = next((arguments[k] for k in _COMMAND_ARGS if k in arguments), None)
    if isinstance(value, str):
        return value
    if isinstance(value, list) and value and all(isinstance(v, str) for v in value):
        if len(value) >= 3 and value[0].rsplit("/", 1)[-1] in ("bash", "sh", "zsh") and value[1].startswith("-"):
            return value[-1]
        return " ".join(value)
    return None


def same_file(a: str, b: str) -> bool:
    """Whether two paths name the same file: equal once normalized, or one a relative tail of the other."""
    a, b = posixpath.normpath(a), posixpath.normpath(b)
    return a == b or a.endswith("/" + b) or b.endswith("/" + a)


def _shell_step(command: SimpleCommand) -> Step:
    step = Step(writes=list(command.writes))
    operands = [a for a in command.args if not a.startswith("-")]
    name = command.name
    step.runs_tests = _runs_tests(name, command.args)
    if name in _READERS:
        step.reads = operands
    elif name in _INTERPRETERS and operands and not {"-c", "-m"} & set(command.args):
        step.reads = operands[:1]  # the script it runs
    elif "/" in command.program:
        step.reads = [command.program]  # a program run by its path: `./build.sh`
    if name in _WRITE_EVERY_OPERAND:
        step.writes += operands
    elif name in _WRITE_LAST_OPERAND and operands and (name != "sed" or any(a.startswith("-i") for a in command.args)):
        step.writes.append(operands[-1])
    return step


def _runs_tests(name: str, args: list[str]) -> bool:
    operands = [a for a in args if not a.startswith("-")]
    if name in _RUNNERS and operands:
        rest = operands[1:] if operands[0] == "run" else operands
        return bool(rest) and _runs_tests(posixpath.basename(rest[0]), args[args.index(rest[0]) + 1 :])
    if name in _TEST_PROGRAMS:
        return True
    if name in _INTERPRETERS and "-m" in args[:-1]:
        return args[args.index("-m") + 1] in _TEST_MODULES
    if operands[:1] == ["run"] and name in ("npm", "yarn", "pnpm", "bun"):
        operands = operands[1:]  # `npm run test` is `npm test`
    return bool(operands) and operands[0] in _TEST_SUBCOMMANDS.get(name, ())


def _command_identity(command: SimpleCommand) -> tuple[str, ...]:
    if command.name in _LAUNCHERS:
        operand = next((a for a in command.args if not a.startswith("-")), None)
        return (command.name,) if operand is None else (command.name, operand)
    return (command.name,)
