"""What a user watches during `openforge run`: phases and rollouts live, then a summary.

Fed by the executor's node events (from many threads at once); rich's Progress does the
drawing and its own locking. Without a terminal (a CI log, ``nohup``, a pod's log) rich
draws nothing until the end, so the view also prints one plain line per phase change and
per finished rollout: the log shows progress while it happens.
"""

from __future__ import annotations

import json
import threading
import time
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING

from components.core.rollout_identity import OUTCOME_FILE
from pipelines.executor import NodeEvent, NodePhase
from pipelines.steps.prepare import GENERATE_NEXT

# rich's progress and tables, and the outcome's pydantic models, load where they are used:
# `openforge run` imports this module, and so does `openforge --help`.
if TYPE_CHECKING:
    from rich.console import Console
    from rich.progress import TaskID
    from rich.table import Table

_PHASE_WORDS = {
    NodePhase.RUNNING: "running",
    NodePhase.DAEMONED: "serving",
    NodePhase.SUCCEEDED: "done",
    NodePhase.FAILED: "[red]failed[/red]",
    NodePhase.SKIPPED: "skipped (already done)",
    NodePhase.OMITTED: "not run",
}
_FINAL = (NodePhase.SUCCEEDED, NodePhase.FAILED, NodePhase.SKIPPED, NodePhase.OMITTED)


@dataclass
class _FanOut:
    row: TaskID
    ok: int = 0
    failed: int = 0
    skipped: int = 0
    cut: int = 0  # stopped by the straggler cut: masked, not the agent's failure
    running: set[str] = field(default_factory=set)

    def status(self) -> str:
        text = f"ok {self.ok} · [red]failed {self.failed}[/red] · running {len(self.running)}"
        return text + (f" · cut {self.cut}" if self.cut else "") + (f" · resumed {self.skipped}" if self.skipped else "")


def _rollout_status(outputs: Mapping[str, Path]) -> str | None:
    """The recorded outcome's status of a rollout that ran (None: it wrote no outcome)."""
    for path in outputs.values():
        if path.name == OUTCOME_FILE:
            try:
                return str(json.loads(path.read_text()).get("status"))
            except (OSError, ValueError):
                return "unreadable outcome"
    return None


class RunView:
    """Live progress: one row per phase of the current iteration, with rollout counts."""

    def __init__(self, console: Console) -> None:
        from rich.progress import BarColumn, MofNCompleteColumn, Progress, SpinnerColumn, TextColumn, TimeElapsedColumn

        self.console = console
        self.progress = Progress(
            SpinnerColumn(),
            TextColumn("{task.description}"),
            BarColumn(bar_width=24),
            MofNCompleteColumn(),
            TextColumn("{task.fields[status]}"),
            TimeElapsedColumn(),
            console=console,
            transient=False,
            # Redrawn on a terminal only, 4 times a second: a log gets the plain lines, and each
            # redraw of the table costs the process that also runs the iteration's steps.
            auto_refresh=console.is_terminal,
            refresh_per_second=4,
        )
        self._lock = threading.Lock()
        self._rows: dict[str, TaskID] = {}
        self._fan_outs: dict[str, _FanOut] = {}
        self._iteration = 0
        self._plain = not console.is_terminal
        self._started: dict[str, float] = {}  # node -> when it started running (for the plain lines)

    def __enter__(self) -> "RunView":
        self.progress.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self.progress.stop()

    def start_iteration(self, iteration: int) -> None:
        with self._lock:
            self._iteration, self._rows, self._fan_outs = iteration, {}, {}

    def observe(self, event: NodeEvent) -> None:
        with self._lock:
            if self._plain:
                self._line(event)
            row = _row_name(event.node)
            if event.fan_out is not None:
                fan = self._fan_outs[row] = _FanOut(self._row(row, total=event.fan_out))
                self.progress.update(fan.row, status=fan.status())
            elif row in self._fan_outs and event.node.endswith(")"):  # a child: `generate.rollout(3)`
                self._child(self._fan_outs[row], event)
            else:
                self._phase(row, event)

    def _line(self, event: NodeEvent) -> None:
        from components.core.outcome import RolloutStatus

        if event.phase is NodePhase.RUNNING:
            self._started[event.node] = time.monotonic()
            if _row_name(event.node) in self._fan_outs and event.node.endswith(")"):
                return  # a rollout starting: its end says enough
        started = self._started.pop(event.node, None) if event.phase in _FINAL else None
        took = f" in {time.monotonic() - started:.0f} s" if started is not None else ""
        word = _PHASE_WORDS[event.phase].replace("[red]", "").replace("[/red]", "")
        status = _rollout_status(event.outputs) if event.phase is NodePhase.SUCCEEDED else None
        if status is not None:
            word = {RolloutStatus.OK.value: "ok", RolloutStatus.CUT.value: "cut (straggler)"}.get(status, f"failed ({status})")
        detail = f": {event.detail.splitlines()[0]}" if event.detail and event.phase is NodePhase.FAILED else ""
        fan = f" ({event.fan_out} rollouts)" if event.fan_out is not None else ""
        self.console.print(f"it {self._iteration} · {event.node}{fan}: {word}{took}{detail}", markup=False, highlight=False)

    def _row(self, name: str, total: int | None = None) -> TaskID:
        if name not in self._rows:
            self._rows[name] = self.progress.add_task(self._describe(name), total=total or 1, status="")
        elif total is not None:
            self.progress.update(self._rows[name], total=total)
        return self._rows[name]

    def _describe(self, name: str) -> str:
        # Overlapped iterations: generate-next runs the next iteration's rollouts while this one trains.
        if name.startswith(f"{GENERATE_NEXT}."):
            return f"it {self._iteration + 1} · {name.removeprefix(GENERATE_NEXT + '.')} (overlapped)"
        return f"it {self._iteration} · {name}"

    def _phase(self, name: str, event: NodeEvent) -> None:
        row = self._row(name)
        if name in self._fan_outs:  # the fan-out's own end: counts already shown
            return
        done = event.phase in _FINAL or event.phase is NodePhase.DAEMONED
        self.progress.update(row, status=_PHASE_WORDS[event.phase], completed=1 if done else 0)

    def _child(self, fan: _FanOut, event: NodeEvent) -> None:
        from components.core.outcome import RolloutStatus

        if event.phase is NodePhase.RUNNING:
            fan.running.add(event.node)
        elif event.phase in _FINAL:
            fan.running.discard(event.node)
            # An omitted child never ran (or was stopped with the run): no count moves.
            if event.phase is not NodePhase.OMITTED:
                # A rollout that ran, but whose recorded outcome is not ``ok``, failed (harness or verifier trouble).
                status = _rollout_status(event.outputs)
                if event.phase is NodePhase.SKIPPED:
                    fan.skipped += 1
                elif status == RolloutStatus.CUT.value:
                    fan.cut += 1
                elif event.phase is NodePhase.FAILED or (status is not None and status != RolloutStatus.OK.value):
                    fan.failed += 1
                else:
                    fan.ok += 1
                self.progress.advance(fan.row)
        self.progress.update(fan.row, status=fan.status())


