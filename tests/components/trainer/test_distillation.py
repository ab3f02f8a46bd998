"""On-policy distillation: a teacher served by a real dev engine scores a student's sampled tokens by
prompt logprobs, and its reverse-KL term becomes the advantage one CPU update trains on.

One engine serves the teacher: a copy of the seed-0 tiny model that prefers a token X the seed-0
student sampled. Against the seed-0 student it is a teacher that prefers X; as the student itself
(sampling through that same engine) it is a teacher equal to the student."""

from __future__ import annotations

import json
import math
import shutil
import threading
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any

import pytest
import torch
from pydantic import ValidationError

from components.core.config import AlgorithmConfig
from components.core.distillation_config import DistillationConfig
from components.core.outcome import RewardRecord, RolloutStatus
from components.core.trajectory import RecordedCall
from components.trainer.batch import build_batch
from components.trainer.cpu_update import cpu_update, response_log_probs
from components.trainer.distillation import (
    DistillationError,
    apply_distillation,
    check_same_tokenizer,
    distillation_advantages,
    teacher_log_probs_of_batch,
    teacher_token_logprobs,
)
from tests._servers import EngineServer, unshared_port

ALGORITHM = AlgorithmConfig(learning_rate=1e-3, micro_batch_size=4)
REWARDS = [1.0, 0.0, 1.0, 0.0]  # one group of four rollouts, so the verifier's advantage is not zero
TOOL_OUTPUT = "tool: ok"  # context between a rollout's two calls: in the row, never trained (mask 0)
# The dev engine samples in a KV-cached loop and scores prompt logprobs in one forward pass: both
# float32, summed in different orders, so a model scoring its own samples agrees to ~1e-5, not 0.
SELF_AGREEMENT = 1e-4
RAISE = 6.0  # nats the teacher adds to the logit of X where the student sampled X


@dataclass
class Rollouts:
    """Recorded calls of one group of four rollouts, their reward records, and the pad id."""

    calls: dict[str, list[RecordedCall]]
    records: list[RewardRecord]
    pad: int

    def batch(self) -> Any:
        """A fresh DataProto of the rollouts (apply_distillation writes into it)."""
        return build_batch(self.calls, self.records, ALGORITHM, pad_token_id=self.pad)[0]


def _call(rollout: str, index: int, prompt: list[int], completion: list[int], logprobs: list[float]) -> RecordedCall:
    return RecordedCall(
        session_id=rollout, call_index=index, api="chat.completions", request={}, prompt_token_ids=prompt,
        completion_token_ids=completion, completion_logprobs=logprobs, sampling={"temperature": 1.0},
        started_at=0.0, latency_ms=1.0, upstream_status=200,
    )  # fmt: skip


def _records() -> list[RewardRecord]:
    return [
        RewardRecord(rollout_id=f"t-s{n}", task_id="t", group_id="it0-t", reward=r, usable=True, status=RolloutStatus.OK)
        for n, r in enumerate(REWARDS)
    ]


@pytest.fixture(scope="module")
def student_dir(tmp_path_factory: pytest.TempPathFactory) -> Path:
    from components.engine.tiny_model import init_tiny_model

    return init_tiny_model(tmp_path_factory.mktemp("student"), seed=0)


@pytest.fixture(scope="module")
def student_rollouts(student_dir: Path) -> tuple[Rollouts, list[torch.Tensor]]:
    """Four rollouts the student samples itself (seeded, at temperature 1), and the final hidden
    state that predicted each sampled token, in sampling order."""
    from transformers import AutoModelForCausalLM, AutoTokenizer

    tokenizer = AutoTokenizer.from_pretrained(student_dir)
    model = AutoModelForCausalLM.from_pretrained(student_dir, dtype=torch.float32).eval()
    calls, states = {}, []
    for n in range(len(REWARDS)):
        prompt = tokenizer.encode(f"Say something, {n}.", add_special_tokens=False)
        ids, logprobs, generator = list(prompt), [], torch.Generator().manual_seed(n)
        with torch.no_grad():
            for _ in range(8):
                out = model(input_ids=torch.tensor([ids]), output_hidden_states=True)
                step = torch.log_softmax(out.logits[0, -1], dim=-1)
                token = int(torch.multinomial(step.exp(), 1, generator=generator))
                ids.append(token)
                logprobs.append(float(step[token]))
                states.append(out.hidden_states[-1][0, -1])
        calls[f"t-s{n}"] = [_call(f"t-s{n}", 0, prompt, ids[len(prompt) :], logprobs)]
    return Rollouts(calls, _records(), tokenizer.pad_token_id), states


