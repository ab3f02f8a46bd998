"""Token ids against response text: mismatches are left out and counted, tool calls raise no alarm."""

from __future__ import annotations

from components.core.config import AlgorithmConfig
from components.trainer.batch import build_batch
from components.trainer.capture_check import check_rollout, plain_text

# A toy tokenizer: id n is the letter chr(ord('a') + n - 1); id 2 is the end-of-turn token.
EOT = 2


def decode(ids: list[int], skip_special: bool) -> str:
    return "".join("<eot>" if i == EOT and not skip_special else "" if i == EOT else chr(ord("a") + i - 1) for i in ids)


def _chat(text, **message):
    return {"choices": [{"index": 0, "message": {"role": "assistant", "content": text, **message}}]}


def test_plain_text_answers_are_compared_and_structured_ones_skipped(call):
    assert plain_text(call(0, [1], [3], response=_chat("c"))) == "c"
    assert plain_text(call(0, [1], [3], response=_chat(None, tool_calls=[{"id": "x"}]))) is None
    assert plain_text(call(0, [1], [3], response=_chat("c", reasoning_content="hmm"))) is None
    messages = {"content": [{"type": "text", "text": "a"}, {"type": "text", "text": "b"}]}
    assert plain_text(call(0, [1], [3], api="anthropic.messages", response=messages)) == "ab"
    tool_use = {"content": [{"type": "text", "text": "a"}, {"type": "tool_use", "id": "t"}]}
    assert plain_text(call(0, [1], [3], api="anthropic.messages", response=tool_use)) is None
    output = {"output": [{"type": "message", "content": [{"type": "output_text", "text": "hi"}]}]}
    assert plain_text(call(0, [1], [3], api="responses", response=output)) == "hi"
    assert plain_text(call(0, [1], [3], api="responses", response={"output": [{"type": "reasoning"}]})) is None


def test_matching_ids_pass_with_end_of_turn_and_stop_strings(call):
    ok = call(0, [1], [3, 4, EOT], response=_chat("cd"), finish_reason="stop")
    stopped = call(0, [1], [3, 4, 5], response=_chat("cd"), finish_reason="stop", sampling={"temperature": 1.0, "stop": ["e"]})
    tool = call(1, [1], [9, 9], response=_chat(None, tool_calls=[{"id": "x"}]))
    assert check_rollout([ok, stopped, tool], decode) == (2, 1, None)


def test_mismatch_is_described(call):
    checked, skipped, problem = check_rollout([call(0, [1], [3, 4], response=_chat("zz"))], decode)
    assert (checked, skipped) == (1, 0) and "call 0" in problem and "'cd'" in problem and "'zz'" in problem


def test_mismatching_rollout_is_left_out_of_the_batch_and_counted(call, record):
    calls = {
        "t-s0": [call(0, [1], [3], response=_chat("c"))],
        "t-s1": [call(0, [1], [4], session="t-s1", response=_chat("x"))],  # ids say "d"
        "t-s2": [call(0, [1], [5], session="t-s2", response=_chat("e"))],
    }
    records = [record("t-s0", 1.0), record("t-s1", 0.0), record("t-s2", 0.0)]

    data, stats = build_batch(calls, records, AlgorithmConfig(), decode=decode)

    assert list(data.non_tensor_batch["rollout_id"]) == ["t-s0", "t-s2"]
    assert stats.token_text_mismatch == 1 and "t-s1" in stats.mismatches
    assert stats.metrics()["batch/unusable/token_text_mismatch"] == 1 and stats.token_text_checked == 3


def test_without_a_decoder_nothing_is_checked(call, record):
    calls = {"t-s0": [call(0, [1], [3], response=_chat("zz"))], "t-s1": [call(0, [1], [4], session="t-s1")]}
    _, stats = build_batch(calls, [record("t-s0", 1.0), record("t-s1", 0.0)], AlgorithmConfig())
    assert stats.token_text_checked == 0 and stats.rows == 2
