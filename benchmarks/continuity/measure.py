"""Continuity of recorded sessions: the share of calls that extend the previous call's row.

The trainer's prefix merge (``components.trainer.rows.merge_calls``) decides, call by
call, whether a call's prompt starts with the row so far (prompt + sampled completion);
each call after a session's first either continues its row or breaks it. Continuity is
continued / (continued + broken), over the calls training keeps (side calls, failed
calls and superseded retries are left out, as the trainer leaves them out).
"""

from __future__ import annotations

from collections import Counter
from dataclasses import dataclass, field
from pathlib import Path

from components.core.trajectory import RecordedCall, read_sessions
from components.proxy import ProxyConfig, start_proxy
from components.trainer.rows import merge_calls, trainable_calls

from benchmarks.continuity.shapes import Driver


@dataclass
class Continuity:
    """One harness shape's sessions, measured with provenance on or off."""

    shape: str
    provenance: bool
    sessions: int = 0
    calls: int = 0  # recorded, side calls included
    continued: int = 0
    branches: Counter[str] = field(default_factory=Counter)  # calls that started a row of a known kind
    breaks: int = 0  # calls that started a row for no known reason
    token_path: int = 0  # calls sent to the engine as token ids
    chat_reasons: Counter[str] = field(default_factory=Counter)  # why the others took the chat path
    sampled_recorded: int = 0  # sampled tokens of the calls training keeps (not the engine's forced ones)
    sampled_in_rows: int = 0  # the tokens the merged rows train on: each of those once, when the merge loses none

    @property
    def broken(self) -> int:
        """Calls after a session's first that did not continue a row (branches and breaks)."""
        return self.breaks + sum(self.branches.values())

    @property
    def share(self) -> float:
        judged = self.continued + self.broken
        return self.continued / judged if judged else 1.0

    def add(self, session_id: str, calls: list[RecordedCall], temperature: float) -> None:
        rows, counts = merge_calls(session_id, calls, temperature)
        self.sessions += 1
        self.calls += len(calls)
        self.continued += counts.continuations
        self.breaks += counts.breaks
        self.branches.update({kind: n for kind, n in counts.branches.items() if n})
        self.sampled_in_rows += sum(row.sampled_tokens() for row in rows)
        # Rows train only on sampled tokens, so forced ones (scripted turns) are left out of both counts.
        self.sampled_recorded += sum(sum(c.sampled_mask()) for c in trainable_calls(calls))
        for call in calls:
            if call.provenance is not None and call.provenance.path == "tokens":
                self.token_path += 1
            elif call.provenance is not None:
                self.chat_reasons[call.provenance.reason or ""] += 1


def read_continuity(shape: str, provenance: bool, out: Path, temperature: float = 1.0) -> Continuity:
    """Continuity of every session file in ``out``."""
    result = Continuity(shape, provenance)
    for session_id, calls in read_sessions(out):
        result.add(session_id, calls, temperature)
    return result


async def run_shape(
    shape: str, driver: Driver, engine_url: str, out: Path, *, provenance: bool, sessions: int = 1, max_turns: int = 8
) -> Continuity:
    """Drive ``sessions`` sessions of one shape through a fresh training-mode proxy and measure them."""
    config = ProxyConfig(upstream=engine_url, out=out, port=0, training=True, token_provenance=provenance)
    proxy = await start_proxy(config)
    try:
        for index in range(sessions):
            await driver(proxy.url, f"{shape}-{index}", max_turns)
    finally:
        await proxy.stop()
    return read_continuity(shape, provenance, out)
