"""Validate the learnability probe: does its prediction order the examples like their measured gains?

    .venv/bin/python benchmarks/bench_probe.py                 # the `bench-probe` make target
    .venv/bin/python benchmarks/bench_probe.py --only codex --no-doc

Runs `openforge probe` (pipelines/probe.py) on each config the learning benchmarks trained:
examples/learning.yaml (`bench-learning`), codex and claude-code (`bench-harness-learning`)
and cua-agent on examples/desktop.yaml (`bench-gui-learning`), with the seed, samples per
task and seeded sampling of those benchmarks' iteration 0, on the untrained policy, each in
a fresh store under .bench/probe/<name>/. It reads each benchmark's measured gain from its
own section of docs/benchmarks.md (the first "rises clearly" line: last iterations vs first)
and reports each probe's prediction beside it, with the Spearman rank correlation of the
gains with the mixed-group share (the prediction) and with the trainable-token share. Four
points are a weak test: the section says so, and what the correlation would need to mean
anything. Rewrites the "Learnability probe" section of docs/benchmarks.md.
"""

from __future__ import annotations

import argparse
import os
import re
import sys
import time
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

if __package__ in (None, ""):  # run as a script: make the repository importable
    sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from benchmarks import bench_harness_learning as harness_bench
from benchmarks import bench_learning as learning_bench
from benchmarks.doc_sections import DOC, REPO, commit_text, machine_summary, now_text, write_section
from benchmarks.harness_learning.report import section_title
from benchmarks.harness_learning.report import window as harness_window
from benchmarks.pipeline_runs import bench_config
from benchmarks.seeds.results import Arm, SeedRun, stored_runs
from components.trainer.learnability import ProbeReport

SECTION = "Learnability probe"


@dataclass(frozen=True)
class Example:
    name: str
    config: Path
    overrides: dict  # what the benchmark that measured the gain set for its run
    section: str  # that benchmark's section of docs/benchmarks.md
    target: str


def _harness(name: str, target: str) -> Example:
    # Iteration 0 of bench_harness_learning.py: its samples per task and seeded sampling.
    overrides = {"rollout.samples_per_task": harness_bench.samples_per_task(name), "rollout.seeded_sampling": True}
    config = REPO / "examples" / f"{harness_bench.EXAMPLES[name]}.yaml"
    return Example(name, config, overrides, section_title(name), target)


EXAMPLES = (
    Example("learning", learning_bench.CONFIG, {}, learning_bench.SECTION, "bench-learning"),
    _harness("codex", "bench-harness-learning"),
    _harness("claude-code", "bench-harness-learning"),
    _harness("cua-agent", "bench-gui-learning"),
)

_GAIN = re.compile(r"rises clearly .*?: (-?\d\.\d+) -> (-?\d\.\d+), gain ([+-]\d\.\d+)")
_PROVENANCE = re.compile(r"at commit (\w+)[^.]*\. Date: ([^.]+)\.")


@dataclass(frozen=True)
class Measured:
    first: float
    last: float
    gain: float
    quantity: str  # "pass rate" or "mean reward"
    made: str  # the commit and date of the section, when it names them


def measured_gain(doc: str, title: str) -> Measured:
    """The gain a learning benchmark measured, from its section's verdict line (the real run's, not the control's)."""
    start = doc.find(f"\n## {title}\n")
    if start < 0:
        raise LookupError(f"{DOC} has no section {title!r}: run its benchmark first")
    end = doc.find("\n## ", start + 1)
    section = doc[start : end if end >= 0 else len(doc)]
    for line in section.splitlines():
        found = _GAIN.search(line)
        if found and "control" not in line:
            quantity = "pass rate" if "pass rate rises" in line else "mean reward"
            made = _PROVENANCE.search(section)
            when = f"{made.group(1)}, {made.group(2)}" if made else section.split("Date: ", 1)[-1].split(".", 1)[0]
            return Measured(float(found.group(1)), float(found.group(2)), float(found.group(3)), quantity, when)
    raise LookupError(f"section {title!r} of {DOC} has no 'rises clearly' verdict line to read the gain from")


