"""`openforge record`: a teacher answers the real harness, its sessions are kept for SFT.

The endpoint teacher here is the dev engine serving a book of one candidate per turn (it
plays the task's solution), guarded by an API key as vLLM is with ``VLLM_API_KEY``; the
recording runs in the sandbox runtime, where only the proxy sidecar may hold that key.
"""

from __future__ import annotations

import io
import json
import os
import secrets
from pathlib import Path

import pytest
import yaml
from rich.console import Console
from typer.testing import CliRunner

from components.core.config import ExperimentConfig
from components.core.outcome import Outcome
from components.core.storage import RunLayout, open_store, run_layout
from components.core.trajectory import read_session
from pipelines.compile import compile_config
from pipelines.evaluate import eval_config, evaluate_policy
from pipelines.record import teacher_tokens
from tests._servers import start_dev_engine

PROMPT = "Create a file named out.txt containing exactly: hello"
SOLUTION = "env > seen-env.txt; echo hello > out.txt"
KEY_ENV = "RECORD_TEST_TEACHER_KEY"
# Passes when the solution ran and the harness's environment did not hold the teacher's key.
VERIFY = f"""
import pathlib, sys
done = pathlib.Path("out.txt").read_text().strip() == "hello" if pathlib.Path("out.txt").exists() else False
seen = pathlib.Path("seen-env.txt").read_text() if pathlib.Path("seen-env.txt").exists() else ""
sys.exit(0 if done and "{KEY_ENV}" not in seen else 1)
"""


def _task_set(root: Path) -> Path:
    task = root / "tasks" / "write-hello"
    task.mkdir(parents=True)
    spec = {
        "id": "write-hello",
        "prompt": PROMPT,
        "verifier": {"command": ["python3", "{task_dir}/verify.py"], "timeout_s": 10},
        "reference": [{"tool_calls": [{"shell": SOLUTION}]}, {"content": "Done."}],
        "choices": [[{"tool_calls": [{"shell": SOLUTION}]}, {"tool_calls": [{"shell": "echo howdy > out.txt"}]}]],
    }
    (task / "task.yaml").write_text(yaml.safe_dump(spec))
    (task / "verify.py").write_text(VERIFY)
    return task.parent


def _config(tmp_path: Path, tracking_uri: str, teacher: dict) -> ExperimentConfig:
    return ExperimentConfig.model_validate(
        {
            "name": "recorded",
            "model": {"tiny_seed": 3},
            "harness": {"name": "reference", "max_turns": 3, "max_tokens": 64},
            "tasks": {"source": str(_task_set(tmp_path))},
            "rollout": {"samples_per_task": 1, "concurrency": 1, "time_limit_s": 60},
            "storage": {"uri": f"file://{tmp_path / 'store'}"},
            "tracking": {"uri": tracking_uri},
            "teacher": teacher,
            "sft": {"recordings": "recorded", "evaluation": "teacher", "max_epochs": 3, "learning_rate": 3e-3, "held_out": 0.0},
        }
    )


