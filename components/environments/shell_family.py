"""A family of small shell tasks that differ in file names, contents and sizes.

For a policy that writes its own commands (free sampling) a fixed task set teaches one
string per task; here every task of a kind asks the same thing of a different file, so
the command must be read off the prompt. Each task carries a ``reference`` solution
(`openforge record`'s reference teacher plays it, docs/tasks.md) and, as ``choices``, the
kind's typical slip as its error. Generated from a seed, so a folder can be rewritten
byte for byte; a held-out set is drawn with another seed and refused if any of its tasks
needs a command a training task needs (the same kind on the same file name,
``check_no_overlap``): a policy that only memorised the training commands gains nothing there.

mini-swe-agent ends a task on ``echo COMPLETE_TASK_AND_SUBMIT_FINAL_OUTPUT``; other
harnesses run it as a harmless command and end on the answer that follows.
"""

from __future__ import annotations

import json
import random
import shutil
from dataclasses import dataclass
from pathlib import Path

import yaml

SUBMIT = "echo COMPLETE_TASK_AND_SUBMIT_FINAL_OUTPUT"
_WORDS = (
    "apple river stone cloud maple ember harbor violet copper meadow lantern quartz willow "
    "falcon garnet island juniper kettle lemon marble nickel orchard pepper quiver raven saddle "
    "thistle umber velvet walnut yarrow zephyr"
).split()
_STEMS = ("notes", "report", "draft", "journal", "letters", "inventory", "ledger", "memo", "diary", "recipes")


@dataclass(frozen=True)
class _Kind:
    name: str
    prompt: str  # {src} the input file, {out} the output file
    right: str
    wrong: str  # the kind's typical slip: the recordings' failures
    out: str

    def expected(self, text: str) -> str:
        lines = text.splitlines()
        return {
            "word-count": str(len(text.split())),
            "line-count": str(len(lines)),
            "first-line": lines[0],
            "last-line": lines[-1],
            "sorted-lines": "\n".join(sorted(lines)),
        }[self.name]


_KINDS = (
    _Kind("word-count", "Write the number of words in {src} into the file {out}.", "wc -w < {src} > {out}", "wc -l < {src} > {out}", "count.txt"),
    _Kind("line-count", "Write the number of lines in {src} into the file {out}.", "wc -l < {src} > {out}", "wc -w < {src} > {out}", "count.txt"),
    _Kind("first-line", "Write the first line of {src} into the file {out}.", "head -n 1 {src} > {out}", "tail -n 1 {src} > {out}", "line.txt"),
    _Kind("last-line", "Write the last line of {src} into the file {out}.", "tail -n 1 {src} > {out}", "head -n 1 {src} > {out}", "line.txt"),
    _Kind("sorted-lines", "Write the lines of {src}, sorted, into the file {out}.", "sort {src} > {out}", "sort -r {src} > {out}", "sorted.txt"),
)
KINDS = tuple(kind.name for kind in _KINDS)

# The verifier compares the output file with the answer the generator computed (answer.json).
_VERIFY = '''"""Passed when the output file holds the expected answer (answer.json, written with the task)."""

import json
import os
import sys
from pathlib import Path

answer = json.loads((Path(os.environ["OPENFORGE_TASK_DIR"]) / "answer.json").read_text())
path = Path(answer["file"])
got = path.read_text(errors="replace").strip() if path.is_file() else None
print(f"expected {answer['text'][:80]!r}, {answer['file']} holds {(got or '')[:80]!r}")
sys.exit(0 if got == answer["text"] else 1)
'''


def _contents(rng: random.Random) -> str:
    lines = rng.randint(2, 9)
    return "\n".join(" ".join(rng.choice(_WORDS) for _ in range(rng.randint(1, 6))) for _ in range(lines)) + "\n"


def _task(kind: _Kind, src: str, text: str) -> dict:
    def turn(command: str) -> dict:
        return {"tool_calls": [{"shell": command.format(src=src, out=kind.out)}]}

    closing = [[{"tool_calls": [{"shell": SUBMIT}]}], [{"content": "Done."}]]
    return {
        "prompt": kind.prompt.format(src=src, out=kind.out),
        "workspace": "workspace",
        "verifier": {"command": ["python3", "{task_dir}/verify.py"], "timeout_s": 10},
        "reference": [turn(kind.right), {"tool_calls": [{"shell": SUBMIT}]}, {"content": "Done."}],
        "choices": [[turn(kind.right), turn(kind.wrong)], *closing],
    }


def _command_of(task_dir: Path) -> tuple[str, str]:
    """What a task's solution depends on: its kind and its input file's name."""
    answer = json.loads((task_dir / "answer.json").read_text())
    return answer["kind"], answer["source"]


def write_shell_family(out: Path, count: int, seed: int, prefix: str = "task") -> list[Path]:
    """``count`` tasks into ``out/<prefix>-NN/``, kinds in turn, files and contents drawn from ``seed``."""
    rng = random.Random(seed)
    written = []
    for index in range(count):
        kind = _KINDS[index % len(_KINDS)]
        src = f"{rng.choice(_STEMS)}-{rng.randint(1, 99)}.txt"
        text = _contents(rng)
        task_id = f"{prefix}-{index:02d}-{kind.name}"
        folder = out / task_id
        shutil.rmtree(folder, ignore_errors=True)
        (folder / "workspace").mkdir(parents=True)
        (folder / "workspace" / src).write_text(text)
        spec = {"id": task_id, **_task(kind, src, text)}
        (folder / "task.yaml").write_text(yaml.safe_dump(spec, sort_keys=False, width=120))
        answer = {"kind": kind.name, "source": src, "file": kind.out, "text": kind.expected(text).strip()}
        (folder / "answer.json").write_text(json.dumps(answer, indent=2) + "\n")
        (folder / "verify.py").write_text(_VERIFY)
        written.append(folder)
    return written


def check_no_overlap(train: Path, held_out: Path) -> None:
    """Refuse a held-out set with a task whose command a training task also needs."""
    seen = {_command_of(folder) for folder in train.iterdir() if (folder / "answer.json").is_file()}
    repeated = [f.name for f in sorted(held_out.iterdir()) if (f / "answer.json").is_file() and _command_of(f) in seen]
    if repeated:
        raise ValueError(f"held-out tasks {repeated} repeat training tasks of {train}: draw the held-out set with another seed")
