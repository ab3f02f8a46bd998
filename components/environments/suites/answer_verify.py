"""Verifier of a web benchmark task (WebVoyager, Online-Mind2Web); copied verbatim into each as ``verify.py``.

Standard library only: it runs as ``python3 {task_dir}/verify.py`` wherever the rollout
runs. The benchmarks judge with an LLM (WebVoyager's GPT-4V judge, Online-Mind2Web's
WebJudge); offline and deterministic, this checks the agent's final answer
(``OPENFORGE_FINAL_ANSWER``) against ``goal.json`` beside it:

    {"includes": ["Vegetarian Four Cheese Lasagna", "4.6"], "excludes": ["Spinach Lasagna"]}

Each ``includes`` string must occur in the answer and no ``excludes`` string may, compared
ignoring case and runs of whitespace. Exit 0: met; 1: not (each miss printed); 2: it could
not judge (no goal, no answer file).
"""

import json
import os
import sys
from pathlib import Path


def cannot_judge(message):
    # Exit 2, not 1: the runner reads 1 as "failed" and 2 as a broken verifier (no reward).
    print(f"verify.py: {message}", file=sys.stderr)
    sys.exit(2)


def normal(text):
    return " ".join(text.split()).casefold()


def problems(goal, answer):
    said = normal(answer)
    found = [f"answer: does not contain {s!r}" for s in goal.get("includes", []) if normal(s) not in said]
    found += [f"answer: contains {s!r}" for s in goal.get("excludes", []) if normal(s) in said]
    return found


def main():
    goal_file = Path(__file__).with_name("goal.json")
    try:
        goal = json.loads(goal_file.read_text())
    except (OSError, ValueError) as exc:
        cannot_judge(f"cannot read {goal_file}: {exc}")
    answer_file = os.environ.get("OPENFORGE_FINAL_ANSWER")
    if not answer_file:
        cannot_judge("OPENFORGE_FINAL_ANSWER is not set")
    try:
        answer = Path(answer_file).read_text(errors="replace")
    except OSError as exc:
        cannot_judge(f"cannot read the final answer {answer_file}: {exc}")
    found = problems(goal, answer)
    for problem in found:
        print(problem)
    if found:
        print(f"answer was: {answer[:300]!r}")
    print(json.dumps({"reward": 0.0 if found else 1.0}))
    return 1 if found else 0


if __name__ == "__main__":
    sys.exit(main())
