"""Dense reward: 1 - distinct characters / 48, scaled down below 32 characters.

Random text of a few hundred characters uses about 35-45 distinct characters and
scores 0.1-0.3; a phrase said over and over uses a handful and scores above 0.8.
Passed from 0.8 on.
"""

import json
import os
import sys
from pathlib import Path

RANDOM_TEXT_DISTINCT = 48
MIN_LENGTH = 32

answer = Path(os.environ["OPENFORGE_FINAL_ANSWER"]).read_text(errors="replace")
variety = max(0.0, 1 - len(set(answer)) / RANDOM_TEXT_DISTINCT)
reward = variety * min(1.0, len(answer) / MIN_LENGTH)
print(json.dumps({"reward": round(reward, 6)}))
sys.exit(0 if reward >= 0.8 else 1)