@pytest.fixture(scope="module")
def preferred_token(student_rollouts: tuple[Rollouts, list[torch.Tensor]]) -> int:
    """X: the token the student sampled most (the lowest id among ties)."""
    rollouts, _ = student_rollouts
    sampled = [t for calls in rollouts.calls.values() for c in calls for t in c.completion_token_ids]
    return max(sorted(set(sampled)), key=sampled.count)


@pytest.fixture(scope="module")
def teacher_dir(
    student_dir: Path, student_rollouts: tuple[Rollouts, list[torch.Tensor]], preferred_token: int,
    tmp_path_factory: pytest.TempPathFactory,
) -> Path:  # fmt: skip
    """The student with its own output head (untied from the input embedding, so it reads every
    context as the student does), whose row for X is raised along the hidden states that predicted
    X where the student sampled it: about RAISE nats more on X's logit there."""
    from transformers import AutoModelForCausalLM

    rollouts, states = student_rollouts
    sampled = [t for calls in rollouts.calls.values() for c in calls for t in c.completion_token_ids]
    direction = torch.stack([s for s, t in zip(states, sampled) if t == preferred_token]).mean(dim=0)
    out = tmp_path_factory.mktemp("teacher") / "model"
    shutil.copytree(student_dir, out)  # tokenizer and chat template: the student's own
    model = AutoModelForCausalLM.from_pretrained(student_dir, dtype=torch.float32)
    head = model.lm_head.weight.detach().clone()
    head[preferred_token] += RAISE * direction / direction.dot(direction)
    model.config.tie_word_embeddings = False
    model.lm_head.weight = torch.nn.Parameter(head)
    model.save_pretrained(out)
    return out


@pytest.fixture(scope="module")
def teacher_engine(make_dev_engine: Callable[..., EngineServer], teacher_dir: Path) -> EngineServer:
    return make_dev_engine(model_dir=teacher_dir)


@pytest.fixture(scope="module")
def engine_rollouts(teacher_engine: EngineServer, teacher_dir: Path) -> Rollouts:
    """Four rollouts the served model samples through its engine, each a chat call then a token-id
    continuation after a tool output, as the proxy records them: the served model as the student."""
    from openai import OpenAI
    from transformers import AutoTokenizer

    tokenizer = AutoTokenizer.from_pretrained(teacher_dir)
    client = OpenAI(base_url=teacher_engine.base_url, api_key="unused", max_retries=0, timeout=120)
    tool_ids = tokenizer.encode(TOOL_OUTPUT, add_special_tokens=False)
    calls = {}
    for n in range(len(REWARDS)):
        rollout = f"t-s{n}"
        chat = client.chat.completions.create(
            model=teacher_engine.model, messages=[{"role": "user", "content": f"Say something, {n}."}],
            max_tokens=6, seed=n, logprobs=True, extra_body={"return_token_ids": True},
        )  # fmt: skip
        logprobs = [e.logprob for e in chat.choices[0].logprobs.content]
        first = _call(rollout, 0, chat.prompt_token_ids, chat.choices[0].token_ids, logprobs)
        prompt = first.prompt_token_ids + first.completion_token_ids + tool_ids
        more = client.completions.create(
            model=teacher_engine.model, prompt=prompt, max_tokens=6, seed=n, logprobs=0, extra_body={"return_token_ids": True}
        ).choices[0]
        calls[rollout] = [first, _call(rollout, 1, prompt, more.model_extra["token_ids"], more.logprobs.token_logprobs)]
    return Rollouts(calls, _records(), tokenizer.pad_token_id)


def test_a_teacher_equal_to_the_student_gives_zero_advantage(engine_rollouts: Rollouts, teacher_engine: EngineServer) -> None:
    data = engine_rollouts.batch()
    mask = data.batch["response_mask"].bool()
    calls = engine_rollouts.calls.values()
    tool_output = sum(len(b.prompt_token_ids) - len(a.prompt_token_ids + a.completion_token_ids) for a, b in calls)
    assert (~mask & (data.batch["attention_mask"][:, data.batch["prompts"].shape[1] :] == 1)).sum() == tool_output > 0
    teacher = teacher_log_probs_of_batch(data, teacher_engine.url, teacher_engine.model)
    gap = (teacher - data.batch["rollout_log_probs"])[mask].abs()
    assert gap.numel() == 4 * 12 and float(gap.max()) < SELF_AGREEMENT

    reward_advantages = data.batch["advantages"].clone()
    assert reward_advantages[mask].abs().min() > 0.5  # GRPO's ±0.87 for rewards 1, 0, 1, 0
    pure = distillation_advantages(
        data.batch["rollout_log_probs"], teacher, data.batch["response_mask"], reward_advantages,
        DistillationConfig(teacher_model="same", verifier_reward=False),
    )  # fmt: skip
    assert float(pure.abs().max()) < SELF_AGREEMENT
    metrics = apply_distillation(data, teacher, DistillationConfig(teacher_model="same", weight=0.5))
    assert torch.allclose(data.batch["advantages"], reward_advantages, atol=SELF_AGREEMENT)
    assert abs(metrics["train/distill/reverse_kl"]) < SELF_AGREEMENT and metrics["train/distill/clamped_frac"] == 0


