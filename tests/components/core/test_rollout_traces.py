"""Each rollout as an MLflow trace (components/core/rollout_traces.py): the span tree of
hand-made calls, and the traces the commit step logs for a real quickstart iteration,
read back through MLflow's API."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from components.core.rollout_traces import ITERATION_TAG, ROLLOUT_TAG, rollout_trace
from components.core.storage import RunLayout, open_store
from components.core.trajectory import RecordedCall

TOOL_CALL = {"id": "c1", "type": "function", "function": {"name": "shell", "arguments": '{"command": "ls"}'}}


def _call(index: int, messages: list[dict[str, Any]], answer: dict[str, Any], started: float, **fields: Any) -> RecordedCall:
    return RecordedCall(
        session_id="t-s0", call_index=index, api="chat.completions", request={"messages": messages},
        response={"choices": [{"message": answer}]}, prompt_token_ids=[1] * (10 + index), completion_token_ids=[2, 3],
        completion_logprobs=[-0.1, -0.2], started_at=started, latency_ms=250.0, upstream_status=200, **fields,
    )  # fmt: skip


def test_a_rollout_is_an_agent_span_with_a_model_span_per_call_and_a_tool_span_per_tool_call() -> None:
    image = {"type": "image_url", "image_url": {"url": {"sha256": "ab" * 32, "file": "images/x.png"}}}
    first = [{"role": "user", "content": [{"type": "text", "text": "List the files."}, image]}]
    second = [*first, {"role": "assistant", "content": None, "tool_calls": [TOOL_CALL]},
              {"role": "tool", "tool_call_id": "c1", "content": "a.txt\nb.txt"}]  # fmt: skip
    calls = [
        _call(0, first, {"role": "assistant", "content": None, "tool_calls": [TOOL_CALL]}, started=100.0),
        _call(1, second, {"role": "assistant", "content": "x" * 5000}, started=101.0),
    ]
    outcome = {"task_id": "t", "status": "ok", "passed": True, "reward": 1.0, "final_answer": "done"}

    trace = rollout_trace("t-s0", calls, outcome)

    assert (trace.name, trace.span_type) == ("rollout t-s0", "AGENT")
    assert trace.inputs["prompt"] == f"List the files.\n[image {'ab' * 6}]"
    assert trace.outputs == {"status": "ok", "passed": True, "reward": 1.0, "final_answer": "done"}
    assert trace.attributes["calls"] == 2 and trace.attributes["prompt_tokens"] == 21
    assert [(s.name, s.span_type) for s in trace.children] == [("call 0", "LLM"), ("tool shell", "TOOL"), ("call 1", "LLM")]
    call0, tool, call1 = trace.children
    assert (call0.start_ns, call0.end_ns) == (100 * 10**9, 100 * 10**9 + 250 * 10**6)
    assert (tool.start_ns, tool.end_ns) == (call0.end_ns, call1.start_ns)  # between the answer and the next call
    assert tool.outputs == {"result": "a.txt\nb.txt"} and tool.inputs == {"arguments": '{"command": "ls"}'}
    assert [m["role"] for m in call1.inputs["new_messages"]] == ["assistant", "tool"]  # only what is new
    assert call1.outputs["content"].endswith("... (5000 characters)") and len(call1.outputs["content"]) < 4100
    assert trace.start_ns == call0.start_ns and trace.end_ns == call1.end_ns
    assert rollout_trace("t-s1", [], outcome) is None


def test_the_commit_step_logs_one_trace_per_rollout_that_mlflow_gives_back(quickstart_store: tuple[str, Path]) -> None:
    from mlflow import MlflowClient

    from components.core.tracking import RUN_TAG

    uri, work = quickstart_store
    store, layout = open_store(uri), RunLayout("quickstart")
    plan = json.loads(store.get_bytes(layout.plan(0)))
    client = MlflowClient(tracking_uri=f"sqlite:///{work / 'mlflow.db'}")
    experiment = client.get_experiment_by_name("quickstart")
    (run,) = client.search_runs([experiment.experiment_id], filter_string=f"tags.`{RUN_TAG}` = 'quickstart'")
    traces = client.search_traces(locations=[experiment.experiment_id], run_id=run.info.run_id, max_results=500)

    by_rollout = {t.info.tags[ROLLOUT_TAG]: t for t in traces}
    assert sorted(by_rollout) == sorted(r["rollout_id"] for r in plan["rollouts"])
    for rollout_id, trace in by_rollout.items():
        assert trace.info.tags[ITERATION_TAG] == "0"
        calls = [RecordedCall.model_validate_json(line) for line in store.get_bytes(layout.trajectory(0, rollout_id)).splitlines()]
        llm = [s for s in trace.data.spans if s.span_type == "LLM"]
        assert len(llm) == len(calls)
        assert [s.attributes["completion_tokens"] for s in llm] == [len(c.completion_token_ids) for c in calls]


def test_a_rollout_whose_records_cannot_be_read_gets_no_trace_and_says_why(tmp_path: Path) -> None:
    from components.core.rollout_traces import iteration_traces

    store, layout = open_store(f"file://{tmp_path}"), RunLayout("r")
    rollouts = [{"rollout_id": rid, "task_id": "t", "group_id": "g"} for rid in ("t-s0", "t-s1", "t-s2")]
    store.put_bytes(layout.plan(0), json.dumps({"rollouts": rollouts}).encode())
    good = _call(0, [{"role": "user", "content": "hi"}], {"role": "assistant", "content": "ok"}, started=1.0)
    store.put_bytes(layout.trajectory(0, "t-s0"), (good.model_dump_json() + "\n").encode())
    store.put_bytes(layout.trajectory(0, "t-s1"), b'{"session_id": "t-s1"}\n')  # t-s2 recorded nothing

    traces, unreadable = iteration_traces(store, layout, 0)

    assert list(traces) == ["t-s0"] and list(unreadable) == ["t-s1"]
    assert "validation error" in unreadable["t-s1"]