def stored_gain(runs: dict[Arm, dict[int, SeedRun]], window: Callable[[int], int], quantity: str) -> Measured:
    """A seeded benchmark's gain from its stored results: the real runs' rollouts of every seed
    pooled, the first ``window(iterations)`` iterations against the last."""
    real = list(runs[Arm.REAL].values())
    if not real:
        raise LookupError("no run of it is stored under benchmarks/results/: run its benchmark first")
    value = (lambda r: r.reward) if quantity == "mean reward" else (lambda r: float(r.passed))  # noqa: E731
    first, last = [], []
    for run in real:
        size = window(len(run.iterations))
        first += [value(r) for point in run.iterations[:size] for r in point.rollouts]
        last += [value(r) for point in run.iterations[-size:] for r in point.rollouts]
    a, b = sum(first) / len(first), sum(last) / len(last)
    made = f"{', '.join(sorted({run.commit for run in real}))}, {min(run.date for run in real)}"
    return Measured(round(a, 3), round(b, 3), round(b - a, 3), quantity, f"{made}, {len(real)} seeds")


def gain_of(example: Example, doc: str) -> Measured:
    """What the example's benchmark measured: its stored results (bench-learning's always; a
    harness's once it has any), else the verdict line of its section of the page."""
    if example.section == learning_bench.SECTION:
        try:
            return stored_gain(stored_runs(learning_bench.RESULTS), learning_bench.window, "mean reward")
        except LookupError:
            raise LookupError(f"no bench-learning run is stored in {learning_bench.RESULTS}: run `make bench-learning` first") from None
    runs = stored_runs(harness_bench.results_folder(example.name))
    if runs[Arm.REAL]:
        return stored_gain(runs, harness_window, "pass rate")
    return measured_gain(doc, example.section)


def spearman(xs: list[float], ys: list[float]) -> float | None:
    """Spearman's rho with ties at their average rank; None when either side is constant or too short."""
    from scipy.stats import spearmanr

    if len(xs) < 3 or len(set(xs)) < 2 or len(set(ys)) < 2:
        return None
    return float(spearmanr(xs, ys).statistic)


def discordant(rows: list[tuple]) -> list[str]:
    """Each pair of examples the prediction orders against their measured gains (ties in either: not counted)."""
    out = []
    for i, (a, gain_a, report_a, _) in enumerate(rows):
        for b, gain_b, report_b, _ in rows[i + 1 :]:
            said = (report_a.findings.mixed_share or 0.0) - (report_b.findings.mixed_share or 0.0)
            seen = gain_a.gain - gain_b.gain
            if said * seen < 0:
                higher, lower = (a, b) if said > 0 else (b, a)
                out.append(f"the probe rates {higher.name} above {lower.name}; {lower.name}'s measured gain is larger")
    return out


def _log(message: str) -> None:
    print(f"[{time.strftime('%H:%M:%S')}] {message}", flush=True)


_PROBE_ID = "bench"
_SECONDS = "probe-seconds.txt"  # beside each example's store: the probe's wall time, for --reuse


def probe_example(example: Example, workdir: Path) -> tuple[ProbeReport, float]:
    """The probe of one example's untrained policy in a fresh store; its report and wall time."""
    import shutil

    from pipelines.probe import probe_config, probe_policy

    root = workdir / example.name
    shutil.rmtree(root, ignore_errors=True)
    root.mkdir(parents=True)
    config = bench_config(example.config, root, example.overrides)
    started = time.monotonic()
    # A fresh store has nothing committed: `latest` probes the configured model, iteration 0's policy.
    report = probe_policy(probe_config(config, probe_id=_PROBE_ID), workdir=root)
    seconds = time.monotonic() - started
    (root / _SECONDS).write_text(f"{seconds:.1f}\n")
    return report, seconds


