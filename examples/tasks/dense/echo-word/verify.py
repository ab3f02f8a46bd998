"""Dense reward: the share of the answer's character trigrams already seen earlier in it.

Random text scores near 0, a phrase said over and over near 1. Whitespace counts like
any character. Passed from 0.5 on.
"""

import json
import os
import sys
from pathlib import Path

answer = Path(os.environ["OPENFORGE_FINAL_ANSWER"]).read_text(errors="replace")
trigrams = [answer[i : i + 3] for i in range(len(answer) - 2)]
seen: set[str] = set()
repeated = 0
for trigram in trigrams:
    repeated += trigram in seen
    seen.add(trigram)
reward = repeated / len(trigrams) if trigrams else 0.0
print(json.dumps({"reward": round(reward, 6)}))
sys.exit(0 if reward >= 0.5 else 1)
