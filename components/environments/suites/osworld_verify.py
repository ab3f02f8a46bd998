"""Verifier of an OSWorld task; copied verbatim into each task folder as ``verify.py``.

Standard library only: it runs as ``python3 {task_dir}/verify.py`` with the workspace (the
VM's ``/home/user``) as its working directory. It reads ``goal.json`` beside it, written
from the task's evaluator by osworld_eval.py:

    {"conj": "and", "checks": [
      {"func": "compare_text_file", "result": {"file": "draft.txt"},
       "expected": {"file": "expected/draft_gold.txt"}, "options": {"ignore_blanks": true, "ignore_case": false}},
      {"func": "check_include_exclude", "result": {"command": ["ls", "{workspace}/logs"]},
       "expected": {"include": ["app.log"], "exclude": [".tmp"]}},
      {"func": "exact_match", "result": {"file": "count.txt"}, "expected": {"expected": "2\\n"}}]}

Each check scores 1 or 0 as OSWorld's metric of that name does (``result`` is a file's text
or a command's stdout; a missing file scores 0); ``and`` passes when every check does, ``or``
when one does. Exit 0: passed; 1: failed (each check printed); 2: it could not judge.
"""

import json
import re
import subprocess
import sys
from pathlib import Path

COMMAND_TIMEOUT_S = 20


def cannot_judge(message):
    # Exit 2, not 1: the runner reads 1 as "failed" and 2 as a broken verifier (no reward).
    print(f"verify.py: {message}", file=sys.stderr)
    sys.exit(2)


def result_text(result, workspace):
    """What OSWorld's getter would fetch: a file's text (None when missing) or a command's stdout."""
    if "file" in result:
        try:
            return (workspace / result["file"]).read_text(errors="replace")
        except OSError:
            return None
    argv = [arg.replace("{workspace}", str(workspace)) for arg in result["command"]]
    try:
        run = subprocess.run(argv, cwd=workspace, capture_output=True, text=True, timeout=COMMAND_TIMEOUT_S)
    except (OSError, subprocess.TimeoutExpired) as exc:
        cannot_judge(f"cannot run {argv}: {exc}")
    return run.stdout


def blanks_collapsed(text):
    # OSWorld's compare_text_file(ignore_blanks=True): tabs and newlines to spaces, runs of spaces to one.
    return re.sub(r"\s+", " ", re.sub(r"[\t\n]", " ", text).strip())


def score(check, task_dir, workspace):
    """(1.0 or 0.0, what was compared) for one check."""
    actual, expected = result_text(check["result"], workspace), check["expected"]
    if check["func"] == "compare_text_file":
        gold = (task_dir / expected["file"]).read_text(errors="replace")
        if actual is None:
            return 0.0, "result file missing"
        if check["options"].get("ignore_blanks"):
            actual, gold = blanks_collapsed(actual), blanks_collapsed(gold)
        if check["options"].get("ignore_case"):
            actual, gold = actual.lower(), gold.lower()
        return float(actual == gold), f"found {actual!r:.200}, expected {gold!r:.200}"
    if check["func"] == "exact_match":
        return float(actual == expected["expected"]), f"found {actual!r:.200}, expected {expected['expected']!r:.200}"
    if check["func"] == "check_include_exclude":
        if actual is None:
            return 0.0, "result file missing"
        missing = [s for s in expected["include"] if s not in actual]
        present = [s for s in expected["exclude"] if s in actual]
        return float(not missing and not present), f"missing {missing}, excluded but present {present}"
    cannot_judge(f"unknown func {check['func']!r} in goal.json")


def main():
    task_dir, workspace = Path(__file__).resolve().parent, Path.cwd()
    try:
        goal = json.loads((task_dir / "goal.json").read_text())
    except (OSError, ValueError) as exc:
        cannot_judge(f"cannot read goal.json: {exc}")
    scores = []
    for check in goal["checks"]:
        value, detail = score(check, task_dir, workspace)
        scores.append(value)
        print(f"{check['func']} on {check['result']}: {value:g} ({detail})")
    passed = all(scores) if goal["conj"] == "and" else any(scores)
    print(json.dumps({"reward": 1.0 if passed else 0.0}))
    return 0 if passed else 1


if __name__ == "__main__":
    sys.exit(main())
