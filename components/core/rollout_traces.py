"""Each rollout of an iteration as an MLflow trace, so a user who lives in the MLflow UI sees
trajectories there too (docs/operations.md, "The trajectory viewer").

A trace per rollout, linked to the experiment's MLflow run and tagged with the rollout id
and iteration; its spans come from the recorded calls alone:

- the root (AGENT): the task's prompt in, the verdict out (reward, status, final answer);
- one LLM span per model call, at the time the proxy received it and as long as it took:
  the messages new since the previous call in, the answer out, token counts and the path
  (chat or tokens) as attributes;
- one TOOL span per tool call the model made, from the end of its call to the start of the
  next, with the tool's result as the harness sent it back.

Texts are cut at ``_TEXT_LIMIT`` characters and images named by their hash: a trace is a
summary to browse, the store keeps the records. Logging is idempotent per (iteration,
rollout): a rerun of the commit step adds only the traces MLflow lacks.
"""

from __future__ import annotations

import os
from dataclasses import dataclass, field
from typing import Any

from components.core.rollout_records import iteration_records
from components.core.storage import ArtifactStore, RunLayout
from components.core.trajectory import RecordedCall, chat_request

ROLLOUT_TAG = "openforge.rollout_id"
ITERATION_TAG = "openforge.iteration"
_TEXT_LIMIT = 4000


@dataclass
class SpanPlan:
    """One span to log: what MLflow's client takes, with times in nanoseconds."""

    name: str
    span_type: str
    start_ns: int
    end_ns: int
    inputs: Any = None
    outputs: Any = None
    attributes: dict[str, Any] = field(default_factory=dict)
    children: list["SpanPlan"] = field(default_factory=list)


def rollout_trace(rollout_id: str, calls: list[RecordedCall], outcome: dict[str, Any] | None) -> SpanPlan | None:
    """The span tree of one rollout; None when it made no call (nothing to show)."""
    calls = sorted(calls, key=lambda c: c.call_index)
    if not calls:
        return None
    spans, seen = [], 0
    for n, call in enumerate(calls):
        messages = chat_request(call).get("messages") or []
        start = int(call.started_at * 1e9)
        end = start + int(call.latency_ms * 1e6)
        answer = _answer(call)
        spans.append(
            SpanPlan(
                name=f"call {call.call_index}",
                span_type="LLM",
                start_ns=start,
                end_ns=end,
                inputs={"new_messages": [_brief(m) for m in messages[seen:]]},
                outputs=_brief(answer) if answer else {"error": call.error},
                attributes={
                    "prompt_tokens": len(call.prompt_token_ids),
                    "completion_tokens": len(call.completion_token_ids),
                    "latency_ms": call.latency_ms,
                    "path": call.provenance.path if call.provenance else "chat",
                    "policy_version": call.policy_version or "",
                    "finish_reason": call.finish_reason or "",
                },
            )
        )
        seen = len(messages)
        following = calls[n + 1] if n + 1 < len(calls) else None
        spans += _tool_spans(answer, end, following)
    first, last = spans[0].start_ns, max(s.end_ns for s in spans)
    outcome = outcome or {}
    first_messages = chat_request(calls[0]).get("messages") or []
    return SpanPlan(
        name=f"rollout {rollout_id}",
        span_type="AGENT",
        start_ns=first,
        end_ns=last,
        inputs={"task": outcome.get("task_id"), "prompt": _text(_first_user(first_messages))},
        outputs={k: outcome.get(k) for k in ("status", "passed", "reward", "final_answer")},
        attributes={
            "calls": len(calls),
            "prompt_tokens": sum(len(c.prompt_token_ids) for c in calls),
            "completion_tokens": sum(len(c.completion_token_ids) for c in calls),
            "reward": outcome.get("reward"),
            "status": outcome.get("status"),
        },
        children=spans,
    )


def iteration_traces(store: ArtifactStore, layout: RunLayout, iteration: int) -> tuple[dict[str, SpanPlan], dict[str, str]]:
    """The trace of every rollout the iteration's plan names that recorded a call, and why
    each rollout whose records cannot be read has none (the records stay as they are)."""
    traces, unreadable = {}, {}
    for records in iteration_records(store, layout, iteration):
        if records.problem is not None:
            unreadable[records.rollout_id] = records.problem
            continue
        trace = rollout_trace(records.rollout_id, records.calls, records.outcome or {"task_id": records.task_id})
        if trace is not None:
            traces[records.rollout_id] = trace
    return traces, unreadable