def stored_probe(example: Example, workdir: Path) -> tuple[ProbeReport, float | None]:
    """The report an earlier run of this benchmark stored for ``example`` (``--reuse``), and its
    wall time when that run recorded it."""
    from components.core.storage import RunLayout, open_store

    root = workdir / example.name
    config = bench_config(example.config, root, example.overrides)
    key = RunLayout(config.name, _PROBE_ID).probe_report()
    store = open_store(config.storage.uri)
    if not store.exists(key):
        raise FileNotFoundError(f"{store.root}/{key} is missing: run the benchmark without --reuse first")
    seconds = root / _SECONDS
    return ProbeReport.model_validate_json(store.get_bytes(key)), float(seconds.read_text()) if seconds.exists() else None


def _stored_when(workdir: Path, names: list[str]) -> str:
    """When the reused probes were made: their reports' modification times (the stores are local folders)."""
    import datetime as dt

    times = sorted(p.stat().st_mtime for name in names for p in (workdir / name).glob("runs/*/evals/*/probe.json"))
    if not times:
        return "unknown"
    text = [dt.datetime.fromtimestamp(t).astimezone().strftime("%Y-%m-%d %H:%M %Z") for t in (times[0], times[-1])]
    return text[0] if text[0] == text[1] else f"{text[0]} to {text[1]}"


def _reward_mean(report: ProbeReport) -> str:
    rewards = [r for g in report.findings.tasks for r in g.rewards]
    return f"{sum(rewards) / len(rewards):.3f}" if rewards else "-"


def _share(value: float | None) -> str:
    return "-" if value is None else f"{value:.2f}"


def _rho(value: float | None) -> str:
    return "undefined (a constant column)" if value is None else f"{value:+.2f}"


def section_markdown(command: str, commit: str, date: str, rows: list[tuple], failed: dict[str, str]) -> str:
    """``rows``: (example, measured, report, seconds) per probe that ran; ``failed``: name -> why not."""
    head = ["example", "benchmark", "measured gain", "probe verdict", "mixed groups", "trainable tokens",
            "probe reward mean", "probe s"]  # fmt: skip
    lines = [
        f"## {SECTION}",
        "",
        f"Command: `{command}` (the `bench-probe` make target), at commit {commit}. Date: {date}. "
        f"Machine: {machine_summary()}.",
        "",
        "`openforge probe` (docs/operations.md, \"Learnability probe\") runs on the untrained policy of each config "
        "that a learning benchmark trained, with that benchmark's seed, samples per task and seeded sampling, so it "
        "sees what the benchmark's iteration 0 saw. Its prediction, the *mixed groups* share (groups whose rewards "
        "differ: the only ones GRPO learns from), should order the examples like the gain each benchmark measured "
        "(read from its own section here: last iterations vs first).",
        "",
        "| " + " | ".join(head) + " |",
        "|---|---|---:|---|---:|---:|---:|---:|",
    ]
    for example, measured, report, seconds in rows:
        found = report.findings
        cells = [
            f"`{example.config.relative_to(REPO)}` ({example.name})",
            f"`{example.target}` ({measured.made})",
            f"{measured.gain:+.3f} {measured.quantity} ({measured.first:.3f} -> {measured.last:.3f})",
            found.verdict,
            f"{_share(found.mixed_share)} ({found.group_kinds['mixed']}/{found.groups})",
            f"{_share(found.token_share)} ({found.trainable_tokens}/{found.sampled_tokens})",
            _reward_mean(report),
            "-" if seconds is None else f"{seconds:.0f}",
        ]
        lines.append("| " + " | ".join(cells) + " |")
    gains = [m.gain for _, m, _, _ in rows]
    mixed = [r.findings.mixed_share or 0.0 for _, _, r, _ in rows]
    tokens = [r.findings.token_share or 0.0 for _, _, r, _ in rows]
    lines += [
        "",
        f"- Spearman rank correlation over {len(rows)} examples, measured gain vs *mixed groups* (the prediction): "
        f"**{_rho(spearman(mixed, gains))}**; vs *trainable tokens*: {_rho(spearman(tokens, gains))}.",
    ]
    for quantity in sorted({m.quantity for _, m, _, _ in rows}):
        same = [row for row in rows if row[1].quantity == quantity]
        if 3 <= len(same) < len(rows):
            gains_q = [m.gain for _, m, _, _ in same]
            rho_mixed = spearman([r.findings.mixed_share or 0.0 for _, _, r, _ in same], gains_q)
            rho_tokens = spearman([r.findings.token_share or 0.0 for _, _, r, _ in same], gains_q)
            lines.append(
                f"- Over the {len(same)} examples whose gain is a {quantity} gain only (a cut made after seeing the "
                f"figure above): vs *mixed groups* {_rho(rho_mixed)}; vs *trainable tokens* {_rho(rho_tokens)}."
            )
    lines += [f"- Where the order fails: {pair}" for pair in discordant(rows)] or ["- The order holds for every pair."]
    lines += [f"- Not probed: {name}: {why}" for name, why in failed.items()]
    lines += [
        "",
        "*mixed groups* = share of tasks whose sampled rewards differ (how many of how many); *trainable tokens* = "
        "share of sampled completion tokens in those groups, by the trainer's own row rule (what the first update "
        "would train on); *probe reward mean* = mean verifier reward of the probe's usable rollouts (with seeded "
        "sampling, the harness examples draw what their benchmark's iteration 0 drew); *probe s* = the probe's wall time; *measured gain* = the benchmark's verdict "
        "line, with the commit and date of its section.",
        "",
        "How far this goes: with four examples, even a perfect order (rho = 1) happens by chance with "
        "probability 1/24 for one direction (with three, 1/6), so no correlation here is significant; and the gains are not in one "
        "unit: `examples/learning.yaml` has dense rewards and measures a mean-reward gain, the harness examples "
        "measure a pass-rate gain. Mixed groups say whether GRPO *can* learn from a draw, not how fast the reward "
        "will climb, which also depends on the learning rate, the epochs and how far the reward can move.",
    ]
    return "\n".join(lines) + "\n"


