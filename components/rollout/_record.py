"""The outcome of a rollout as the runner fills it in, attempt by attempt."""

from __future__ import annotations

from dataclasses import dataclass, field

from components.core.outcome import Outcome, RolloutStatus
from components.rollout._process import tail


@dataclass
class Record:
    """The outcome as it is being filled in, step by step."""

    rollout_id: str
    task_id: str
    sample_index: int
    iteration: int
    status: RolloutStatus = RolloutStatus.OK
    reward: float | None = None
    passed: bool | None = None
    notes: list[str] = field(default_factory=list)
    harness_exit_code: int | None = None
    final_answer: str | None = None
    num_calls: int = 0
    verifier_output: str = ""
    extra: dict = field(default_factory=dict)

    def fail(self, status: RolloutStatus, note: str) -> None:
        # The first failure decides the status; later notes only add context.
        if self.status is RolloutStatus.OK:
            self.status = status
        self.notes.append(note)

    def reclassify(self, status: RolloutStatus, note: str) -> None:
        """What the recorded calls showed overrides the harness's own failure."""
        self.status = status
        self.notes.append(note)

    def retry(self, attempt: int) -> None:
        """Forget attempt ``attempt``'s verdict before the next one; keep a note of why it failed."""
        # The full details stay in extra.failed_attempts; the summary keeps `details` readable.
        note = f"attempt {attempt} failed on infrastructure ({tail('; '.join(self.notes), 500)}); retried"
        self.extra.setdefault("failed_attempts", []).append(
            {"attempt": attempt, "status": self.status.value, "details": "; ".join(self.notes)}
        )
        self.status, self.reward, self.passed = RolloutStatus.OK, None, None
        self.harness_exit_code, self.final_answer, self.verifier_output = None, None, ""
        self.notes = [note]

    def outcome(self, duration_s: float) -> Outcome:
        ok = self.status is RolloutStatus.OK
        return Outcome(
            rollout_id=self.rollout_id,
            task_id=self.task_id,
            sample_index=self.sample_index,
            iteration=self.iteration,
            status=self.status,
            reward=self.reward if ok else None,
            passed=self.passed if ok else None,
            details="; ".join(self.notes),
            harness_exit_code=self.harness_exit_code,
            final_answer=self.final_answer,
            num_calls=self.num_calls,
            duration_s=duration_s,
            verifier_output=self.verifier_output,
            extra=self.extra,
        )
