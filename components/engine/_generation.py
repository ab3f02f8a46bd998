"""The generation loop: one request at a time, KV-cached, float32, in a worker thread.

Each step reports the chosen token, its log-probability under the distribution it was
drawn from (after temperature, top-k and top-p, as the vLLM this project launches reports
in ``processed_logprobs`` mode; a forced or greedy token's is the model's raw log-softmax,
the same at temperature 1), optional top alternatives,
and the text that became final. Forced tokens (scripted and choice modes) go through the
very same loop, so their logprobs are the model's own; being known in advance, they run
through the model as one chunk rather than a step each.

Agent loops resend the whole conversation every turn, and several sessions share one
engine: the KV caches of recent conversations are kept (``_kv_cache.KVCacheStore``) and a
prompt starts from the one it shares the longest prefix with, as vLLM's prefix caching does.
"""

from __future__ import annotations

import secrets
import threading
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Callable

from components.engine._choice import choose
from components.engine._kv_cache import (
    DEFAULT_BUDGET_MIB,
    DEFAULT_MAX_ENTRIES,
    CacheEntry,
    KVCacheStore,
    check_full_attention,
)
from components.core.model_kind import is_vision_language
from components.core.sampling import NEUTRAL_SAMPLING
from components.engine._sampling import SamplingParams, pick_token
from components.engine._text import TextAssembler
from components.engine._vision import ImageExpander, VisionInputs, VisionPrompt


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
    error_rate: float | None = None  # a reference teacher's draw (ChoiceBook.error_rate); None: the policy's


@dataclass
class Job:
    prompt_ids: list[int]
    params: SamplingParams
    emit: Callable[[Step], None]
    reply: ScriptedReply | ChoiceReply | None = None
    vision: VisionInputs | None = None  # the prompt's images (a vision-language model)
    cancelled: threading.Event = field(default_factory=threading.Event)


