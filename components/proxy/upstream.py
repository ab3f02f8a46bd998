"""The connection to the engine: one pooled HTTP client per replica, and the model list kept fresh.

The model list gives two things a record needs: the model name to send when the proxy
was not told one, and the policy version (checkpoint) the engine is serving. It is read
lazily; only calls made before the first answer wait for it, later refreshes run in the
background at most every ``policy_refresh_s`` seconds.

With engine replicas (``engine.replicas``, several ``--upstream`` addresses) each session
is pinned to one replica by a hash of its id, the same in every proxy, so its calls share
that replica's prefix cache. A replica that does not take a call (refused, reset before
any answer) is set aside for ``REPLICA_DOWN_S``: the call is sent again (``retries.py``)
to the next replica in order, and so are its sessions' later calls.
"""

from __future__ import annotations

import asyncio
import hashlib
import logging
import time
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any, Protocol

import orjson

from components.core.rollout_identity import SESSION_HEADER
from components.engine.cut_route import CUT_ROUTE
from components.proxy.config import ProxyConfig
from components.proxy.errors import ProxyError, undelivered, upstream_exception
from components.proxy.http_client import Response, UpstreamClient

_log = logging.getLogger(__name__)
_MODELS_TIMEOUT_S = 5.0
REPLICA_DOWN_S = 60.0
# The record's tag naming the replica that answered (engine replicas only).
REPLICA_TAG = "upstream_replica"


def pinned_replica(session_id: str, replicas: int) -> int:
    """The replica a session's calls go to while it is up: sha256, so every proxy agrees."""
    return int.from_bytes(hashlib.sha256(session_id.encode()).digest()[:8], "big") % replicas


@dataclass
class _Replica:
    index: int
    url: str
    http: UpstreamClient
    down_until: float = float("-inf")


class SendsToReplica(Protocol):
    """What the upstream reads and notes on a call it sends (``call_record.Call``)."""

    session_id: str
    upstream_replica: int | None


@dataclass(frozen=True)
class ModelsInfo:
    """What the upstream's ``/v1/models`` said: model ids in order and each one's policy version."""

    ids: tuple[str, ...] = ()
    versions: dict[str, str | None] = field(default_factory=dict)

    @property
    def first_id(self) -> str | None:
        return self.ids[0] if self.ids else None

    def policy_version(self, model: str | None) -> str | None:
        if model in self.versions:
            return self.versions[model]
        return self.versions.get(self.ids[0]) if self.ids else None


def parse_models(body: bytes) -> ModelsInfo:
    """Read an OpenAI model list; each entry's version is ``policy_version`` (dev engine) else ``root``.

    Adapters (vLLM lists a LoRA adapter with its base model as ``parent``) come first:
    an engine that serves one serves the policy as that adapter, over frozen base weights.
    """
    data = orjson.loads(body)
    entries = data.get("data") if isinstance(data, dict) else None
    if not isinstance(entries, list):
        raise ValueError("model list has no 'data' array")
    adapters: list[str] = []
    bases: list[str] = []
    versions: dict[str, str | None] = {}
    for entry in entries:
        if isinstance(entry, dict) and isinstance(entry.get("id"), str):
            version = entry.get("policy_version") or entry.get("root")
            (adapters if entry.get("parent") else bases).append(entry["id"])
            versions[entry["id"]] = None if version is None else str(version)
    return ModelsInfo(tuple(adapters + bases), versions)


