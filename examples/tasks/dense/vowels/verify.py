"""Dense reward: the share of the answer's characters that are vowels (a, e, i, o, u, any case).

Answers shorter than 32 characters are measured as if 32 long, so a short answer cannot
score by being short. Random text from the tiny model scores about 0.4; text made of
vowel-rich words scores above 0.6, where the answer passes. Every task of this set has
the same verifier: a task folder is copied into the run on its own, so it cannot share one.
"""

import json
import os
import sys
from pathlib import Path

MIN_LENGTH = 32
PASS_FROM = 0.6

answer = Path(os.environ["OPENFORGE_FINAL_ANSWER"]).read_text(errors="replace")
reward = sum(c in "aeiouAEIOU" for c in answer) / max(len(answer), MIN_LENGTH)
print(json.dumps({"reward": round(reward, 6)}))
sys.exit(0 if reward >= PASS_FROM else 1)
