"""Does the quickstart show learning? `examples/quickstart.yaml` as shipped, over 20 seeds,
against the same 20 seeds with shuffled rewards.

    .venv/bin/python benchmarks/bench_quickstart.py             # the `bench-quickstart` make target
    .venv/bin/python benchmarks/bench_quickstart.py --render    # only re-render from the stored results

Each seed runs the quickstart twice, each time in a fresh store under .bench/quickstart/:
the real run, and a control whose train step learns from rewards permuted within each
group (``algorithm.shuffle_rewards``). A seed sets the run's ``seed`` and
``model.tiny_seed``. Each run's graded rollouts are stored under
benchmarks/results/quickstart/ the moment it ends, so the benchmark resumes where it
stopped and can span sessions. The "Quickstart over 20 seeds" section of
docs/benchmarks.md and the README's quote are rendered from those files alone.

The bars: the last iteration's pass rate is above the first's in at least 18 of the 20
real runs, with a mean rise of at least 0.2, and in at most 10 of the 20 controls. Exits 1
when a bar fails, 2 while seeds are missing.
"""

from __future__ import annotations

import sys
from dataclasses import dataclass
from pathlib import Path

if __package__ in (None, ""):  # run as a script: make the repository importable
    sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from benchmarks.doc_sections import DOC, REPO, replace_marked, write_section
from benchmarks.pipeline_runs import config_summary, decisions_text
from benchmarks.seeds.report import mean_or_none, provenance, rises, seed_table
from benchmarks.seeds.results import Arm, SeedRun, stored_runs
from benchmarks.seeds.runs import log_line

SECTION = "Quickstart over 20 seeds"
CONFIG = REPO / "examples" / "quickstart.yaml"
RESULTS = REPO / "benchmarks" / "results" / "quickstart"
README = REPO / "README.md"
MARKED = "bench-quickstart"  # the README's block this benchmark writes
SEEDS = 20
RISING_AT_LEAST = 18  # real runs whose last pass rate beats their first
MEAN_RISE = 0.2
CONTROL_RISING_AT_MOST = 10
COMMAND = ".venv/bin/python benchmarks/bench_quickstart.py"


@dataclass(frozen=True)
class QuickstartVerdict:
    seeds: int  # the seeds the bars ask for
    real: list[float]  # each stored seed's rise
    control: list[float]

    @property
    def complete(self) -> bool:
        return len(self.real) >= self.seeds and len(self.control) >= self.seeds

    @property
    def real_rising(self) -> int:
        return sum(r > 0 for r in self.real)

    @property
    def control_rising(self) -> int:
        return sum(r > 0 for r in self.control)

    @property
    def mean_rise(self) -> float | None:
        return mean_or_none(self.real)

    @property
    def ok(self) -> bool:
        mean = self.mean_rise
        return (
            self.complete
            and self.real_rising >= RISING_AT_LEAST * self.seeds / SEEDS
            and mean is not None
            and mean >= MEAN_RISE
            and self.control_rising <= CONTROL_RISING_AT_MOST * self.seeds / SEEDS
        )

    def mark(self) -> str:
        return "PASS" if self.ok else ("FAIL" if self.complete else "INCOMPLETE")

    def summary(self) -> str:
        """One sentence with both shares and the mean rise: the README quotes it."""
        mean = self.mean_rise
        mean_text = "-" if mean is None else f"{mean:+.3f}"
        control_mean = mean_or_none(self.control)
        control_text = "-" if control_mean is None else f"{control_mean:+.3f}"
        return (
            f"the pass rate of the last iteration beat the first's in {self.real_rising} of {len(self.real)} runs "
            f"(mean rise {mean_text}), and in {self.control_rising} of {len(self.control)} runs with shuffled "
            f"rewards (mean rise {control_text})"
        )

    def lines(self) -> list[str]:
        pending = "" if self.complete else f" ({self.seeds - min(len(self.real), len(self.control))} seed(s) still to run)"
        return [
            f"- **{self.mark()}**{pending}: {self.summary()}.",
            f"- Bars: at least {RISING_AT_LEAST} of {SEEDS} real runs rise, by {MEAN_RISE:.1f} on average; at most "
            f"{CONTROL_RISING_AT_MOST} of {SEEDS} controls rise. A run rises when its last iteration's pass rate "
            "is above its first's.",
        ]


def verdict(runs: dict[Arm, dict[int, SeedRun]], seeds: int = SEEDS) -> QuickstartVerdict:
    return QuickstartVerdict(seeds, rises(runs[Arm.REAL], "pass_rate"), rises(runs[Arm.CONTROL], "pass_rate"))


def section_markdown(runs: dict[Arm, dict[int, SeedRun]], seeds: int = SEEDS) -> str:
    from components.core.config import load_config

    judged, config = verdict(runs, seeds), load_config(CONFIG)
    lines = [
        f"## {SECTION}",
        "",
        f"Command: `{COMMAND}` (the `bench-quickstart` make target); rendered from `benchmarks/results/quickstart/`.",
        provenance(runs),
        "",
        f"Config: `examples/quickstart.yaml` as shipped: {config_summary(config, seeded=True)}; {decisions_text(config)}. "
        "Each seed sets the run's `seed` and `model.tiny_seed`; the control learns from rewards shuffled within "
        "each group. The pass rate is the verifier's verdict over the iteration's graded rollouts.",
        "",
        *seed_table(runs, "pass_rate"),
        "",
        *judged.lines(),
    ]
    return "\n".join(lines) + "\n"


def readme_text(runs: dict[Arm, dict[int, SeedRun]], seeds: int = SEEDS) -> str:
    judged = verdict(runs, seeds)
    if not judged.real:
        return "No quickstart seed has been measured yet (`make bench-quickstart`)."
    return (
        f"Over {len(judged.real)} fresh runs of the quickstart with different seeds, {judged.summary()} "
        f"(`make bench-quickstart`, docs/benchmarks.md, \"{SECTION}\": {judged.mark()})."
    )


def render(doc: bool, seeds: int = SEEDS) -> int:
    runs = stored_runs(RESULTS)
    section = section_markdown(runs, seeds)
    print(section)
    if doc:
        write_section(SECTION, section)
        README.write_text(replace_marked(README.read_text(), MARKED, readme_text(runs, seeds)))
        log_line(f"wrote the {SECTION!r} section of {DOC} and the README's quote")
    judged = verdict(runs, seeds)
    return 0 if judged.ok else (1 if judged.complete else 2)


def main() -> None:
    from benchmarks.seeds.runs import seeded_main

    seeded_main(__doc__.splitlines()[0], CONFIG, RESULTS, REPO / ".bench" / "quickstart", SEEDS, render)


if __name__ == "__main__":
    main()
