"""The generation loop: one request at a time, KV-cached, float32, in a worker thread.

Each step reports the chosen token, the model's raw log-softmax for it (vLLM's default
``raw_logprobs`` mode: before temperature, top-k or top-p), optional top alternatives,
and the text that became final. Forced tokens (scripted mode) go through the very same
loop, so their logprobs are the model's own.

The KV cache of the previous request is kept and its longest common prefix with the
next prompt reused, as vLLM's prefix caching does: agent loops resend the whole
conversation every turn.
"""

from __future__ import annotations

import secrets
import threading
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Callable

from components.engine._choice import choose
from components.engine._sampling import SamplingParams, pick_token
from components.engine._text import TextAssembler


@dataclass
class Step:
    """One generated token and what it adds to the response."""

    token_id: int
    logprob: float
    text: str
    top_logprobs: list[tuple[int, float]] = field(default_factory=list)
    finish_reason: str | None = None  # "stop" | "length" on the last step
    stop_reason: str | int | None = None  # the stop string or stop token id that ended it


@dataclass(frozen=True)
class ScriptedReply:
    """A scripted turn: the model first samples ``sampled_first`` tokens of plain text of its
    own (no special or tool tokens, no end of turn), then ``forced_ids`` are forced."""

    forced_ids: list[int]
    sampled_first: int = 0


@dataclass(frozen=True)
class ChoiceReply:
    """Choice mode: candidate turns, one of which is sampled by its probability under the
    model and then forced (components/core/choices.py)."""

    candidates: list[list[int]]
    label: str = ""  # names the task and turn in the engine's log


@dataclass
class Job:
    prompt_ids: list[int]
    params: SamplingParams
    emit: Callable[[Step], None]
    reply: ScriptedReply | ChoiceReply | None = None
    cancelled: threading.Event = field(default_factory=threading.Event)


class ModelRunner:
    """Owns the model, the tokenizer and the reusable KV cache. Not thread-safe: one
    worker thread calls ``run``."""

    def __init__(self, model_dir: Path, threads: int) -> None:
        import torch
        from transformers import AutoModelForCausalLM, AutoTokenizer, GenerationConfig
        from transformers.utils import logging as hf_logging

        hf_logging.disable_progress_bar()  # a server log wants no progress bars
        torch.set_num_threads(threads)
        self.tokenizer = AutoTokenizer.from_pretrained(model_dir)
        self.model = AutoModelForCausalLM.from_pretrained(model_dir, dtype=torch.float32).eval()
        self.max_model_len = int(self.model.config.max_position_embeddings)
        generation = GenerationConfig.from_pretrained(model_dir)
        eos = generation.eos_token_id
        self.eos_token_ids = frozenset(eos if isinstance(eos, list) else [eos])
        self._added_ids = frozenset(self.tokenizer.added_tokens_decoder)  # special and tool tags
        # Like vLLM, settings the checkpoint's generation_config.json sets explicitly are the
        # defaults for requests that leave them out (max_new_tokens becomes max_tokens).
        explicit = generation.to_diff_dict()
        self.default_max_tokens: int | None = explicit.get("max_new_tokens")
        self.default_sampling: dict[str, float] = {
            key: explicit[key] for key in ("temperature", "top_p", "top_k") if key in explicit
        }
        self._cache: Any = None
        self._cached_ids: list[int] = []

    def run(self, job: Job) -> None:
        import torch

        with torch.inference_mode():
            try:
                self._run(job)
            except BaseException:
                self._cache, self._cached_ids = None, []  # the cache may be half-written
                raise

    def _run(self, job: Job) -> None:
        import torch

        params = job.params
        seed = params.seed if params.seed is not None else secrets.randbits(63)
        generator = torch.Generator().manual_seed(seed)
        text = TextAssembler(
            self.tokenizer,
            skip_special_tokens=params.skip_special_tokens,
            stop=params.stop,
            include_stop_str_in_output=params.include_stop_str_in_output,
        )
        stop_ids = frozenset(params.stop_token_ids)
        ending_ids = stop_ids if params.ignore_eos else stop_ids | self.eos_token_ids
        reply = job.reply or ScriptedReply([])
        if isinstance(reply, ChoiceReply):
            # Scored as far as they will be emitted: max_tokens cuts a forced reply too.
            cut = ChoiceReply([ids[: params.max_tokens] for ids in reply.candidates], reply.label)
            reply = ScriptedReply(choose(self, job.prompt_ids, cut, params.temperature, generator))
        text_only = sorted(ending_ids | self._added_ids)
        logits = self._prefill(job.prompt_ids)
        for index in range(params.max_tokens):
            if job.cancelled.is_set():
                return
            logprobs = torch.log_softmax(logits, dim=-1)
            if 0 <= index - reply.sampled_first < len(reply.forced_ids):
                token = reply.forced_ids[index - reply.sampled_first]
            else:
                if index < reply.sampled_first:
                    banned = text_only
                else:
                    banned = sorted(ending_ids) if index < params.min_tokens else []
                token = pick_token(logits, params, generator, banned)
            step = Step(token_id=token, logprob=float(logprobs[token]), text="")
            if params.top_logprobs:
                values, ids = torch.topk(logprobs, params.top_logprobs)
                step.top_logprobs = list(zip(ids.tolist(), values.tolist()))
            if token in ending_ids and index + 1 >= params.min_tokens:
                # Like vLLM: the stop token is counted and returned, but not part of the text.
                step.text = text.flush()
                step.finish_reason = "stop"
                step.stop_reason = token if token in stop_ids else None
            else:
                step.text, stop_hit = text.add(token)
                if stop_hit is not None:
                    step.finish_reason, step.stop_reason = "stop", stop_hit
                elif index + 1 == params.max_tokens:
                    step.text += text.flush()
                    step.finish_reason = "length"
            job.emit(step)
            if step.finish_reason is not None:
                return
            logits = self._forward([token])

    def _prefill(self, prompt_ids: list[int]) -> Any:
        reuse = _common_prefix(self._cached_ids, prompt_ids)
        reuse = min(reuse, len(prompt_ids) - 1)  # at least one token must run to get logits
        if self._cache is None or reuse == 0:
            from transformers import DynamicCache

            self._cache, self._cached_ids = DynamicCache(), []
        else:
            self._cache.crop(reuse)
            self._cached_ids = self._cached_ids[:reuse]
        return self._forward(prompt_ids[reuse:])

    def _forward_all(self, token_ids: list[int]) -> Any:
        """Logits at every position of ``token_ids`` (shape [len, vocab]), extending the cache."""
        out = self.model(input_ids=_tensor(token_ids), past_key_values=self._cache, use_cache=True)
        self._cached_ids.extend(token_ids)
        return out.logits[0].float()

    def _rewind(self, length: int) -> None:
        """Crop the cache back to its first ``length`` tokens."""
        self._cache.crop(length)
        del self._cached_ids[length:]

    def _forward(self, token_ids: list[int]) -> Any:
        import torch

        out = self.model(
            input_ids=torch.tensor([token_ids]),
            past_key_values=self._cache,
            use_cache=True,
            logits_to_keep=1,
        )
        self._cached_ids.extend(token_ids)
        return out.logits[0, -1].float()


def _tensor(token_ids: list[int]) -> Any:
    import torch

    return torch.tensor([token_ids])


def _common_prefix(a: list[int], b: list[int]) -> int:
    n = min(len(a), len(b))
    for i in range(n):
        if a[i] != b[i]:
            return i
    return n
