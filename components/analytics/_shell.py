"""A shell command line split into what the analytics look at: its simple commands, each
with its program, arguments and the files it writes by redirection.

A best-effort reading, not a shell: quoting is honoured (``shlex``), but variables, globs,
subshells and here-documents' bodies are not expanded (docs/analytics.md, failure modes).
"""

from __future__ import annotations

import re
import shlex
from dataclasses import dataclass, field

_SEPARATORS = frozenset({";", ";;", "&&", "||", "|", "&", "(", ")", "|&"})
_WRITES = frozenset({">", ">>", ">|", "&>", "&>>"})
_INPUTS = frozenset({"<", "<<", "<<-", "<<<", ">&", "<&"})  # their operand is read or an fd, not written
_PREFIXES = frozenset({"sudo", "env", "time", "nohup", "exec", "command"})
_DISCARDED = frozenset({"/dev/null", "/dev/stdout", "/dev/stderr"})
# apply_patch's envelope (Codex): the files a patch adds, updates or moves to.
_PATCH_FILE = re.compile(r"^\*\*\* (?:Add File|Update File|Move to): (.+?)\s*$", re.M)
_HEREDOC = re.compile(r"<<-?\s*['\"]?(\w+)['\"]?")


@dataclass
class SimpleCommand:
    program: str  # as written: a name or a path (`./run.sh`)
    args: list[str] = field(default_factory=list)
    writes: list[str] = field(default_factory=list)  # files its `>` / `>>` redirections write

    @property
    def name(self) -> str:
        """The program's base name (`/usr/bin/python3` -> `python3`)."""
        return self.program.rsplit("/", 1)[-1]


def simple_commands(command: str) -> list[SimpleCommand]:
    """The simple commands of a command line, in order (here-document bodies left out)."""
    found: list[SimpleCommand] = []
    for line in _without_heredoc_bodies(command).split("\n"):
        words: list[str] = []
        writes: list[str] = []
        tokens = iter(_tokens(line) + [";"])
        for token in tokens:
            if token in _SEPARATORS:
                _close(words, writes, found)
                words, writes = [], []
            elif token in _WRITES:
                target = next(tokens, "")
                fd = words.pop() if words and words[-1].isdigit() else "1"  # `2> f`: errors, not a result
                if fd == "1" and target not in _DISCARDED and target not in _SEPARATORS:
                    writes.append(target)
            elif token in _INPUTS:
                next(tokens, None)
            else:
                words.append(token)
    return found


def patch_files(text: str) -> list[str]:
    """Files an apply_patch envelope adds, updates or moves to."""
    return _PATCH_FILE.findall(text)


def _close(words: list[str], writes: list[str], found: list[SimpleCommand]) -> None:
    while words and "=" in words[0] and not words[0].startswith("="):  # `VAR=value cmd`
        words = words[1:]
    while words and words[0] in _PREFIXES:
        words = words[1:]
    if words:
        found.append(SimpleCommand(words[0], words[1:], writes))
    elif writes:  # `> f` alone truncates f
        found.append(SimpleCommand("", [], writes))


def _tokens(line: str) -> list[str]:
    lexer = shlex.shlex(line, posix=True, punctuation_chars=True)
    lexer.whitespace_split = True
    try:
        return list(lexer)
    except ValueError:  # an unbalanced quote: the plain words are still worth reading
        return line.split()


def _without_heredoc_bodies(command: str) -> str:
    """The command line without here-document bodies (their text is data, not commands)."""
    out, ending = [], None
    for line in command.split("\n"):
        if ending is not None:
            if line.strip() == ending:
                ending = None
            continue
        out.append(line)
        match = _HEREDOC.search(line)
        if match:
            ending = match.group(1)
    return "\n".join(out)