def _row_name(node: str) -> str:
    """A node's row: its path in the workflow without the DAG it ran in, unless that is
    generate-next (the next iteration's engine and rollouts, shown apart), and without a
    fan-out child's index."""
    name = node.split("(", 1)[0]
    return name if name.startswith(f"{GENERATE_NEXT}.") else name.rsplit(".", 1)[-1]


def summary_table(logged: Mapping[int, Mapping[str, float]], samples_per_task: int, times: Mapping[int, float]) -> Table:
    """One row per iteration: reward, pass@1/pass@k, rollouts ok/failed, trained tokens, loss and wall time."""
    from rich.table import Table

    from components.core.outcome import RolloutStatus
    from components.core.tracking import mlflow_metric_name

    pass_k = next(
        (mlflow_metric_name(n) for n in ("pass@k", f"pass@{samples_per_task}") if any(mlflow_metric_name(n) in v for v in logged.values())),
        mlflow_metric_name("pass@k"),
    )
    # Headers short enough for an 80-column terminal; the caption says what they hold.
    table = Table(
        title="Iterations",
        caption="reward: mean over rollouts · ok/failed: rollouts · trained: sampled tokens the update learned from",
    )
    cut_key = mlflow_metric_name(f"rollouts/{RolloutStatus.CUT.value}")
    # A column only for runs with a straggler cut: cut rollouts are masked, not the agent's failures.
    cuts = any(values.get(cut_key) for values in logged.values())
    columns = ("it", "reward", "pass@1", f"pass@{samples_per_task}", "ok", "failed", *(("cut",) if cuts else ()), "trained", "loss", "time")
    for column in columns:
        table.add_column(column, justify="right")
    skipped = (RolloutStatus.OK, RolloutStatus.CUT)
    failed_keys = [mlflow_metric_name(f"rollouts/{s.value}") for s in RolloutStatus if s not in skipped]
    for iteration, values in logged.items():
        def show(key: str, fmt: str = "{:.3f}") -> str:
            return fmt.format(values[key]) if key in values else "-"

        failed = sum(values.get(k, 0.0) for k in failed_keys)
        seconds = times.get(iteration, values.get("time/iteration_s"))
        table.add_row(
            str(iteration),
            show("reward/mean"),
            show(mlflow_metric_name("pass@1")),
            show(pass_k),
            show(mlflow_metric_name(f"rollouts/{RolloutStatus.OK.value}"), "{:.0f}"),
            f"{failed:.0f}",
            *((show(cut_key, "{:.0f}"),) if cuts else ()),
            show("batch/trained_tokens", "{:,.0f}"),  # 0: the iteration trained nothing (allow_empty_update)
            show("train/loss", "{:.3g}"),  # GRPO losses are often tiny: keep their magnitude
            f"{seconds:.0f}s" if seconds is not None else "-",
        )
    return table


def rise_line(logged: Mapping[int, Mapping[str, float]]) -> str:
    """The closing table's last line: whether pass@1 rose from the first iteration to the last.

    It says so plainly when it did not, so that a run that learned nothing does not pass for
    one that did."""
    from components.core.tracking import mlflow_metric_name

    key = mlflow_metric_name("pass@1")
    rates = {iteration: values[key] for iteration, values in sorted(logged.items()) if key in values}
    if len(rates) < 2:
        return "One iteration with a pass rate: nothing to compare it with yet."
    (first, a), (last, b) = next(iter(rates.items())), list(rates.items())[-1]
    figures = f"{a:.3f} at iteration {first}, {b:.3f} at iteration {last} ({b - a:+.3f})"
    return f"pass@1 rose: {figures}." if b > a else f"pass@1 did not rise in this run: {figures}."

