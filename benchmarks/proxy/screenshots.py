"""Screenshot-carrying calls for the proxy benchmarks: what a browser agent sends.

Each call is a chat completion whose user message carries one PNG screenshot as a base64
data URL (browser-use's shape, docs/harnesses.md). The pixels are random bytes, so the PNG
cannot be compressed and its size is real (256x256 RGB: ~197 kB, ~263 kB as base64).
Most calls bring a new screenshot; a fraction repeat the previous call's, as the rollouts
of one task open on the same page and an agent's page often does not change between steps.

Everything is derived from a seed: the benchmark regenerates, after the run, exactly the
image each call carried, and checks the proxy's image store against it.
"""

from __future__ import annotations

import base64
import random
import struct
import zlib

import orjson
from pydantic import BaseModel

_PNG_SIGNATURE = b"\x89PNG\r\n\x1a\n"


class ScreenshotPlan(BaseModel):
    """What the screenshots of one load run look like; ``seed`` makes them distinct per run."""

    seed: str
    width: int = 256
    height: int = 256
    repeat_fraction: float = 0.25  # calls that resend the previous call's screenshot


def _chunk(kind: bytes, data: bytes) -> bytes:
    return struct.pack(">I", len(data)) + kind + data + struct.pack(">I", zlib.crc32(kind + data))


def png_screenshot(rng: random.Random, width: int, height: int) -> bytes:
    """An RGB PNG of random pixels: stored (level 0) deflate, since random bytes do not compress."""
    rows = b"".join(b"\x00" + rng.randbytes(width * 3) for _ in range(height))  # filter byte 0 per row
    header = struct.pack(">IIBBBBB", width, height, 8, 2, 0, 0, 0)
    return _PNG_SIGNATURE + _chunk(b"IHDR", header) + _chunk(b"IDAT", zlib.compress(rows, 0)) + _chunk(b"IEND", b"")


def image_indexes(plan: ScreenshotPlan, calls: int) -> list[int]:
    """For each call (warm-up first, then measured), which distinct screenshot it carries."""
    rng = random.Random(f"{plan.seed}:order")
    indexes, fresh = [], 0
    for call in range(calls):
        if call and rng.random() < plan.repeat_fraction:
            indexes.append(indexes[-1])
        else:
            indexes.append(fresh)
            fresh += 1
    return indexes


def screenshots(plan: ScreenshotPlan, count: int) -> list[bytes]:
    """The ``count`` distinct screenshots of a run, in order."""
    rng = random.Random(f"{plan.seed}:pixels")
    return [png_screenshot(rng, plan.width, plan.height) for _ in range(count)]


class ScreenshotBodies:
    """Request bodies for ``calls`` calls, built before the run so the client spends its time sending.

    Call ``i`` (warm-up calls first) carries screenshot ``image_indexes(plan, calls)[i]``
    and the text ``<tag>`` that makes every body unique (no call looks like a retry).
    """

    def __init__(self, plan: ScreenshotPlan, calls: int) -> None:
        self.indexes = image_indexes(plan, calls)
        urls = [b"data:image/png;base64," + base64.b64encode(png) for png in screenshots(plan, max(self.indexes) + 1)]
        self._urls = urls
        body = {
            "model": "bench-model",
            "max_tokens": 8,
            "temperature": 0.7,
            "messages": [
                {"role": "system", "content": "You are a browser agent. Reply with the next action as JSON."},
                {
                    "role": "user",
                    "content": [
                        {"type": "text", "text": "Current page, step @@. What next?"},
                        {"type": "image_url", "image_url": {"url": "##"}},
                    ],
                },
            ],
        }
        head, rest = orjson.dumps(body).split(b"@@")
        self._head, (self._middle, self._tail) = head, rest.split(b"##")

    def get(self, call: int, tag: str) -> bytes:
        return self._head + tag.encode() + self._middle + self._urls[self.indexes[call]] + self._tail