class ModelRunner:
    """Owns the model, the tokenizer and the reusable KV caches. Not thread-safe: one
    worker thread calls ``run``."""

    def __init__(
        self,
        model_dir: Path,
        threads: int,
        *,
        cache_budget_bytes: int = DEFAULT_BUDGET_MIB * 2**20,
        cache_entries: int = DEFAULT_MAX_ENTRIES,
    ) -> None:
        import torch
        from transformers import AutoConfig, AutoModelForCausalLM, AutoModelForImageTextToText, AutoTokenizer
        from transformers import GenerationConfig
        from transformers.utils import logging as hf_logging

        hf_logging.disable_progress_bar()  # a server log wants no progress bars
        self.threads = threads
        self.tokenizer = AutoTokenizer.from_pretrained(model_dir)
        config = AutoConfig.from_pretrained(model_dir)
        vision_language = is_vision_language(model_dir)
        loader = AutoModelForImageTextToText if vision_language else AutoModelForCausalLM
        # SDPA's causal kernel never materialises the attention matrix; eager attention would
        # build a 22k x 22k one per head for a harness's first prompt.
        self.model = loader.from_pretrained(model_dir, dtype=torch.float32, attn_implementation="sdpa").eval()
        check_full_attention(self.model.config)
        # Reads the images of chat requests; None: a text model (images become placeholders).
        self.vision = ImageExpander(model_dir, config, self.tokenizer) if vision_language else None
        self.max_model_len = int(config.get_text_config(decoder=True).max_position_embeddings)
        generation = GenerationConfig.from_pretrained(model_dir)
        eos = generation.eos_token_id
        self.eos_token_ids = frozenset(eos if isinstance(eos, list) else [eos])
        self._added_ids = frozenset(self.tokenizer.added_tokens_decoder)  # special and tool tags
        # Like vLLM, settings the checkpoint's generation_config.json sets explicitly are the
        # defaults for requests that leave them out (max_new_tokens becomes max_tokens).
        explicit = generation.to_diff_dict()
        self.default_max_tokens: int | None = explicit.get("max_new_tokens")
        self.default_sampling: dict[str, float] = {
            key: explicit[key] for key in NEUTRAL_SAMPLING if explicit.get(key) is not None
        }
        self.cache = KVCacheStore(cache_budget_bytes, cache_entries)
        self._entry: CacheEntry | None = None  # the conversation the current job runs on
        self._prompt: VisionPrompt | None = None  # its keys, positions and images (vision-language models)

    def run(self, job: Job) -> None:
        import torch

        self._entry = None
        with torch.inference_mode():
            if self.vision is not None:
                self._prompt = VisionPrompt(self.model, job.prompt_ids, job.vision, self.vision.pad_id)
            try:
                self._run(job)
            except BaseException:
                if self._entry is not None:
                    self.cache.discard(self._entry)  # a forward pass may have stopped half-way
                raise
            finally:
                if self._entry is not None:
                    self.cache.release(self._entry)

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
            cut = ChoiceReply([ids[: params.max_tokens] for ids in reply.candidates], reply.label, reply.error_rate)
            reply = ScriptedReply(choose(self, job.prompt_ids, cut, params.temperature, generator))
        text_only = sorted(ending_ids | self._added_ids)
        logits = self._prefill(job.prompt_ids)
        ahead: list[Any] = []  # logits after each forced token already run, not yet used
        for index in range(params.max_tokens):
            if job.cancelled.is_set():
                return
            logprobs = torch.log_softmax(logits, dim=-1)
            if 0 <= index - reply.sampled_first < len(reply.forced_ids):
                token = reply.forced_ids[index - reply.sampled_first]
                if index == reply.sampled_first:
                    # The forced tokens are known in advance, so they run as one forward pass
                    # instead of one step each: at a harness's 22k-token context a step costs
                    # about as much as a 100-token chunk.
                    ahead = list(self._forward_all(reply.forced_ids[: params.max_tokens - index]))
            else:
                if index < reply.sampled_first:
                    banned = text_only
                else:
                    banned = sorted(ending_ids) if index < params.min_tokens else []
                token, drawn_from = pick_token(logits, params, generator, banned)
                if drawn_from is not None:
                    logprobs = drawn_from
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
                if len(ahead) > 1:  # forced tokens run ahead of a stop: not part of the answer
                    self._rewind(len(self._entry.ids) - len(ahead) + 1)
                return
            logits = ahead.pop(0) if ahead else self._forward([token])

    def prompt_logits(self, prompt_ids: list[int]) -> Any:
        """Logits of every prompt position, [len, vocab], from a pass of their own (the cached
        conversations keep keys and values, not logits); the generation thread calls it."""
        import torch

        if self.vision is not None:
            raise ValueError("prompt_logprobs needs a text model; this checkpoint is vision-language")
        with torch.inference_mode():
            torch.set_num_threads(self.threads)
            return self.model(input_ids=torch.tensor([prompt_ids]), use_cache=False, logits_to_keep=0).logits[0]

    def _prefill(self, prompt_ids: list[int]) -> Any:
        """Logits of the prompt's last position, starting from the best cached conversation."""
        self._entry, reused = self.cache.checkout(self._prompt.keys if self._prompt is not None else prompt_ids)
        return self._forward(prompt_ids[reused:])

    def _forward(self, token_ids: list[int]) -> Any:
        """Run ``token_ids`` after the current cache; logits of the last position."""
        return self._extend(token_ids, all_positions=False)[-1]

    def _forward_all(self, token_ids: list[int]) -> Any:
        """Run ``token_ids`` after the current cache; logits of every position, [len, vocab]."""
        return self._extend(token_ids, all_positions=True)

    def _rewind(self, length: int) -> None:
        """Crop the current cache and its ids back to their first ``length`` tokens."""
        assert self._entry is not None, "_rewind needs a conversation: call _prefill first"
        self._entry.crop(length)

    def _extend(self, token_ids: list[int], *, all_positions: bool) -> Any:
        import torch

        entry = self._entry
        assert entry is not None, "the model runs on a conversation: call _prefill first"
        # From an empty cache the causal kernel needs no mask, so the whole input goes at
        # once; after cached tokens each new one needs a mask row over the whole context,
        # and chunks keep that mask (chunk x context floats) to tens of megabytes.
        size = len(token_ids) if not entry.ids else _CHUNK_AFTER_CACHED
        logits = []
        for start in range(0, len(token_ids), size):
            piece = token_ids[start : start + size]
            # A decode step is made of operations too small to split: with another process
            # on the other core, waiting for a second thread cost 15-90 ms per token against
            # 11 ms on one thread (tiny model, 22k context). Long inputs still use them all.
            torch.set_num_threads(self.threads if len(piece) >= _PARALLEL_FROM else 1)
            at = len(entry.ids)
            inputs = {"input_ids": torch.tensor([piece])} if self._prompt is None else self._prompt.inputs(at, piece)
            out = self.model(
                **inputs,
                past_key_values=entry.cache,
                use_cache=True,
                logits_to_keep=0 if all_positions else 1,
            )
            entry.ids.extend(piece if self._prompt is None else self._prompt.key_of(at, piece))
            logits.append(out.logits[0].float())
        return torch.cat(logits) if len(logits) > 1 else logits[0]


_CHUNK_AFTER_CACHED = 1024
_PARALLEL_FROM = 512  # tokens in one forward pass
