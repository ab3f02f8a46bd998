"""The viewer's pages as plain server-rendered HTML: no JavaScript, no build step, so a
fresh machine serves them offline and a test reads them as text."""

from __future__ import annotations

from html import escape
from typing import Any

from components.viewer import links
from components.viewer._mlflow import RunLink

_STYLE = """
body{font:14px/1.45 system-ui,sans-serif;margin:1.5rem auto;max-width:72rem;padding:0 1rem;color:#1d1d1f}
a{color:#0b57d0;text-decoration:none}a:hover{text-decoration:underline}
table{border-collapse:collapse;margin:.5rem 0 1rem}td,th{border-bottom:1px solid #ddd;padding:.25rem .6rem;text-align:left}
.msg{border:1px solid #ddd;border-radius:6px;margin:.6rem 0;padding:.5rem .8rem;white-space:pre-wrap;word-break:break-word}
.role{font-weight:600;text-transform:uppercase;font-size:11px;color:#555}
.assistant{background:#f3f8ff}.tool{background:#f7f7f7}.system{background:#fffbea}
.call{color:#555;font-size:12px}.pass{color:#137333}.fail{color:#b3261e}
.tokens{font:12px/1.8 ui-monospace,monospace;white-space:pre-wrap;word-break:break-all}
.t-prompt{color:#777}.t-context{background:#e8eef7}.t-trained{background:#c7f0d2}
img.shot{max-width:100%;border:1px solid #ccc;margin:.3rem 0}
"""


def page(title: str, crumbs: list[tuple[str, str]], body: str) -> str:
    trail = " / ".join(f'<a href="{escape(href)}">{escape(text)}</a>' for text, href in crumbs)
    return (
        f"<!doctype html><html><head><meta charset='utf-8'><title>{escape(title)} · OpenForge</title>"
        f"<style>{_STYLE}</style></head><body><nav>{trail}</nav><h1>{escape(title)}</h1>{body}</body></html>"
    )


def table(header: list[str], rows: list[list[str]]) -> str:
    """``rows`` hold HTML already escaped by the caller."""
    head = "".join(f"<th>{escape(h)}</th>" for h in header)
    body = "".join("<tr>" + "".join(f"<td>{cell}</td>" for cell in row) + "</tr>" for row in rows)
    return f"<table><tr>{head}</tr>{body}</table>"


def runs_body(names: list[str]) -> str:
    if not names:
        return "<p>No run in this store yet: <code>openforge run CONFIG</code> makes one.</p>"
    return "<ul>" + "".join(f'<li><a href="{escape(links.run_path(n))}">{escape(n)}</a></li>' for n in names) + "</ul>"


SHOWN_METRICS = ("pass@1", "reward/mean", "rollouts/total", "batch/trained_tokens", "train/loss")
_EVAL_COLUMNS = ("pass_rate", "reward_mean")


def run_body(
    name: str,
    summaries: list[tuple[int, dict[str, float]]],
    evaluations: list[tuple[str, list[int], dict[str, Any] | None]],
    mlflow: RunLink,
) -> str:
    """The run's iterations with their headline metrics, then its evaluations with their summaries."""
    rows = [
        [f'<a href="{escape(links.iteration_path(name, k))}">{k}</a>'] + [number(metrics.get(m)) for m in SHOWN_METRICS]
        for k, metrics in summaries
    ]
    body = table(["iteration", *SHOWN_METRICS], rows) if rows else "<p>No iteration planned yet.</p>"
    if evaluations:
        eval_rows = [
            [escape(eval_id)]
            + [" ".join(f'<a href="{escape(links.iteration_path(name, k, eval_id))}">{k}</a>' for k in ks) or "-"]
            + [escape(str((summary or {}).get("checkpoint", {}).get("requested", "-")))]
            + [number((summary or {}).get(column)) for column in _EVAL_COLUMNS]
            for eval_id, ks, summary in evaluations
        ]
        body += "<h2>Evaluations</h2>" + table(["evaluation", "iterations", "checkpoint", *_EVAL_COLUMNS], eval_rows)
    return body + f"<p>{mlflow.note}</p>"


def number(value: Any) -> str:
    if value is None:
        return "-"
    if isinstance(value, float) and not value.is_integer():
        return f"{value:.3f}"
    return str(int(value)) if isinstance(value, float) else escape(str(value))