def test_record_refuses_a_config_without_a_teacher_and_compiles_what_it_runs(tmp_path: Path) -> None:
    from pipelines.cli import app
    from pipelines.validate import check_manifests, default_schema_path

    bare = _config(tmp_path / "a", "sqlite:///unused.db", {"kind": "reference"}).model_dump(mode="json", exclude={"teacher", "sft"})
    path = tmp_path / "bare.yaml"
    path.write_text(yaml.safe_dump(bare))
    result = CliRunner().invoke(app, ["record", str(path)])
    assert result.exit_code == 2 and "needs a `teacher:` section" in result.output

    endpoint = {"kind": "endpoint", "url": "http://10.0.0.9:8000/v1", "model": "big", "api_key_env": "TEACHER_KEY", "secret": "keys",
                "egress_cidrs": ["10.0.0.9/32"]}  # fmt: skip
    path.write_text(yaml.safe_dump({**bare, "teacher": endpoint}))
    compiled = CliRunner().invoke(app, ["record", str(path), "--compile-only", "--check", "--out", str(tmp_path / "argo"), "--id", "r1"])
    assert compiled.exit_code == 0 and "no problems" in compiled.output, compiled.output
    assert "TEACHER_KEY" in (tmp_path / "argo" / "recorded" / "eval-workflow.yaml").read_text()  # the key's name, never its value
    # Egress to the teacher: this recording's rollout pods alone, the teacher's port, the addresses the config names.
    policy = yaml.safe_load((tmp_path / "argo" / "recorded" / "teacher-egress.yaml").read_text())
    workflow = yaml.safe_load((tmp_path / "argo" / "recorded" / "eval-workflow.yaml").read_text())
    rollout_labels = next(t for t in workflow["spec"]["templates"] if t["name"] == "rollout")["metadata"]["labels"]
    assert policy["kind"] == "NetworkPolicy" and policy["spec"]["policyTypes"] == ["Egress"]
    assert policy["spec"]["podSelector"]["matchLabels"] == rollout_labels == {
        "openforge.dev/step": "rollout", "openforge.dev/teacher-egress": "recorded"}  # fmt: skip
    (rule,) = policy["spec"]["egress"]
    assert rule == {"to": [{"ipBlock": {"cidr": "10.0.0.9/32"}}], "ports": [{"protocol": "TCP", "port": 8000}]}
    checkpoint = {"kind": "checkpoint", "path": "s3://models/teacher"}
    for teacher in ({"kind": "reference", "error_rate": 0.2}, endpoint, checkpoint):
        recording = eval_config(_config(tmp_path / teacher["kind"], "sqlite:///unused.db", teacher), "base", eval_id="r", recording=True)
        (workflow,) = compile_config(recording)
        assert check_manifests([workflow], default_schema_path()) == []
        templates = {t["name"]: t for t in workflow["spec"]["templates"]}
        proxy = templates["rollout"]["sidecars"][0]
        if teacher["kind"] == "reference":
            assert "serve" in templates and "--training" in proxy["command"]
            continue
        if teacher["kind"] == "checkpoint":  # served by the recording, recorded as text, no key anywhere
            assert "serve" in templates and "--teacher" in proxy["command"] and "--training" not in proxy["command"]
            assert "s3://models/teacher" in yaml.safe_dump(workflow["spec"]["arguments"])
            assert not [e for t in templates.values() for c in [t.get("container") or {}, *t.get("sidecars", [])]
                        for e in c.get("env", []) if "valueFrom" in e]  # fmt: skip
            continue
        # No engine: the proxy calls the teacher in teacher mode, its key from the Secret, in this container alone.
        assert "serve" not in templates and "--teacher" in proxy["command"]
        assert proxy["command"][proxy["command"].index("--upstream") + 1] == "{{inputs.parameters.serve-address}}"
        rollout = next(t for t in templates["generate"]["dag"]["tasks"] if t["name"] == "rollout")
        assert "depends" not in rollout
        assert {"name": "serve-address", "value": "{{workflow.parameters.teacher-url}}"} in rollout["arguments"]["parameters"]
        assert {"name": "teacher-url", "value": endpoint["url"]} in [
            {k: p[k] for k in ("name", "value")} for p in workflow["spec"]["arguments"]["parameters"]
        ]
        refs = [e for t in templates.values() for c in [t.get("container") or {}, *t.get("sidecars", [])] for e in c.get("env", []) if "valueFrom" in e]
        assert refs == [{"name": "OPENFORGE_UPSTREAM_API_KEY", "valueFrom": {"secretKeyRef": {"name": "keys", "key": "TEACHER_KEY"}}}]