def test_the_teacher_term_is_verls_k1_clamped_weighted_and_masked() -> None:
    student = torch.tensor([[-1.0, -2.0, -3.0, -0.5]])
    teacher = torch.tensor([[-0.5, -2.5, -float("inf"), -9999.0]])
    mask = torch.tensor([[1, 1, 1, 0]])
    reward = torch.full((1, 4), 0.25) * mask
    beside = distillation_advantages(student, teacher, mask, reward, DistillationConfig(teacher_model="t", weight=2.0))
    # log p_teacher - log p_student, bounded by clamp (10), weighted, plus the reward's; 0 where unsampled.
    assert beside.tolist() == [[0.25 + 2 * 0.5, 0.25 - 2 * 0.5, 0.25 - 2 * 10.0, 0.0]]
    pure = DistillationConfig(teacher_model="t", verifier_reward=False)
    alone = distillation_advantages(student, teacher, mask, reward, pure)
    assert alone.tolist() == [[0.5, -0.5, -10.0, 0.0]]


def test_applying_the_teacher_twice_or_to_another_batch_is_refused(student_rollouts) -> None:
    data, config = student_rollouts[0].batch(), DistillationConfig(teacher_model="t")
    with pytest.raises(DistillationError, match=r"teacher log-probs of shape \(4, 3\) .* score this batch's own rows"):
        apply_distillation(data, torch.zeros(4, 3), config)
    apply_distillation(data, data.batch["rollout_log_probs"].clone(), config)
    with pytest.raises(DistillationError, match="already carries the teacher's term"):
        apply_distillation(data, data.batch["rollout_log_probs"].clone(), config)


def test_a_teacher_that_prefers_a_token_raises_the_students_probability_of_it(
    student_rollouts, preferred_token: int, student_dir: Path, teacher_dir: Path, teacher_engine: EngineServer
) -> None:
    from transformers import AutoModelForCausalLM

    data = student_rollouts[0].batch()
    batch = data.batch
    where = batch["response_mask"].bool() & (batch["responses"] == preferred_token)
    check_same_tokenizer(student_dir, teacher_dir)  # a teacher of the student's tokenizer is accepted
    teacher = teacher_log_probs_of_batch(data, teacher_engine.url, teacher_engine.model)
    assert bool((teacher[where] > batch["rollout_log_probs"][where] + RAISE / 2).all())  # it prefers X there
    apply_distillation(data, teacher, DistillationConfig(teacher_model=str(teacher_dir), verifier_reward=False))
    assert bool((batch["advantages"][where] > RAISE / 2).all())

    student = AutoModelForCausalLM.from_pretrained(student_dir, dtype=torch.float32).eval()
    with torch.no_grad():
        before, _ = response_log_probs(student, batch, temperature=1.0)
    assert torch.allclose(before[where], batch["rollout_log_probs"][where], atol=SELF_AGREEMENT)  # on-policy
    cpu_update(student, data, ALGORITHM, seed=0)
    with torch.no_grad():
        after, _ = response_log_probs(student, batch, temperature=1.0)
    # One AdamW step of lr 1e-3: p(X) where the student sampled X rises by half at least (measured: x4.6;
    # with the advantage's sign flipped it falls as far).
    assert bool((after[where] - before[where] > math.log(1.5)).all()), (before[where], after[where])


def test_a_teacher_with_another_tokenizer_is_refused_saying_why(student_dir: Path, tmp_path: Path) -> None:
    from transformers import AutoTokenizer

    other = AutoTokenizer.from_pretrained(student_dir)
    other.add_tokens(["<|teacher_only|>"])
    other.save_pretrained(tmp_path / "other-vocab")
    with pytest.raises(DistillationError, match=r"not the student's: 1 token ids differ .*'<\|teacher_only\|>' for the teacher"):
        check_same_tokenizer(student_dir, tmp_path / "other-vocab")
    other_end = AutoTokenizer.from_pretrained(student_dir)
    other_end.eos_token = "<|endoftext|>"
    with pytest.raises(DistillationError, match="special tokens differ .* shares the student's tokenizer"):
        check_same_tokenizer(student_dir, other_end)


