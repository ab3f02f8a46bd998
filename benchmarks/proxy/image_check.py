"""After a screenshot run: did the proxy record every image, once, where each call points?

Every call line must refer to exactly the screenshot its request carried (regenerated
from the seed and call number in its text, ``screenshots.py``); ``images/`` must hold
one file per distinct SHA-256, named by the hash of its bytes, and nothing else.
"""

from __future__ import annotations

import hashlib
import re
from functools import lru_cache
from pathlib import Path
from typing import Any

from pydantic import BaseModel

from benchmarks.proxy.screenshots import ScreenshotPlan, image_indexes, screenshots

# The text each screenshot call carries (loadgen's tag): "<prefix>-<client> <phase> <k>".
_STEP = re.compile(r"Current page, step (?P<prefix>\S+)-\d+ (?P<phase>warmup|measured) (?P<k>\d+)\.")


class ImageCheck(BaseModel):
    """What the image store and the records hold after a run."""

    calls: int  # call lines read
    distinct_sent: int  # distinct screenshots those calls carried
    files: int  # files in images/
    problems: list[str]  # the first few calls or files that are wrong

    @property
    def ok(self) -> bool:
        return not self.problems and self.files == self.distinct_sent

    @property
    def summary(self) -> str:
        verdict = "every call refers to the screenshot it carried" if self.ok else f"PROBLEMS: {self.problems}"
        return (f"{self.calls:,} call lines, {self.distinct_sent:,} distinct screenshots sent, {self.files:,} files "
                f"in images/ (one per SHA-256); {verdict}")


def _at(record: dict[str, Any], pointer: str) -> Any:
    from components.core.images import pointer_parts

    node: Any = record
    for part in pointer_parts(pointer):
        node = node[int(part)] if isinstance(node, list) else node[part]
    return node


def check_images(out_dir: Path, template: ScreenshotPlan, warmup: int, calls: int) -> ImageCheck:
    """Check ``out_dir`` (the proxy's ``--out``) after cells run with ``template`` (seeded per cell)."""
    from components.core.trajectory import read_session

    @lru_cache(maxsize=None)
    def expected(prefix: str) -> tuple[list[int], list[str]]:
        plan = template.model_copy(update={"seed": prefix})
        indexes = image_indexes(plan, warmup + calls)
        return indexes, [hashlib.sha256(png).hexdigest() for png in screenshots(plan, max(indexes) + 1)]

    problems: list[str] = []
    sent: set[str] = set()
    lines = 0
    for path in sorted(out_dir.glob("*.jsonl")):
        for call in read_session(path):
            lines += 1
            record = call.model_dump(mode="json")
            text = record["request"]["messages"][-1]["content"][0]["text"]
            step = _STEP.search(text)
            if step is None or len(call.images) != 1:
                problems.append(f"{path.name} call {call.call_index}: {len(call.images)} images, text {text[:60]!r}")
                continue
            indexes, hashes = expected(step["prefix"])
            number = int(step["k"]) + (warmup if step["phase"] == "measured" else 0)
            want = hashes[indexes[number]]
            sent.add(want)
            ref = _at(record, call.images[0])
            if ref["sha256"] != want or ref["file"] != f"images/{want}.png":
                problems.append(f"{path.name} call {call.call_index}: refers to {ref['file']}, carried {want}")
    files = sorted((out_dir / "images").glob("*"))
    for file in files:
        if file.name != f"{hashlib.sha256(file.read_bytes()).hexdigest()}.png" or file.stem not in sent:
            problems.append(f"images/{file.name}: not named by its hash, or no call carried it")
    missing = sent - {file.stem for file in files}
    problems += [f"images/{sha}.png: missing" for sha in sorted(missing)]
    return ImageCheck(calls=lines, distinct_sent=len(sent), files=len(files), problems=problems[:5])
