"""KV caches of recent conversations, reused by the longest common prefix of token ids.

Agent harnesses resend the whole conversation on every call, and a rollout runs several
sessions at once against one engine, each starting with the same ~20k-token system prompt
and tool schemas. Keeping only the previous request's cache (what vLLM's prefix caching
does for one sequence) makes concurrent sessions evict each other on every call, so the
store keeps one entry per recent conversation, least recently used evicted first within a
byte budget. A request continuing an entry's conversation (all its tokens, or its last
prompt and the start of the answer) extends that entry in place; one that shares only a
prefix (another session, a GRPO sibling of the same task) gets its own copy of it, and
the entry it came from stays whole for its own session's next call.
"""

from __future__ import annotations

import threading
from collections import OrderedDict
from dataclasses import asdict, dataclass, field
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from components.engine._kv_layer import GrowingCache


class UnsupportedModel(ValueError):
    """The model's attention layers are not the kind this cache holds; the message says what to do."""


DEFAULT_BUDGET_MIB = 512  # the tiny model takes 1 KiB per token: 16 sessions of 32k tokens
DEFAULT_MAX_ENTRIES = 64  # every request compares its prompt with each entry


def check_full_attention(config: Any) -> None:
    """Cached tokens stay for good, which only full-attention layers want (not sliding windows)."""
    text_config = config.get_text_config(decoder=True)
    kinds = set(getattr(text_config, "layer_types", None) or ["full_attention"])
    if kinds != {"full_attention"}:
        raise UnsupportedModel(
            f"the dev engine caches full-attention layers only; this model has {sorted(kinds)} layers. "
            "Serve it with vLLM (engine.kind: vllm) or turn its sliding window off in config.json."
        )


def _empty_cache() -> GrowingCache:
    from components.engine._kv_layer import GrowingCache  # torch: only once a model runs

    return GrowingCache()


@dataclass
class CacheEntry:
    """Token ids and the KV cache computed for exactly those ids."""

    ids: list[int] = field(default_factory=list)
    cache: GrowingCache = field(default_factory=_empty_cache)
    # Where the last answer starts: a harness resends that answer re-encoded from its text,
    # which often tokenizes differently from what was sampled.
    answer_start: int = 0

    def crop(self, length: int) -> None:
        self.cache.crop(length)
        del self.ids[length:]


@dataclass
class CacheStats:
    hits: int = 0  # requests that started from cached tokens
    misses: int = 0  # requests prefilled from scratch
    copies: int = 0  # hits that copied a prefix out of another conversation's entry
    reused_tokens: int = 0  # prompt tokens not recomputed thanks to a hit
    prefilled_tokens: int = 0  # prompt tokens the model ran on
    evictions: int = 0


class KVCacheStore:
    """Up to ``max_entries`` conversations' caches within ``budget_bytes``.

    The generation thread checks entries out and in; ``snapshot`` may come from another
    thread (the event loop answering /health), hence the lock.
    """

    def __init__(self, budget_bytes: int, max_entries: int) -> None:
        if budget_bytes < 0 or max_entries < 1:
            raise ValueError(
                f"a KV cache store needs a budget >= 0 bytes and at least one entry, not "
                f"{budget_bytes} bytes and {max_entries} entries"
            )
        self.budget_bytes = budget_bytes
        self.max_entries = max_entries
        self.stats = CacheStats()
        self._entries: OrderedDict[int, CacheEntry] = OrderedDict()  # least recently used first
        self._lock = threading.Lock()

    def checkout(self, prompt_ids: list[int]) -> tuple[CacheEntry, int]:
        """The entry to run ``prompt_ids`` on, already cropped to its reusable prefix, and
        that prefix's length. At least the prompt's last token is left to run, for its logits."""
        with self._lock:
            return self._checkout(prompt_ids)

    def _checkout(self, prompt_ids: list[int]) -> tuple[CacheEntry, int]:
        best, source = (0, False), None
        for entry in reversed(self._entries.values()):  # most recent first: it wins ties
            common = min(common_prefix(entry.ids, prompt_ids), len(prompt_ids) - 1)
            # Holding the entry's whole last prompt and the start of its answer, the request
            # continues that conversation; a sibling sent the same prompt has its own answer.
            continues = common == len(entry.ids) or common > entry.answer_start
            key = (common, continues)  # the longest prefix; then one to extend in place
            if key > best:
                best, source = key, entry
        (reuse, continues), stats = best, self.stats
        if source is None or not worth_reusing(reuse, len(prompt_ids)):
            entry, reuse = CacheEntry(), 0
            stats.misses += 1
        elif continues:
            entry = source
            entry.crop(reuse)
            stats.hits += 1
        else:
            entry = CacheEntry(source.ids[:reuse], source.cache.prefix_copy(reuse))
            stats.hits += 1
            stats.copies += 1
        entry.answer_start = len(prompt_ids)
        stats.reused_tokens += reuse
        stats.prefilled_tokens += len(prompt_ids) - reuse
        self._entries[id(entry)] = entry
        self._entries.move_to_end(id(entry))
        return entry, reuse

    def release(self, entry: CacheEntry) -> None:
        """``entry``'s request is done: evict least recently used entries over the limits.
        ``entry`` is the most recently used, so it goes only when it alone is over the budget."""
        with self._lock:
            while self._entries and (len(self._entries) > self.max_entries or self._nbytes() > self.budget_bytes):
                self._entries.popitem(last=False)
                self.stats.evictions += 1

    def discard(self, entry: CacheEntry) -> None:
        """Forget ``entry``: a failed forward pass may have left it half-written."""
        with self._lock:
            self._entries.pop(id(entry), None)

    def snapshot(self) -> dict[str, Any]:
        """Counters and occupancy, for /health and the benchmark."""
        with self._lock:
            stats = self.stats
            requests = stats.hits + stats.misses
            return {
                **asdict(stats),
                "hit_rate": round(stats.hits / requests, 4) if requests else None,
                "entries": len(self._entries),
                "tokens": sum(len(entry.ids) for entry in self._entries.values()),
                "bytes": self._nbytes(),
                "budget_bytes": self.budget_bytes,
                "max_entries": self.max_entries,
            }

    def _nbytes(self) -> int:
        return sum(entry.cache.nbytes for entry in self._entries.values())


def worth_reusing(common: int, prompt_len: int) -> bool:
    """Whether to start from ``common`` cached tokens rather than from nothing.

    From nothing, the model attends with SDPA's causal kernel, which needs no mask. After
    cached tokens every new token needs an explicit mask row over the whole context, and
    on a CPU each attended pair then costs about 2.3 times as much (measured on the tiny
    model: 7.3k new tokens after 14.7k cached took 5.8 s, all 22k from nothing 4.5 s). So a
    prefix pays off only while the new suffix is under about a quarter of the prompt; a
    chat header or another session's first lines in front of a long new prompt do not.
    """
    return common > 0 and common >= _PREFIX_TO_SUFFIX * (prompt_len - common)


_PREFIX_TO_SUFFIX = 3


def common_prefix(a: list[int], b: list[int]) -> int:
    """Length of the longest common prefix, comparing slices in C (prompts run to 64k ids)."""
    n = min(len(a), len(b))
    if a[:n] == b[:n]:
        return n
    lo, hi = 0, n  # a[:lo] == b[:lo] and a[:hi] != b[:hi]
    while hi - lo > 1:
        mid = (lo + hi) // 2
        if a[lo:mid] == b[lo:mid]:
            lo = mid
        else:
            hi = mid
    return lo
