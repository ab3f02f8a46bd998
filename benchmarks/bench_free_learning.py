"""A policy that writes its own commands learns: record a teacher, SFT, then RL by free sampling.

    .venv/bin/python benchmarks/bench_free_learning.py              # the `bench-free-learning` make target
    .venv/bin/python benchmarks/bench_free_learning.py --seeds 1    # seed 0 only (the others resume later)
    .venv/bin/python benchmarks/bench_free_learning.py --render     # the doc sections from the stored results
    .venv/bin/python benchmarks/bench_free_learning.py --harness claude-code   # the same protocol in Claude Code

For each seed (the run's seed and ``model.tiny_seed`` both), runs examples/cold-start.yaml
as shipped through real mini-swe-agent (or, with --harness claude-code, through Claude Code
as shipped), the dev engine sampling freely (no candidates): the stages of
free_learning/seed_run.py, each stored in
benchmarks/results/free-learning/<harness>/seed-<s>.json as it ends, so the benchmark resumes seed by
seed and stage by stage, across sessions. Then renders the "Learning by free sampling"
section of docs/benchmarks.md from those files alone (one per harness with stored seeds),
and exits 1 unless mini-swe-agent's bars hold (free_learning/report.py); Claude Code's
figures are reported, not held to them. ``--fresh`` discards the stored results and stores first.
"""

from __future__ import annotations

import argparse
import os
import shutil
import sys
import time
from pathlib import Path

if __package__ in (None, ""):  # run as a script: make the repository importable
    sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from benchmarks.doc_sections import REPO, commit_text, machine_summary, now_text
from benchmarks.free_learning.results import BARRED_HARNESS, SeedResult, load_seed, results_folder
from benchmarks.free_learning.seed_run import HARNESSES, STAGES, run_seed

SEEDS = 3
WORKDIR = REPO / ".bench" / "free-learning"


def _log(message: str) -> None:
    print(f"[{time.strftime('%H:%M:%S')}] {message}", flush=True)


def run(seeds: int, workdir: Path, harness: str, doc: bool) -> int:
    from rich.console import Console

    os.chdir(REPO)  # the config's relative task folders resolve from the repository
    console = Console()
    for seed in range(seeds):
        root = workdir / f"seed-{seed}"
        stamps = commit_text(), now_text(), machine_summary()
        result = load_seed(seed, *stamps, folder=results_folder(harness))
        if result.stages and not all(result.has(stage) for stage in STAGES) and not root.exists():
            # Its remaining stages read checkpoints (SFT's, GRPO's) that only its lost store held.
            _log(f"seed {seed}: stored up to {list(result.stages)[-1]}, but its store {root} is gone: starting it over")
            result = SeedResult(seed=seed, commit=stamps[0], date=stamps[1], machine=stamps[2])
        run_seed(result, root, _log, console, harness)
    return render(doc, harness)


def render(doc: bool, harness: str = BARRED_HARNESS) -> int:
    """Write the section of every harness with stored seeds (mini-swe-agent's always); the exit
    code is ``harness``'s verdict, and only mini-swe-agent's bars can fail it."""
    from benchmarks.doc_sections import write_section
    from benchmarks.free_learning import report
    from benchmarks.free_learning.results import stored_seeds

    ok = True
    for name in HARNESSES:
        results = stored_seeds(results_folder(name))
        if not results and name != BARRED_HARNESS:
            continue
        section = report.section_markdown(results, name)
        print(section)
        if doc:
            write_section(report.title(name), section)
            _log(f"wrote the {report.title(name)!r} section of docs/benchmarks.md")
        if name == harness == BARRED_HARNESS:
            ok = report.verdict(results).ok
    return 0 if ok else 1


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--seeds", type=int, default=SEEDS, help=f"seeds 0..N-1 to run or resume (default {SEEDS})")
    parser.add_argument("--workdir", type=Path, default=WORKDIR, help="the seeds' stores, MLflow databases, executor folders")
    parser.add_argument("--render", action="store_true", help="only render the doc section from the stored results")
    parser.add_argument("--fresh", action="store_true", help="discard stored results and stores, start over")
    parser.add_argument("--harness", choices=list(HARNESSES), default=BARRED_HARNESS,
                        help=f"the harness to run the protocol in (default {BARRED_HARNESS}, the one with bars)")  # fmt: skip
    parser.add_argument("--no-doc", action="store_true", help="do not touch docs/benchmarks.md")
    args = parser.parse_args()
    workdir = args.workdir / args.harness
    if args.fresh:
        shutil.rmtree(results_folder(args.harness), ignore_errors=True)
        shutil.rmtree(workdir, ignore_errors=True)
    if args.render:
        sys.exit(render(not args.no_doc, args.harness))
    sys.exit(run(args.seeds, workdir.resolve(), args.harness, doc=not args.no_doc))


if __name__ == "__main__":
    main()
