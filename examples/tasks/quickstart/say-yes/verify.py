"""Passed when the answer is "yes". Dense partial credit for the rest, so even a random
policy's rollouts differ in reward and give GRPO something to learn from: the share of
the answer's letters that are y, e or s, scaled down for answers longer than the word."""

import json
import os
import sys
from pathlib import Path

answer = Path(os.environ["OPENFORGE_FINAL_ANSWER"]).read_text(errors="replace").strip().lower()
if answer.rstrip(".!") == "yes":
    reward = 1.0
else:
    letters = [c for c in answer if c.isalpha()]
    share = sum(c in "yes" for c in letters) / len(letters) if letters else 0.0
    reward = 0.5 * share * min(1.0, 3 / max(len(answer), 1)) ** 0.5
print(json.dumps({"reward": round(reward, 6)}))
sys.exit(0 if reward == 1.0 else 1)