class Upstream:
    """The proxy's only client of the engine; create it inside the running event loop."""

    def __init__(self, config: ProxyConfig) -> None:
        self.base_url = config.upstream  # every replica's, for messages
        self.timeout_s = config.upstream_timeout_s
        self._refresh_s = config.policy_refresh_s
        key = config.upstream_api_key
        self._key = None if key is None else key.get_secret_value()
        headers = {"Accept": "application/json, text/event-stream"}
        if self._key is not None and config.teacher_api == "messages":  # Anthropic's header for its keys
            headers["x-api-key"] = self._key
        elif self._key is not None:  # only the proxy's own upstream key goes out, never the harness's
            headers["Authorization"] = f"Bearer {self._key}"
        self._replicas = [
            _Replica(index, url, UpstreamClient(
                url,
                limit=config.upstream_connections,
                connect_timeout_s=config.upstream_connect_timeout_s,
                read_timeout_s=config.upstream_timeout_s,
                headers=headers,
                unix_socket=None if socket is None else str(socket),
            ))
            for index, (url, socket) in enumerate(zip(config.upstreams, config.upstream_sockets))
        ]  # fmt: skip
        self._models: ModelsInfo | None = None
        self._models_read_at = float("-inf")
        self._models_task: asyncio.Task[None] | None = None

    async def post_chat(self, body: bytes, call: SendsToReplica) -> Response:
        """Send a chat request for ``call`` (to its session's replica); the caller reads and releases the response."""
        return await self._post("/v1/chat/completions", body, call)

    async def post_completions(self, body: bytes, call: SendsToReplica) -> Response:
        """Send a text-completion request (a token-id prompt); the caller reads and releases the response."""
        return await self._post("/v1/completions", body, call)

    async def post_messages(self, body: bytes, call: SendsToReplica, headers: Mapping[str, str]) -> Response:
        """Pass a Messages request through to a Messages teacher, with the harness's ``anthropic-*`` headers."""
        return await self._post("/v1/messages", body, call, headers)

    async def tokenize(self, body: dict[str, Any]) -> dict[str, Any]:
        """vLLM's ``POST /tokenize`` (a chat rendered by the engine's template); ProxyError on failure."""
        try:
            status, payload = await self._exchange("POST", "/tokenize", orjson.dumps(body), self.timeout_s)
        except OSError as exc:
            raise self.failure(exc) from exc
        try:
            data = orjson.loads(payload) if status == 200 else None
        except orjson.JSONDecodeError:
            data = None
        if not isinstance(data, dict) or not isinstance(data.get("tokens"), list):
            problem = f"{self.base_url}/tokenize answered {status}: {payload[:200]!r}"
            raise ProxyError(502, problem, code="upstream_invalid")
        return data

    async def _post(self, path: str, body: bytes, call: SendsToReplica, headers: Mapping[str, str] | None = None) -> Response:
        replica = self._replica_for(call.session_id)
        if len(self._replicas) > 1:
            call.upstream_replica = replica.index
        try:
            return await replica.http.request("POST", path, body, headers={**(headers or {}), SESSION_HEADER: call.session_id})
        except OSError as exc:  # TimeoutError and ConnectionError are OSErrors
            err = self.failure(exc)
            err.undelivered = undelivered(exc)  # no response header came: the caller may send it again
            if err.undelivered and len(self._replicas) > 1:
                self._set_aside(replica, call.session_id, exc)
            raise err from exc

    def _replica_for(self, session_id: str) -> _Replica:
        """The session's pinned replica, or the next one up after it (all down: the pinned one)."""
        count, now = len(self._replicas), time.monotonic()
        start = pinned_replica(session_id, count) if count > 1 and session_id else 0
        for step in range(count):
            replica = self._replicas[(start + step) % count]
            if replica.down_until <= now:
                return replica
        return self._replicas[start]

    def _set_aside(self, replica: _Replica, session_id: str, exc: BaseException) -> None:
        if replica.down_until <= time.monotonic():
            _log.warning(
                "engine replica %d (%s) did not take a call of session %s (%s): its sessions go to the next replica "
                "for %.0f s", replica.index, replica.url, session_id, type(exc).__name__, REPLICA_DOWN_S,
            )  # fmt: skip
        replica.down_until = time.monotonic() + REPLICA_DOWN_S

    def failure(self, exc: BaseException) -> ProxyError:
        """The client-facing error for a failure while reading an upstream answer."""
        return self._redacted(upstream_exception(exc, self.base_url, self.timeout_s))

    def _redacted(self, err: ProxyError) -> ProxyError:
        # An exception's repr can carry the request's headers; the upstream key must not reach an answer.
        if self._key is not None and self._key in err.message:
            err.message = err.message.replace(self._key, "<upstream key>")
            err.args = (err.message,)
        return err

    async def get_models(self) -> tuple[int, bytes]:
        """Forward ``GET /v1/models``; a successful answer also refreshes the cached list."""
        try:
            async with asyncio.timeout(_MODELS_TIMEOUT_S):
                status, body = await self._exchange("GET", "/v1/models", b"", _MODELS_TIMEOUT_S)
        except OSError as exc:
            raise self._redacted(upstream_exception(exc, self.base_url, _MODELS_TIMEOUT_S)) from exc
        if status == 200:
            self._remember_models(body)
        return status, body

    async def get_cut(self) -> tuple[int, bytes]:
        """Forward ``GET CUT_ROUTE``: the serve step's straggler cut (components/engine/cut_route.py)."""
        try:
            async with asyncio.timeout(_MODELS_TIMEOUT_S):
                return await self._exchange("GET", CUT_ROUTE, b"", _MODELS_TIMEOUT_S)
        except OSError as exc:
            raise self._redacted(upstream_exception(exc, self.base_url, _MODELS_TIMEOUT_S)) from exc

    async def _exchange(self, method: str, path: str, body: bytes, read_timeout_s: float) -> tuple[int, bytes]:
        # Reads (models, the cut, tokenize) are the same on every replica: the first one up answers.
        resp = await self._replica_for("").http.request(method, path, body, read_timeout_s=read_timeout_s)
        try:
            return resp.status, await resp.read()
        finally:
            resp.release()

    async def models(self) -> ModelsInfo | None:
        """The cached model list; waits only while no answer has ever arrived."""
        if self._models_task is None and time.monotonic() - self._models_read_at >= self._refresh_s:
            self._models_read_at = time.monotonic()
            self._models_task = asyncio.create_task(self._refresh_models())
        if self._models is None and self._models_task is not None:
            await asyncio.shield(self._models_task)
        return self._models

    def policy_version(self, model: str | None) -> str | None:
        """The checkpoint the upstream last said it serves for ``model`` (never waits)."""
        return self._models.policy_version(model) if self._models is not None else None

    async def close(self) -> None:
        if self._models_task is not None:
            self._models_task.cancel()
        for replica in self._replicas:
            await replica.http.close()

    async def _refresh_models(self) -> None:
        try:
            await self.get_models()
        except ProxyError as exc:
            _log.warning("could not read the upstream model list: %s", exc.message)
        finally:
            self._models_task = None

    def _remember_models(self, body: bytes) -> None:
        try:
            self._models = parse_models(body)
        except (ValueError, orjson.JSONDecodeError) as exc:
            _log.warning("upstream %s/v1/models returned an unreadable model list: %s", self.base_url, exc)
        self._models_read_at = time.monotonic()


def models_list_body(model: str) -> dict[str, Any]:
    """A one-entry OpenAI model list, for answering locally when the upstream cannot."""
    return {"object": "list", "data": [{"id": model, "object": "model", "created": 0, "owned_by": "openforge"}]}
