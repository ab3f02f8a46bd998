"""Dense reward: how much zlib shrinks the answer, 1 - compressed / original size.

Answers shorter than 64 bytes are measured as if 64 bytes long, so a short answer
cannot score by being short. Random text scores about 0.1-0.3; a phrase said over and
over approaches 1. Passed from 0.7 on.
"""

import json
import os
import sys
import zlib
from pathlib import Path

MIN_SIZE = 64

answer = Path(os.environ["OPENFORGE_FINAL_ANSWER"]).read_bytes()
reward = max(0.0, 1 - len(zlib.compress(answer, 9)) / max(len(answer), MIN_SIZE)) if answer else 0.0
print(json.dumps({"reward": round(reward, 6)}))
sys.exit(0 if reward >= 0.7 else 1)
