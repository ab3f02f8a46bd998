"""The viewer's pages as plain server-rendered HTML: no JavaScript, no build step, so a
fresh machine serves them offline and a test reads them as text."""

from __future__ import annotations

import json
from html import escape
from typing import Any

from components.core.trajectory import RecordedCall
from components.viewer._reader import IterationView, TrainingView

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
    return "<ul>" + "".join(f'<li><a href="/runs/{escape(n)}">{escape(n)}</a></li>' for n in names) + "</ul>"


_SHOWN_METRICS = ("pass@1", "reward/mean", "rollouts/total", "batch/trained_tokens", "train/loss")


def run_body(name: str, summaries: list[tuple[int, dict[str, float]]], mlflow_url: str | None) -> str:
    rows = [
        [f'<a href="/runs/{escape(name)}/iterations/{k}">{k}</a>']
        + [_number(metrics.get(metric)) for metric in _SHOWN_METRICS]
        for k, metrics in summaries
    ]
    link = f'<p>Metrics in MLflow: <a href="{escape(mlflow_url)}">{escape(mlflow_url)}</a></p>' if mlflow_url else ""
    return table(["iteration", *_SHOWN_METRICS], rows) + link


def iteration_body(name: str, view: IterationView) -> str:
    parts = []
    for task_id, lines in sorted(view.by_task().items()):
        rewards = [line.reward for line in lines if line.reward is not None]
        passed = sum(1 for r in rewards if r > 0)
        rows = [
            [
                f'<a href="/runs/{escape(name)}/iterations/{view.iteration}/rollouts/{escape(line.rollout_id)}">'
                f"{escape(line.rollout_id)}</a>",
                _number(line.reward),
                escape(line.status),
                "yes" if line.usable else "no",
            ]
            for line in lines
        ]
        parts.append(
            f"<h2>{escape(task_id)}</h2><p>{passed} of {len(lines)} rewarded (pass@{len(lines)}: "
            f"{'yes' if passed else 'no'})</p>" + table(["rollout", "reward", "status", "usable"], rows)
        )
    metrics = table(["metric", "value"], [[escape(k), _number(v)] for k, v in sorted(view.metrics.items())])
    return "".join(parts) + "<h2>Metrics</h2>" + metrics


def rollout_body(
    name: str, iteration: int, rollout_id: str, calls: list[RecordedCall], outcome: dict[str, Any] | None
) -> str:
    base = f"/runs/{escape(name)}/iterations/{iteration}"
    head = ""
    if outcome is not None:
        verdict = "pass" if outcome.get("passed") else "fail"
        head = (
            f"<p class='{verdict}'>{escape(str(outcome.get('status')))}, reward {_number(outcome.get('reward'))}, "
            f"{outcome.get('num_calls', len(calls))} call(s)</p>"
            f"<details><summary>verifier output</summary><pre>{escape(outcome.get('verifier_output') or '')}</pre></details>"
        )
    head += f'<p><a href="{base}/rollouts/{escape(rollout_id)}/training">training view</a></p>'
    if not calls:
        return head + "<p>No recorded call.</p>"
    last = calls[-1]
    chat = (last.translation.upstream_request if last.translation else None) or last.request
    messages = [_message(m, base) for m in chat.get("messages") or []]
    answer = _answer(last)
    summary = table(
        ["call", "path", "prompt tokens", "completion tokens", "latency ms", "tags"],
        [
            [
                str(c.call_index),
                escape(c.provenance.path if c.provenance else "-"),
                str(len(c.prompt_token_ids or [])),
                str(len(c.completion_token_ids or [])),
                f"{c.latency_ms:.0f}",
                escape(", ".join(sorted(k for k, v in c.tags.items() if v)) or "-"),
            ]
            for c in calls
        ],
    )
    return head + "<h2>Calls</h2>" + summary + "<h2>Conversation (the last call)</h2>" + "".join(messages) + answer


def training_body(view: TrainingView) -> str:
    if not view.in_batch:
        return "<p>Not in this iteration's batch: its group had no signal, or the rollout was unusable.</p>"
    trained = sum(row.trained for row in view.rows)
    legend = (
        "<p><span class='t-prompt'>prompt</span> · <span class='t-context'>context (not sampled)</span> · "
        f"<span class='t-trained'>sampled and trained</span> · trained tokens: <b id='trained'>{trained}</b></p>"
    )
    rows = []
    for n, row in enumerate(view.rows):
        spans = "".join(_token_spans(row.tokens, row.roles, row.logprobs))
        rows.append(
            f"<h2>Row {n}</h2><p>advantage {row.advantage:+.4f} · {row.trained} trained tokens</p><div class='tokens'>{spans}</div>"
        )
    return legend + "".join(rows)


_RUN = 8  # a run of this many equal untrained tokens (an image's vision tokens) shows once, counted


def _token_spans(tokens: list[str], roles: list[str], logprobs: list[float | None]) -> list[str]:
    spans, i = [], 0
    while i < len(tokens):
        j = i
        while j < len(tokens) and tokens[j] == tokens[i] and roles[j] == roles[i] and roles[i] != "trained":
            j += 1
        if j - i >= _RUN:
            spans.append(f"<span class='t-{roles[i]}'>{escape(tokens[i])} ×{j - i}</span>")
            i = j
            continue
        lp = logprobs[i]
        title = f" title='logprob {lp:.4f}'" if lp is not None else ""
        spans.append(f"<span class='t-{roles[i]}'{title}>{escape(tokens[i])}</span>")
        i += 1
    return spans


def _message(message: dict[str, Any], base: str) -> str:
    role = str(message.get("role", "?"))
    content = message.get("content")
    parts = []
    if isinstance(content, str):
        parts.append(escape(content))
    for part in content if isinstance(content, list) else []:
        if isinstance(part, dict) and part.get("type") == "text":
            parts.append(escape(str(part.get("text", ""))))
        elif isinstance(part, dict) and part.get("type") == "image_url":
            url = (part.get("image_url") or {}).get("url") if isinstance(part.get("image_url"), dict) else None
            if isinstance(url, dict) and "file" in url:  # an image reference: the store holds the file
                parts.append(f"<img class='shot' alt='screenshot' src='{base}/images/{escape(url['file'].split('/')[-1])}'>")
            else:
                parts.append("[image]")
    for call in message.get("tool_calls") or []:
        function = call.get("function") or {}
        parts.append(f"<div class='call'>→ {escape(str(function.get('name')))}({escape(str(function.get('arguments')))})</div>")
    css = role if role in ("assistant", "tool", "system") else ""
    return f"<div class='msg {css}'><div class='role'>{escape(role)}</div>{''.join(parts)}</div>"


def _answer(call: RecordedCall) -> str:
    choices = (call.response or {}).get("choices") if isinstance(call.response, dict) else None
    message = choices[0].get("message") if choices and isinstance(choices[0], dict) else None
    if not isinstance(message, dict):
        shown = json.dumps(call.response)[:2000] if call.response is not None else str(call.error)
        return f"<div class='msg assistant'><div class='role'>answer</div>{escape(shown)}</div>"
    return _message({**message, "role": "assistant"}, "")


def _number(value: Any) -> str:
    if value is None:
        return "-"
    if isinstance(value, float) and not value.is_integer():
        return f"{value:.3f}"
    return str(int(value)) if isinstance(value, float) else escape(str(value))
