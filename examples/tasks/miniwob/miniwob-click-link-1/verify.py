"""Verifier of a seeded web task; copied verbatim into each task folder as ``verify.py``.

Standard library only: it runs as ``python3 {task_dir}/verify.py`` wherever the rollout
runs. It reads the expectations from ``goal.json`` beside it, the app's state from the
state endpoint (``OPENFORGE_WEB_STATE_URL``, with ``OPENFORGE_WEB_STATE_TOKEN``) and the
agent's answer from ``OPENFORGE_FINAL_ANSWER``. Exit 0: every expectation met; 1: some
not (each printed); 2: it could not judge (missing variable, app unreachable).
"""

import json
import os
import re
import sys
import urllib.request
from pathlib import Path

TOKEN_HEADER = "X-OpenForge-State-Token"


def mismatches(expected, actual, where):
    """Where ``actual`` differs from ``expected``: listed fields only; lists element by element."""
    if isinstance(expected, dict):
        if not isinstance(actual, dict):
            return [f"{where}: expected an object, found {actual!r}"]
        found = []
        for key, value in expected.items():
            if key not in actual:
                found.append(f"{where}.{key}: missing")
            else:
                found.extend(mismatches(value, actual[key], f"{where}.{key}"))
        return found
    if isinstance(expected, list):
        if not isinstance(actual, list) or len(actual) != len(expected):
            count = len(actual) if isinstance(actual, list) else actual
            return [f"{where}: expected {len(expected)} entries, found {count!r}"]
        return [m for i, (e, a) in enumerate(zip(expected, actual)) for m in mismatches(e, a, f"{where}[{i}]")]
    if isinstance(expected, str) and isinstance(actual, str):
        # What an agent types may differ in case and spacing from the prompt; nothing else.
        same = " ".join(expected.split()).casefold() == " ".join(actual.split()).casefold()
    else:
        same = type(expected) is type(actual) and expected == actual
    return [] if same else [f"{where}: expected {expected!r}, found {actual!r}"]


def answer_problems(goal, answer):
    words = set(re.findall(r"[A-Z0-9]+", answer.upper()))
    problems = []
    if "answer_contains" in goal and goal["answer_contains"].upper() not in words:
        problems.append(f"answer: does not name {goal['answer_contains']!r}: {answer[:200]!r}")
    wrong = sorted(words & {w.upper() for w in goal.get("answer_excludes", [])})
    if wrong:
        problems.append(f"answer: names wrong choices {wrong}")
    return problems


def cannot_judge(message):
    # Exit 2, not 1: the runner reads 1 as "failed" and 2 as a broken verifier (no reward).
    print(f"verify.py: {message}", file=sys.stderr)
    sys.exit(2)


def fetch_state():
    try:
        url, token = os.environ["OPENFORGE_WEB_STATE_URL"], os.environ["OPENFORGE_WEB_STATE_TOKEN"]
    except KeyError as exc:
        cannot_judge(f"{exc.args[0]} is not set; the rollout runner must start the web app (web.yaml)")
    request = urllib.request.Request(url, headers={TOKEN_HEADER: token})
    try:
        with urllib.request.urlopen(request, timeout=10) as resp:
            return json.loads(resp.read())
    except OSError as exc:
        cannot_judge(f"cannot read the app's state at {url}: {exc}")


def main():
    goal = json.loads((Path(__file__).resolve().parent / "goal.json").read_text())
    problems = []
    if "state" in goal:
        problems += mismatches(goal["state"], fetch_state(), "state")
    if "answer_contains" in goal or "answer_excludes" in goal:
        answer_file = os.environ.get("OPENFORGE_FINAL_ANSWER")
        if not answer_file:
            cannot_judge("OPENFORGE_FINAL_ANSWER is not set")
        problems += answer_problems(goal, Path(answer_file).read_text(errors="replace"))
    for problem in problems:
        print(problem)
    print(json.dumps({"reward": 0.0 if problems else 1.0}))
    return 1 if problems else 0


if __name__ == "__main__":
    sys.exit(main())
