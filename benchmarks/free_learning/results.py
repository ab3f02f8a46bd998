"""The raw results of `make bench-free-learning`: one JSON file per seed, stage by stage.

Each stage is written the moment it finishes, so the benchmark resumes where it stopped
(a seed, or a stage within one) and can span sessions. The doc section is rendered from
these files alone (report.py): a figure that is not in them cannot reach the doc.
"""

from __future__ import annotations

import json
import statistics
from pathlib import Path

from pydantic import BaseModel, Field

from benchmarks.doc_sections import REPO

RESULTS = REPO / "benchmarks" / "results" / "free-learning"
BARRED_HARNESS = "mini-swe-agent"  # the harness the bars are for; the others are reported


def results_folder(harness: str = BARRED_HARNESS) -> Path:
    """Where ``harness``'s seeds are stored: ``benchmarks/results/free-learning/<harness>/``."""
    return RESULTS / harness


class PassRates(BaseModel):
    """One set of graded rollouts: the verifier's verdict on each (rollout-id order)."""

    passed: list[bool]
    wall_s: float | None  # None for an iteration a run ran before it was resumed

    @property
    def rate(self) -> float | None:
        return statistics.fmean(self.passed) if self.passed else None


class RunCurve(BaseModel):
    """An RL run from the SFT checkpoint: each iteration's rollouts, sampled by the checkpoint before it."""

    iterations: list[PassRates]
    trained_tokens: list[float | None]  # batch/trained_tokens: sampled tokens only
    forced_tokens: list[float | None]  # batch/forced_tokens: must stay 0 without candidates
    wall_s: float

    @property
    def rise(self) -> float | None:
        first, last = self.iterations[0].rate, self.iterations[-1].rate
        return None if first is None or last is None else last - first


class SeedResult(BaseModel):
    seed: int  # the run's seed and model.tiny_seed both
    commit: str
    date: str
    machine: str | None = None  # doc_sections.machine_summary() where the seed started
    # A seed resumed at another commit: each stage that ran at one other than ``commit``, and that one.
    stage_commits: dict[str, str] = Field(default_factory=dict)
    stages: dict[str, dict] = Field(default_factory=dict)  # stage name -> its JSON, as it finished

    def has(self, stage: str) -> bool:
        return stage in self.stages

    def pass_rates(self, stage: str) -> PassRates:
        return PassRates.model_validate(self.stages[stage])

    def curve(self, stage: str) -> RunCurve:
        return RunCurve.model_validate(self.stages[stage])

    @property
    def wall_s(self) -> float:
        return sum(float(stage.get("wall_s") or 0.0) for stage in self.stages.values())


def seed_path(seed: int, folder: Path | None = None) -> Path:
    return (folder or results_folder()) / f"seed-{seed}.json"


def load_seed(seed: int, commit: str, date: str, machine: str, folder: Path | None = None) -> SeedResult:
    """The stored result of ``seed``, or a fresh one stamped with where and when it starts."""
    path = seed_path(seed, folder)
    if path.exists():
        return SeedResult.model_validate_json(path.read_text())
    return SeedResult(seed=seed, commit=commit, date=date, machine=machine)


def save_stage(result: SeedResult, stage: str, value: BaseModel, folder: Path | None = None) -> None:
    result.stages[stage] = json.loads(value.model_dump_json())
    path = seed_path(result.seed, folder)
    path.parent.mkdir(parents=True, exist_ok=True)
    tmp = path.with_suffix(".tmp")
    tmp.write_text(json.dumps(result.model_dump(mode="json"), indent=1) + "\n")
    tmp.replace(path)  # never a half-written file to resume from


def stored_seeds(folder: Path | None = None) -> list[SeedResult]:
    return sorted(
        (SeedResult.model_validate_json(p.read_text()) for p in (folder or results_folder()).glob("seed-*.json")),
        key=lambda r: r.seed,
    )