def log_rollout_traces(client: Any, experiment_id: str, run_id: str, iteration: int, traces: dict[str, SpanPlan]) -> int:
    """Log the rollouts' traces MLflow lacks for ``iteration``; how many were logged."""
    import mlflow

    # Exported as they end, not by a background queue the step's exit could cut short.
    os.environ["MLFLOW_ENABLE_ASYNC_TRACE_LOGGING"] = "false"
    mlflow.set_tracking_uri(client.tracking_uri)
    have = _logged_rollouts(client, experiment_id, run_id, iteration)
    logged = 0
    for rollout_id, plan in sorted(traces.items()):
        if rollout_id in have:
            continue
        tags = {ROLLOUT_TAG: rollout_id, ITERATION_TAG: str(iteration)}
        root = client.start_trace(
            plan.name, span_type=plan.span_type, inputs=plan.inputs, attributes=plan.attributes, tags=tags,
            experiment_id=experiment_id, start_time_ns=plan.start_ns, run_id=run_id,
        )  # fmt: skip
        for child in plan.children:
            span = client.start_span(
                child.name, trace_id=root.trace_id, parent_id=root.span_id, span_type=child.span_type,
                inputs=child.inputs, attributes=child.attributes, start_time_ns=child.start_ns,
            )  # fmt: skip
            client.end_span(root.trace_id, span.span_id, outputs=child.outputs, end_time_ns=child.end_ns)
        client.end_trace(root.trace_id, outputs=plan.outputs, end_time_ns=plan.end_ns)
        logged += 1
    return logged


def _logged_rollouts(client: Any, experiment_id: str, run_id: str, iteration: int) -> set[str]:
    found, token = set(), None
    while True:
        page = client.search_traces(
            locations=[experiment_id], run_id=run_id, filter_string=f"tag.`{ITERATION_TAG}` = '{iteration}'",
            max_results=500, page_token=token, include_spans=False,
        )  # fmt: skip
        found |= {t.info.tags.get(ROLLOUT_TAG) for t in page}
        token = page.token
        if not token:
            return found


def _tool_spans(answer: dict[str, Any] | None, start: int, following: RecordedCall | None) -> list[SpanPlan]:
    calls = (answer or {}).get("tool_calls") or []
    if not calls:
        return []
    end = int(following.started_at * 1e9) if following is not None else start
    results = {}
    for message in (chat_request(following).get("messages") or []) if following is not None else []:
        if isinstance(message, dict) and message.get("role") == "tool":
            results[message.get("tool_call_id")] = _text(message.get("content"))
    return [
        SpanPlan(
            name=f"tool {(call.get('function') or {}).get('name')}",
            span_type="TOOL",
            start_ns=start,
            end_ns=max(end, start),
            inputs={"arguments": _text((call.get("function") or {}).get("arguments"))},
            outputs={"result": results.get(call.get("id"), "(not sent back: the rollout ended)")},
        )
        for call in calls
        if isinstance(call, dict)
    ]


def _answer(call: RecordedCall) -> dict[str, Any] | None:
    choices = (call.response or {}).get("choices") if call.api == "chat.completions" else None
    message = choices[0].get("message") if isinstance(choices, list) and choices and isinstance(choices[0], dict) else None
    return message if isinstance(message, dict) else None


def _first_user(messages: list[Any]) -> Any:
    return next((m.get("content") for m in messages if isinstance(m, dict) and m.get("role") == "user"), "")


def _brief(message: dict[str, Any]) -> dict[str, Any]:
    """A message with its text cut and its images named."""
    brief = {"role": message.get("role"), "content": _text(message.get("content"))}
    if message.get("tool_calls"):
        brief["tool_calls"] = [
            {"name": (c.get("function") or {}).get("name"), "arguments": _text((c.get("function") or {}).get("arguments"))}
            for c in message["tool_calls"]
            if isinstance(c, dict)
        ]
    return brief


def _text(content: Any) -> str:
    if isinstance(content, list):
        parts = []
        for part in content:
            if isinstance(part, dict) and part.get("type") == "image_url":
                url = (part.get("image_url") or {}).get("url") if isinstance(part.get("image_url"), dict) else None
                parts.append(f"[image {url.get('sha256', '')[:12]}]" if isinstance(url, dict) else "[image]")
            elif isinstance(part, dict):
                parts.append(str(part.get("text", "")))
        content = "\n".join(parts)
    text = content if isinstance(content, str) else ("" if content is None else str(content))
    return text if len(text) <= _TEXT_LIMIT else text[:_TEXT_LIMIT] + f"... ({len(text)} characters)"
