"""An iteration's page (a training iteration or an evaluation's), as a list of panels.

Each panel is one function of the page's ``IterationPage``; a new panel is one more
function in ``PANELS``. Tasks (each with its group of rollouts) are listed a page at a
time, so a 1,000-rollout iteration renders only the rows on screen.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from functools import cached_property
from html import escape

from components.viewer import links
from components.viewer._html import number, table
from components.viewer._mlflow import RunLink
from components.viewer._reader import IterationView, RolloutLine

TASKS_PER_PAGE = 20


@dataclass(frozen=True)
class IterationPage:
    name: str
    evaluation: str | None
    view: IterationView
    page: int  # 1-based page of tasks
    mlflow: RunLink

    @cached_property
    def groups(self) -> dict[str, list[RolloutLine]]:
        return self.view.by_task()

    @cached_property
    def task_ids(self) -> list[str]:
        return sorted(self.groups)

    @property
    def pages(self) -> int:
        return max(1, -(-len(self.task_ids) // TASKS_PER_PAGE))

    def path(self, page: int | None = None) -> str:
        base = links.iteration_path(self.name, self.view.iteration, self.evaluation)
        return f"{base}?page={page}" if page and page > 1 else base


def page_number(raw: str | None) -> int:
    """The ``page`` query parameter; ValueError naming the fix when it is not a positive number."""
    if raw is None:
        return 1
    if not raw.isdigit() or int(raw) < 1:
        raise ValueError(f"page={raw!r}: a page is a number from 1")
    return int(raw)


def summary_panel(page: IterationPage) -> str:
    lines = page.view.rollouts
    scored = [line for line in lines if line.reward is not None]
    rewarded = sum(1 for line in scored if line.reward > 0)
    return (
        f"<p id='summary'>{len(page.task_ids)} task(s), {len(lines)} rollout(s); {len(scored)} scored, "
        f"{rewarded} rewarded, {sum(1 for line in lines if line.usable)} usable</p>"
    )


def tasks_panel(page: IterationPage) -> str:
    """This page's tasks: a line each, then each task's group of rollouts."""
    if page.page > page.pages:
        raise ValueError(f"page {page.page}: this iteration has {page.pages} page(s) of tasks")
    shown = page.task_ids[(page.page - 1) * TASKS_PER_PAGE : page.page * TASKS_PER_PAGE]
    groups = page.groups
    overview = table(
        ["task", "rollouts", "rewarded", "mean reward", "pass@1", "pass@k"],
        [_task_row(task_id, groups[task_id], page.view.tasks.get(task_id, {})) for task_id in shown],
    )
    detail = "".join(_group(page, task_id, groups[task_id]) for task_id in shown)
    return _pager(page) + overview + detail + _pager(page)


def analytics_panel(page: IterationPage) -> str:
    """How the policy behaved (docs/analytics.md): each analytic's mean over the rollouts it
    applies to, per harness when there are several, and its change since iteration 0."""
    summary = page.view.analytics
    if summary is None:
        why = "an evaluation has none" if page.evaluation else "they are written when the iteration is committed"
        return f"<h2>Behaviour</h2><p id='analytics'>No behaviour analytics ({why}).</p>"
    harnesses = sorted(summary.by_harness) if len(summary.by_harness) > 1 else []
    rows = []
    for name, estimate in summary.overall.analytics.items():
        change = summary.change.get(name)
        since = "-" if change is None else number(change.difference) + (
            "" if change.low is None else f" [{number(change.low)}, {number(change.high)}]"
        )
        per_harness = [number(summary.by_harness[h].analytics[name].mean) for h in harnesses]
        rows.append([escape(name), number(estimate.mean), str(estimate.n), *per_harness, since])
    unreadable = f", {summary.overall.unreadable} unreadable" if summary.overall.unreadable else ""
    return (
        f"<h2>Behaviour</h2><p id='analytics'>{summary.overall.rollouts} rollout(s){unreadable}; each analytic's "
        "mean over the rollouts it applies to (n), and its change since iteration 0 with a 95% interval "
        "(docs/analytics.md)</p>"
        + table(["analytic", "mean", "n", *(escape(h) for h in harnesses), "change since 0"], rows)
    )


def metrics_panel(page: IterationPage) -> str:
    return "<h2>Metrics</h2>" + table(["metric", "value"], [[escape(k), number(v)] for k, v in sorted(page.view.metrics.items())])


def mlflow_panel(page: IterationPage) -> str:
    return f"<p>{page.mlflow.note}</p>"


PANELS: tuple[Callable[[IterationPage], str], ...] = (summary_panel, mlflow_panel, analytics_panel, tasks_panel, metrics_panel)


def iteration_body(page: IterationPage) -> str:
    return "".join(panel(page) for panel in PANELS)


def _task_row(task_id: str, lines: list[RolloutLine], stats: dict) -> list[str]:
    rewards = [line.reward for line in lines if line.reward is not None]
    mean = sum(rewards) / len(rewards) if rewards else None
    return [
        f'<a href="#task-{escape(task_id)}">{escape(task_id)}</a>',
        str(len(lines)),
        str(sum(1 for r in rewards if r > 0)),
        number(mean),
        number(stats.get("pass_at_1")),
        number(stats.get("pass_at_k")),
    ]


def _group(page: IterationPage, task_id: str, lines: list[RolloutLine]) -> str:
    rows = [
        [
            f'<a href="{escape(links.rollout_path(page.name, page.view.iteration, line.rollout_id, page.evaluation))}">'
            f"{escape(line.rollout_id)}</a>",
            number(line.reward),
            escape(line.status),
            "yes" if line.usable else "no",
        ]
        for line in lines
    ]
    group = escape(lines[0].group_id) if lines else ""
    return f"<h2 id='task-{escape(task_id)}'>{escape(task_id)}</h2><p>group {group}</p>" + table(
        ["rollout", "reward", "status", "usable"], rows
    )


def _pager(page: IterationPage) -> str:
    if page.pages == 1:
        return ""
    first = (page.page - 1) * TASKS_PER_PAGE + 1
    last = min(page.page * TASKS_PER_PAGE, len(page.task_ids))
    prev = f'<a class="prev-page" href="{escape(page.path(page.page - 1))}">← previous</a>' if page.page > 1 else ""
    nxt = f'<a class="next-page" href="{escape(page.path(page.page + 1))}">next →</a>' if page.page < page.pages else ""
    return f"<p class='pager'>tasks {first}–{last} of {len(page.task_ids)} (page {page.page} of {page.pages}) {prev} {nxt}</p>"
