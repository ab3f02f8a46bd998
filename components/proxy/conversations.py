"""Responses conversations kept for ``previous_response_id``.

A Responses client with ``store`` on (Stagehand's computer-use mode) sends only the new
items and names the response they follow; the engine is stateless, so the proxy keeps,
per session, each response's whole conversation (input items, then the output items it
returned) and expands such a call into the full input before translating it. The record
keeps what the harness sent (``request``) and says what was added
(``translation.previous_response``); ``translation.upstream_request`` is the whole
conversation the engine got.

Memory is bounded: entries are forgotten least recently used first once their estimated
size passes ``responses_store_mb``. Each entry is charged the request bodies of its whole
chain (items are shared between the entries of a chain, so this over-counts: the bound is
conservative). A forgotten or unknown id, or one from another session, is a 400: the proxy
cannot invent a conversation. A proxy restart forgets everything.
"""

from __future__ import annotations

from collections import OrderedDict
from dataclasses import dataclass
from typing import Any

from components.proxy.errors import bad_request

_RESPONSES = "responses"


@dataclass(frozen=True)
class Continued:
    """How a call with ``previous_response_id`` was expanded."""

    response_id: str
    call_index: int
    items: int  # input items the proxy put before the ones the harness sent
    refs: dict[str, dict[str, Any]]  # images of those items, already stored (base64 text -> reference)
    cost: int  # estimated bytes of the conversation before this call

    def note(self) -> dict[str, Any]:
        return {"id": self.response_id, "call_index": self.call_index, "items": self.items}


@dataclass(frozen=True)
class _Entry:
    items: list[Any]
    call_index: int
    refs: dict[str, dict[str, Any]]
    cost: int


class Conversations:
    """Per-session Responses conversations, keyed by the response id the proxy returned."""

    def __init__(self, max_mb: float) -> None:
        self._max_bytes = int(max_mb * 2**20)
        self._entries: OrderedDict[tuple[str, str], _Entry] = OrderedDict()
        self._bytes = 0

    def expand(self, session_id: str, api: str, request: dict[str, Any]) -> tuple[dict[str, Any], Continued | None]:
        """The request to translate: as sent, or with the earlier conversation put before its input."""
        if api != _RESPONSES:
            return request, None
        previous = request.get("previous_response_id")
        if previous is None:
            return request, None
        if not isinstance(previous, str):
            raise bad_request("'previous_response_id' must be a string (a response id this proxy returned)",
                              param="previous_response_id")  # fmt: skip
        entry = self._entries.get((session_id, previous))
        if entry is None:
            raise bad_request(
                f"previous_response_id {previous[:80]!r} is not a response this proxy keeps for session {session_id!r}: "
                "it was never returned in this session, was created with store: false, or was forgotten "
                "(proxy restart, or over --responses-store-mb). Send the whole conversation in 'input' instead",
                param="previous_response_id",
            )
        self._entries.move_to_end((session_id, previous))
        items = request["input"]
        if isinstance(items, str):
            items = [{"type": "message", "role": "user", "content": items}]
        expanded = {key: value for key, value in request.items() if key != "previous_response_id"}
        expanded["input"] = entry.items + items
        return expanded, Continued(previous, entry.call_index, len(entry.items), entry.refs, entry.cost)

    def keeps(self, api: str, request: dict[str, Any]) -> bool:
        """Whether a successful answer to this request is kept (Responses, unless store: false)."""
        return api == _RESPONSES and request.get("store") is not False

    def remember(
        self, session_id: str, api: str, request: dict[str, Any], response: dict[str, Any] | None, *,
        call_index: int, refs: dict[str, dict[str, Any]], cost: int,
    ) -> None:  # fmt: skip
        """Keep a successful response's conversation (``request``: the expanded one) for later calls."""
        if response is None or not self.keeps(api, request):
            return  # store: false asks the server not to keep the response (Codex)
        response_id = response.get("id")
        output = response.get("output")
        if not isinstance(response_id, str) or not isinstance(output, list):
            return
        items = request["input"]
        if isinstance(items, str):
            items = [{"type": "message", "role": "user", "content": items}]
        key = (session_id, response_id)
        old = self._entries.pop(key, None)
        if old is not None:
            self._bytes -= old.cost
        self._entries[key] = _Entry(items + output, call_index, refs, cost)
        self._bytes += cost
        while self._bytes > self._max_bytes and self._entries:
            _, dropped = self._entries.popitem(last=False)
            self._bytes -= dropped.cost