@pytest.fixture
def fake_teacher() -> Iterator[Callable[[int, Any], str]]:
    """``fake_teacher(status, body)``: a loopback server that answers every POST with that status and JSON."""
    servers = []

    def serve(status: int, body: Any) -> str:
        class Answer(BaseHTTPRequestHandler):
            def do_POST(self) -> None:  # noqa: N802 (http.server's name)
                self.rfile.read(int(self.headers["Content-Length"]))
                data = json.dumps(body).encode()
                self.send_response(status)
                self.send_header("Content-Type", "application/json")
                self.send_header("Content-Length", str(len(data)))
                self.end_headers()
                self.wfile.write(data)

            def log_message(self, *args: Any) -> None:
                pass

        server = ThreadingHTTPServer(("127.0.0.1", 0), Answer)
        threading.Thread(target=server.serve_forever, kwargs={"poll_interval": 0.05}, daemon=True).start()
        servers.append(server)
        return f"http://127.0.0.1:{server.server_address[1]}"

    yield serve
    for server in servers:
        server.shutdown()
        server.server_close()


ROW = [5, 6, 7, 8]  # a 2-token prompt, a 2-token response


def _scored(entries: list[Any]) -> dict[str, Any]:
    return {"choices": [{"text": "x", "prompt_logprobs": entries}]}


def _entry(token: int, logprob: float) -> dict[str, Any]:
    return {str(token): {"logprob": logprob, "rank": 1, "decoded_token": "x"}}


@pytest.mark.parametrize(
    ("status", "body", "message"),
    [
        (200, {"choices": [{"text": "x"}]}, "no prompt_logprobs; serve the teacher with an engine that supports prompt_logprobs"),
        (200, _scored([None, _entry(6, -1.0)]), "returned 2 prompt_logprobs for a 4-token row; it must score the token ids exactly"),
        (200, _scored([None, _entry(6, -1.0), _entry(7, -1.0), _entry(9, -1.0)]), "no log-prob for token 8 at position 3"),
        (400, {"error": {"message": "too long"}}, "answered HTTP 400 to a 4-token row: .*too long.*max_model_len"),
        (200, ["not", "a", "completion"], "answered something other than a completion"),
    ],
    ids=["no-prompt-logprobs", "length-mismatch", "missing-token", "http-error", "not-a-completion"],
)
def test_a_malformed_teacher_answer_is_an_error_naming_the_fix(fake_teacher, status: int, body: Any, message: str) -> None:
    url = fake_teacher(status, body)
    with pytest.raises(DistillationError, match=message):
        teacher_token_logprobs(url, "teacher", [ROW], [2])


def test_a_well_formed_answer_gives_the_response_tokens_logprobs(fake_teacher) -> None:
    url = fake_teacher(200, _scored([None, _entry(6, -1.0), _entry(7, -2.0), {**_entry(8, -3.0), **_entry(1, -0.1)}]))
    assert teacher_token_logprobs(url + "/v1/", "teacher", [ROW, ROW], [2, 3]) == [[-2.0, -3.0], [-3.0]]


def test_an_unreachable_teacher_says_so() -> None:
    with pytest.raises(DistillationError, match="is unreachable .* start the teacher's serve daemon"):
        teacher_token_logprobs(f"http://127.0.0.1:{unshared_port()}", "teacher", [ROW], [2])


def test_the_config_section_refuses_estimators_that_push_away_from_the_teacher() -> None:
    algorithm = AlgorithmConfig(distillation={"teacher_model": "s3://bucket/teacher"})
    assert algorithm.distillation == DistillationConfig(teacher_model="s3://bucket/teacher", weight=1.0, estimator="k1")
    with pytest.raises(ValidationError, match="never negative.*use k1"):
        AlgorithmConfig(distillation={"teacher_model": "t", "estimator": "k3"})
    with pytest.raises(ValidationError, match="remove weight, or set verifier_reward: true"):
        DistillationConfig(teacher_model="t", verifier_reward=False, weight=0.5)
    # The steps read the compiled config, every default spelled out: pure distillation must survive it.
    pure = DistillationConfig(teacher_model="t", verifier_reward=False)
    assert DistillationConfig.model_validate(pure.model_dump(mode="json")) == pure
    with pytest.raises(ValidationError, match=r"distillation\.teacher\n\s+Extra inputs are not permitted"):
        AlgorithmConfig(distillation={"teacher": "t", "teacher_model": "t"})
