"""Tags that change how training treats a recorded call: side calls and retries.

A *side call* is a model call the harness makes beside the rollout (Claude Code's title
call); it is recorded but is not a turn of the trajectory. A *retry* repeats an earlier
request of the same session byte for byte (same ``request_digest``): the SDK or harness
did not get, or did not accept, the earlier answer. Both attempts stay in the session
file, which logs what happened; the tags make training count the request once, keeping
the attempt whose answer the harness went on with (the one that arrived last).
"""

from __future__ import annotations

from collections import OrderedDict
from typing import Any, Mapping

_MAX_SESSIONS = 4096  # sessions whose recent digests are remembered (least recently used forgotten)
_MAX_DIGESTS = 32  # digests remembered per session: a retry repeats one of the latest requests
_MAX_ATTEMPTS = 8  # attempts remembered per digest
_RETRY_COUNT_HEADER = "x-stainless-retry-count"  # sent by the OpenAI and Anthropic SDKs


def side_call_rule(api: str, request: Mapping[str, Any]) -> str | None:
    """The rule that makes this request a side call, or None for a turn of the rollout."""
    if api == "anthropic.messages":
        output_config = request.get("output_config")
        if not request.get("tools") and isinstance(output_config, Mapping) and output_config.get("format") is not None:
            return "output_config.format without tools"  # Claude Code's session-title call
    return None


def sdk_retry_count(headers: Mapping[str, str]) -> int:
    value = headers.get(_RETRY_COUNT_HEADER, "")
    return int(value) if value.isdigit() else 0


class Attempt:
    """One call of a session, from its arrival to its record."""

    __slots__ = ("_base", "_seq", "_siblings", "index")

    def __init__(self, base: dict[str, Any], seq: int, siblings: list["Attempt"]) -> None:
        self._base = base
        self._seq = seq
        self._siblings = siblings  # every remembered attempt with the same digest, this one included
        self.index: int | None = None  # call_index, once recorded

    def tags(self) -> dict[str, Any]:
        """The record's tags, decided just before it is written."""
        tags = dict(self._base)
        later = [a for a in self._siblings if a._seq > self._seq and a.index is not None]
        earlier = [a for a in self._siblings if a._seq < self._seq and a.index is not None]
        if later:  # a retry overtook this call: the harness went on with the retry's answer
            tags["superseded_by"] = max(later, key=lambda a: a._seq).index
        elif earlier:
            tags["retry_of"] = max(earlier, key=lambda a: a._seq).index
        return tags

    def recorded(self, call_index: int) -> None:
        self.index = call_index


class CallTagger:
    """Remembers the recent request digests of each session (in memory; a restarted proxy
    rebuilds them from the session file with ``restore``)."""

    def __init__(self) -> None:
        self._sessions: OrderedDict[tuple[str, int], OrderedDict[str, list[Attempt]]] = OrderedDict()
        self._arrivals = 0

    def arrive(
        self, session_id: str, api: str, request: Mapping[str, Any], digest: str, headers: Mapping[str, str], attempt: int = 0
    ) -> Attempt:
        base: dict[str, Any] = {}
        if attempt:
            base["attempt"] = attempt  # the rollout runner's retry (/s/<id>/a/<attempt>/...)
        rule = side_call_rule(api, request)
        if rule is not None:
            base["side_call"] = rule
        retries = sdk_retry_count(headers)
        if retries:
            base["retry_count"] = retries
        # A retried rollout starts its conversation over: its first request repeats the
        # failed attempt's, and must not be taken for (or supersede) that attempt's call.
        return self._add(session_id, attempt, digest, base)

    def restore(self, session_id: str, records: list[dict[str, Any]]) -> None:
        """Take a session file's calls as arrivals, in file order, already recorded."""
        for record in records:
            digest, tags = record.get("request_digest"), record.get("tags")
            attempt = tags.get("attempt", 0) if isinstance(tags, dict) else 0
            if isinstance(digest, str) and isinstance(attempt, int):
                self._add(session_id, attempt, digest, {}).recorded(record["call_index"])

    def _add(self, session_id: str, attempt: int, digest: str, base: dict[str, Any]) -> Attempt:
        digests = self._digests((session_id, attempt))
        siblings = digests.pop(digest, None) or []
        digests[digest] = siblings  # most recent last
        if len(digests) > _MAX_DIGESTS:
            digests.popitem(last=False)
        self._arrivals += 1
        arrival = Attempt(base, self._arrivals, siblings)
        siblings.append(arrival)
        del siblings[:-_MAX_ATTEMPTS]
        return arrival

    def _digests(self, key: tuple[str, int]) -> OrderedDict[str, list[Attempt]]:
        digests = self._sessions.pop(key, None)
        if digests is None:
            digests = OrderedDict()
        self._sessions[key] = digests
        if len(self._sessions) > _MAX_SESSIONS:
            self._sessions.popitem(last=False)
        return digests
