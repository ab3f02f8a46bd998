"""A rollout's pages: its calls and conversation, and its training view (what the trainer saw)."""

from __future__ import annotations

import json
from html import escape
from typing import Any

from components.core.trajectory import RecordedCall, attempt_of, latest_attempt
from components.trainer.rows import place_calls, trainable_calls
from components.viewer import links
from components.viewer._html import number, table
from components.viewer._reader import TrainingView


def rollout_body(
    name: str, iteration: int, rollout_id: str, calls: list[RecordedCall], outcome: dict[str, Any] | None,
    evaluation: str | None = None,
) -> str:
    images = links.image_path(name, iteration, "", evaluation)  # + a stored image's file name
    head = ""
    if outcome is not None:
        verdict = "pass" if outcome.get("passed") else "fail"
        head = (
            f"<p class='{verdict}'>{escape(str(outcome.get('status')))}, reward {number(outcome.get('reward'))}, "
            f"{outcome.get('num_calls', len(calls))} call(s)</p>"
            f"<details><summary>verifier output</summary><pre>{escape(outcome.get('verifier_output') or '')}</pre></details>"
        )
    if evaluation is None:  # an evaluation trains nothing: no batch to show
        head += f'<p><a id="training-link" href="{escape(links.training_path(name, iteration, rollout_id))}">training view</a></p>'
    if not calls:
        return head + "<p>No recorded call.</p>"
    roles = _roles(calls)
    folded = [c for c in calls if roles[_key(c)].startswith(_FOLDED)]
    shown = [c for c in calls if not roles[_key(c)].startswith(_FOLDED)]
    turns = trainable_calls(calls)
    last = turns[-1] if turns else calls[-1]  # the conversation as the policy last saw it, not a side call's
    chat = (last.translation.upstream_request if last.translation else None) or last.request
    messages = [_message(m, images) for m in chat.get("messages") or []]
    header = ["call", "role", "path", "prompt tokens", "completion tokens", "latency ms", "tags"]
    summary = table(header, [_call_row(c, roles) for c in shown])
    if folded:
        summary += (
            f"<details id='folded'><summary>{len(folded)} call(s) folded: retried by the harness or its SDK "
            "(the attempt it went on with is listed above), or of an earlier attempt of the rollout that "
            "ended on an infrastructure failure; kept, never trained on</summary>"
            + table(header, [_call_row(c, roles) for c in folded]) + "</details>"
        )
    title = f"<h2>Conversation (call {last.call_index}, the last turn)</h2>"
    return head + "<h2>Calls</h2>" + summary + title + "".join(messages) + _answer(last)


_RETRIED, _ABANDONED = "retried", "abandoned"
_FOLDED = (_RETRIED, _ABANDONED)  # calls listed apart, folded: kept in the recording, never trained on


def _key(call: RecordedCall) -> tuple[int, int]:
    return attempt_of(call), call.call_index  # an index is unique within its attempt


def _roles(calls: list[RecordedCall]) -> dict[tuple[int, int], str]:
    """Each call's part in the rollout. A trained call's is its place in the batch merge: the
    row it continues, or the branch it starts (subagent, rewrite of the history, break) and
    the call it grew from."""
    graded = attempt_of(latest_attempt(calls)[0])
    roles = {}
    for n, row in enumerate(place_calls(calls)):  # the graded attempt's calls only, as in training
        for i, index in enumerate(row.calls):
            if i == 0 and row.branch_kind is not None:
                parent = f" of call {row.parent_call}" if row.parent_call is not None else ""
                roles[(graded, index)] = f"row {n}: {row.branch_kind}{parent}"
            else:
                roles[(graded, index)] = f"row {n}" + (": starts" if i == 0 else "")
    for call in calls:
        if call.tags.get("side_call"):
            roles[_key(call)] = f"side call ({call.tags['side_call']})"
        elif attempt_of(call) != graded:
            roles[_key(call)] = f"{_ABANDONED}: attempt {attempt_of(call)}"
        elif not call.ok:
            roles[_key(call)] = "failed"
        elif not call.prompt_token_ids:
            roles[_key(call)] = "no token ids"
        elif _key(call) not in roles:  # the merge left it out: a retry replaced it
            by = call.tags.get("superseded_by")
            roles[_key(call)] = _RETRIED + (f" by call {by}" if by is not None else "")
    return roles


def _call_row(call: RecordedCall, roles: dict[tuple[int, int], str]) -> list[str]:
    return [
        str(call.call_index),
        escape(roles.get(_key(call), "-")),
        escape(call.provenance.path if call.provenance else "-"),
        str(len(call.prompt_token_ids or [])),
        str(len(call.completion_token_ids or [])),
        f"{call.latency_ms:.0f}",
        escape(", ".join(sorted(k for k, v in call.tags.items() if v)) or "-"),
    ]


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


def _message(message: dict[str, Any], images: str) -> str:
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
                parts.append(f"<img class='shot' alt='screenshot' src='{escape(images + url['file'].split('/')[-1])}'>")
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