def run(names: list[str], workdir: Path, doc: bool, reuse: bool = False) -> int:
    os.chdir(REPO)  # the configs' relative task folders resolve from the repository
    date, commit = now_text(), commit_text()
    text = DOC.read_text()
    rows, failed = [], {}
    for example in (e for e in EXAMPLES if e.name in names):
        measured = gain_of(example, text)
        _log(f"{example.name}: probing {example.config.relative_to(REPO)} in {workdir / example.name}")
        try:
            report, seconds = stored_probe(example, workdir) if reuse else probe_example(example, workdir)
        except Exception as exc:  # one example that cannot run here must not cost the others' figures
            failed[example.name] = f"{type(exc).__name__}: {str(exc).splitlines()[0] if str(exc) else ''}"
            _log(f"{example.name}: the probe failed: {failed[example.name]}")
            continue
        found = report.findings
        _log(f"{example.name}: {found.verdict} (mixed {_share(found.mixed_share)}, tokens {_share(found.token_share)}); "
             f"measured gain {measured.gain:+.3f}")  # fmt: skip
        rows.append((example, measured, report, seconds))
    command = ".venv/bin/python benchmarks/bench_probe.py" + "".join(
        f" --only {n}" for n in names if list(names) != [e.name for e in EXAMPLES]
    ) + (" --reuse" if reuse else "")
    if reuse:
        date += f"; the probes reused were stored {_stored_when(workdir, names)}"
    section = section_markdown(command, commit, date, rows, failed)
    print(section)
    if doc:
        write_section(SECTION, section)
        _log(f"wrote the {SECTION!r} section of {DOC}")
    return 0 if rows and not failed else 1


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    names = [e.name for e in EXAMPLES]
    parser.add_argument("--only", action="append", choices=names, help="probe only this example, repeatable")
    parser.add_argument("--workdir", type=Path, default=REPO / ".bench" / "probe",
                        help="stores, MLflow databases and executor folders; each example's emptied first")  # fmt: skip
    parser.add_argument("--no-doc", action="store_true", help="do not touch docs/benchmarks.md")
    parser.add_argument("--reuse", action="store_true",
                        help="report the probes an earlier run stored in --workdir instead of running them again")  # fmt: skip
    args = parser.parse_args()
    sys.exit(run(args.only or names, args.workdir.resolve(), doc=not args.no_doc, reuse=args.reuse))


if __name__ == "__main__":
    main()