@pytest.mark.slow
@pytest.mark.timeout(600)
def test_an_endpoint_teacher_is_recorded_as_text_and_sft_makes_its_command_likelier(
    tmp_path: Path, tiny_model_dir: Path, tracking_uri: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    from transformers import AutoTokenizer

    from components.engine.tiny_model import init_tiny_model
    from components.trainer.sft_step import sft_from_store, sft_policy_path
    from components.trainer.text_calls import with_student_tokens

    key = f"sk-test-{secrets.token_hex(12)}"
    book = {"tasks": [{"task_id": "write-hello", "match": PROMPT, "turns": [[{"tool_calls": [{"shell": SOLUTION}]}], [{"content": "Done."}]]}]}
    (tmp_path / "book.json").write_text(json.dumps(book))
    monkeypatch.setenv("VLLM_API_KEY", key)  # the teacher refuses calls without it, as vLLM does
    teacher = start_dev_engine(tiny_model_dir, tmp_path / "teacher-logs", name="teacher", served_model_name="teacher-model", args=("--choices", str(tmp_path / "book.json")))
    monkeypatch.delenv("VLLM_API_KEY")
    monkeypatch.setenv(KEY_ENV, key)
    try:
        config = _config(tmp_path, tracking_uri, {"kind": "endpoint", "url": teacher.base_url, "model": teacher.model, "api_key_env": KEY_ENV,
                                                  "usd_per_million_tokens": {"prompt": 3.0, "completion": 15.0}})  # fmt: skip
        recording = eval_config(config, "base", eval_id="teacher", recording=True)
        summary = evaluate_policy(recording, Console(file=io.StringIO()), workdir=tmp_path / ".openforge", runtime="sandbox")
    finally:
        teacher.stop()

    # The teacher's solution ran in the harness and passed, without the key in the harness's reach.
    assert summary.status_counts["ok"] == 1 and summary.tasks[0].passed == 1
    store, layout = open_store(config.storage.uri), run_layout(recording)
    local = tmp_path / "session.jsonl"
    local.write_bytes(store.get_bytes(layout.trajectory(0, "write-hello-s0")))
    calls = read_session(local)
    assert calls and all(c.text_only and not c.completion_token_ids for c in calls)
    # Each session keeps what the teacher billed for it.
    sessions, tokens = teacher_tokens(recording)
    assert sessions == 1 and tokens["prompt"] > 0 and tokens["completion"] >= len(SOLUTION) // 4
    outcome = Outcome.model_validate_json(store.get_bytes(layout.outcome(0, "write-hello-s0")))
    assert outcome.extra["teacher_cost_usd"] == pytest.approx((tokens["prompt"] * 3.0 + tokens["completion"] * 15.0) / 1e6)
    # The key reached the teacher (it answered) and nothing that was written down.
    for folder in (tmp_path / "store", tmp_path / ".openforge"):
        for path in folder.rglob("*"):
            if path.is_file():
                assert key.encode() not in path.read_bytes(), f"the teacher's key leaked into {path}"

    # SFT on the text-only sessions, in the student's own tokens: the teacher's command becomes likelier.
    report, _ = sft_from_store(config, store)
    assert report.sessions == 1
    tokenizer = AutoTokenizer.from_pretrained(tiny_model_dir)  # the tiny tokenizer is every tiny model's
    first = with_student_tokens(calls[0], tokenizer)
    assert SOLUTION in tokenizer.decode(first.completion_token_ids)
    base = init_tiny_model(tmp_path / "base", seed=3)
    tuned = sft_policy_path(store, RunLayout(config.name))
    gain = _log_p(tuned, first.prompt_token_ids, first.completion_token_ids) - _log_p(base, first.prompt_token_ids, first.completion_token_ids)
    assert gain > 5, f"SFT raised log p(teacher's first turn) by {gain:.2f} nats only"


@pytest.mark.slow
@pytest.mark.timeout(600)
def test_a_checkpoint_teacher_is_served_by_the_recordings_own_serve_step_and_recorded_as_text(
    tmp_path: Path, tracking_uri: str
) -> None:
    from transformers import AutoTokenizer

    from components.engine.tiny_model import init_tiny_model
    from components.trainer.text_calls import with_student_tokens

    teacher = init_tiny_model(tmp_path / "teacher", seed=12)  # other weights, the student's tokenizer
    config = _config(tmp_path, tracking_uri, {"kind": "checkpoint", "path": str(teacher)})
    recording = eval_config(config, "base", eval_id="teacher", recording=True)
    summary = evaluate_policy(recording, Console(file=io.StringIO()), workdir=tmp_path / ".openforge", runtime="sandbox")

    # The serve step served the teacher's folder (not the student's tiny model), and the session is graded.
    assert summary.checkpoint["source"] == str(teacher), summary.checkpoint
    assert summary.status_counts["ok"] == 1
    store, layout = open_store(config.storage.uri), run_layout(recording)
    local = tmp_path / "session.jsonl"
    local.write_bytes(store.get_bytes(layout.trajectory(0, "write-hello-s0")))
    calls = read_session(local)
    # Recorded as text, as an endpoint teacher's, which SFT tokenizes with the student's template.
    assert calls and all(c.text_only and not c.completion_token_ids and c.upstream_status == 200 for c in calls)
    tokenized = with_student_tokens(calls[0], AutoTokenizer.from_pretrained(teacher))
    assert tokenized.prompt_token_ids and tokenized.completion_token_ids
    sessions, tokens = teacher_tokens(recording)
    assert sessions == 1 and tokens["completion"] > 0


def _log_p(model_dir: str | os.PathLike[str], prompt: list[int], completion: list[int]) -> float:
    import torch
    from transformers import AutoModelForCausalLM

    model = AutoModelForCausalLM.from_pretrained(model_dir, dtype=torch.float32)
    with torch.no_grad():
        logprobs = torch.log_softmax(model(input_ids=torch.tensor([prompt + completion])).logits[0].float(), dim=-1)
    return sum(float(logprobs[len(prompt) - 1 + i, t]) for i, t in enumerate(completion))
