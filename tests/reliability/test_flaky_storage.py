"""The artifact store and a pipeline step over an S3 that fails every few requests.

A loopback forwarder sits in front of moto's S3 server and, deterministically on every
FAULT_EVERY-th request, answers 500 InternalError or 503 SlowDown (S3's XML error bodies)
or drops the connection, before forwarding the request or after S3 applied it. The store's
own retries (components/core/storage.py: botocore standard mode) must carry every
operation and the score step through, with the right bytes and no extra objects.
"""

from __future__ import annotations

import hashlib
import json
import time
from collections import Counter, defaultdict
from pathlib import Path

import aiohttp
import boto3
import pytest
from aiohttp import web

from components.core.config import ExperimentConfig
from components.core.storage import LocalStore, RunLayout, S3Store, get_dir, put_dir
from components.reward.step import score_iteration
from tests.components.reward.conftest import _call, _outcome
from tests.conftest import BUCKET
from tests.reliability._faults import BackgroundServer

FAULT_EVERY = 3
# In this order, with every 3rd request failing, two PUTs (a checkpoint file and rewards.json,
# the step's done-marker) lose their connection after S3 applied them: the retried-PUT case.
FAULTS = ("503 SlowDown", "drop before forwarding", "drop after S3 applied it", "500 InternalError")
_ERRORS = {"500 InternalError": (500, "InternalError", "We encountered an internal error. Please try again."),
           "503 SlowDown": (503, "SlowDown", "Please reduce your request rate.")}  # fmt: skip
_NOT_FORWARDED = {"host", "content-length", "transfer-encoding", "connection", "expect"}


class FlakyS3:
    """Forwards S3 requests to ``target``, failing every ``every``-th one (the kind cycles through FAULTS)."""

    def __init__(self, target: str, every: int) -> None:
        self.target, self.every = target, every
        self.requests = 0
        self.injected: Counter[str] = Counter()
        self.applied_puts: dict[str, list[str]] = defaultdict(list)  # object path -> sha256 of each PUT S3 applied
        self._http: aiohttp.ClientSession | None = None

    def app(self) -> web.Application:
        app = web.Application(client_max_size=2**30)
        app.router.add_route("*", "/{tail:.*}", self._handle)
        app.on_startup.append(self._open)
        app.on_cleanup.append(self._close)
        return app

    async def _open(self, _: web.Application) -> None:
        self._http = aiohttp.ClientSession(auto_decompress=False)

    async def _close(self, _: web.Application) -> None:
        await self._http.close()

    async def _handle(self, request: web.Request) -> web.StreamResponse:
        self.requests += 1
        body = await request.read()
        fault = FAULTS[(self.requests // self.every) % len(FAULTS)] if self.requests % self.every == 0 else None
        if fault:
            self.injected[fault] += 1
        if fault in _ERRORS:
            status, code, message = _ERRORS[fault]
            xml = (f'<?xml version="1.0" encoding="UTF-8"?><Error><Code>{code}</Code><Message>{message}</Message>'
                   f"<RequestId>fault-{self.requests}</RequestId></Error>")  # fmt: skip
            return web.Response(status=status, body=xml.encode(), content_type="application/xml")
        if fault == "drop before forwarding":
            return _drop(request)
        headers = {k: v for k, v in request.headers.items() if k.lower() not in _NOT_FORWARDED}
        async with self._http.request(request.method, self.target + request.path_qs, headers=headers, data=body,
                                      allow_redirects=False) as resp:  # fmt: skip
            payload = await resp.read()
            answer_headers = {k: v for k, v in resp.headers.items() if k.lower() not in _NOT_FORWARDED}
        if request.method == "PUT" and resp.status == 200:
            self.applied_puts[request.path].append(hashlib.sha256(body).hexdigest())
        if fault == "drop after S3 applied it":
            return _drop(request)  # S3 has the object; the client sees a broken connection and retries
        return web.Response(status=resp.status, headers=answer_headers, body=payload)


def _drop(request: web.Request) -> web.Response:
    request.transport.close()  # no status line at all: the client sees the connection end
    return web.Response(status=500)  # never sent


def _bucket_keys(endpoint: str) -> set[str]:
    pages = boto3.client("s3", endpoint_url=endpoint).get_paginator("list_objects_v2").paginate(Bucket=BUCKET)
    return {obj["Key"] for page in pages for obj in page.get("Contents", [])}


def _seed_score_inputs(store) -> None:
    """Plan, outcomes and trajectories of one iteration, as tests/components/reward seeds them."""
    layout = RunLayout("flaky")
    rollouts = [
        {"rollout_id": rid, "task_id": rid[:1], "sample_index": int(rid[-1]), "group_id": f"it0-{rid[:1]}"}
        for rid in ("a-s0", "a-s1", "b-s0", "b-s1")
    ]
    store.put_bytes(layout.plan(0), json.dumps({"iteration": 0, "rollouts": rollouts}).encode())
    for rid, outcome in {"a-s0": _outcome("a-s0", passed=True), "a-s1": _outcome("a-s1", passed=False),
                         "b-s0": _outcome("b-s0", "timeout")}.items():  # fmt: skip  (b-s1 lost)
        store.put_bytes(layout.outcome(0, rid), outcome.model_dump_json().encode())
        store.put_bytes(layout.trajectory(0, rid), (_call(session=rid, completion=(4, 5, 6)).model_dump_json() + "\n").encode())


@pytest.fixture
def flaky(s3_endpoint: str):
    forwarder = FlakyS3(s3_endpoint, FAULT_EVERY)
    server = BackgroundServer(forwarder.app())
    try:
        yield forwarder, server.url, s3_endpoint
    finally:
        server.close()


def test_store_and_score_step_survive_a_failing_s3_with_right_bytes_and_no_extra_objects(flaky, tmp_path: Path) -> None:
    forwarder, flaky_url, moto_url = flaky
    t0 = time.monotonic()
    _seed_score_inputs(S3Store(BUCKET, "runs", endpoint_url=moto_url))  # seeded straight into S3: no faults, not counted
    seeded = _bucket_keys(moto_url)
    store = S3Store(BUCKET, "runs", endpoint_url=flaky_url)

    # Single objects: put, get, exists, list.
    blobs = {"ops/a.txt": b"hello", "ops/b/c.bin": bytes(range(256)) * 64, "ops/empty": b""}
    for key, data in blobs.items():
        store.put_bytes(key, data)
    assert {key: store.get_bytes(key) for key in blobs} == blobs
    assert all(store.exists(key) for key in blobs) and not store.exists("ops/missing")
    assert store.list("ops/") == sorted(blobs)

    # Folders: put_dir, then get_dir into a fresh place.
    local = tmp_path / "ckpt"
    files = {"model.safetensors": b"\x00\x01" * 5000, "config.json": b"{}", "tok/vocab.txt": "é\n".encode() * 100}
    for name, data in files.items():
        (local / name).parent.mkdir(parents=True, exist_ok=True)
        (local / name).write_bytes(data)
    assert put_dir(store, "ckpt/00001", local) == sorted(f"ckpt/00001/{name}" for name in files)
    back = get_dir(store, "ckpt/00001", tmp_path / "back")
    assert {p.relative_to(tmp_path / "back").as_posix(): p.read_bytes() for p in back} == files

    # One real pipeline step end to end; the same step over a local copy says what it must write.
    config = ExperimentConfig(name="flaky", tasks={"source": "tasks"}, rollout={"samples_per_task": 2},
                              storage={"uri": f"s3://{BUCKET}/runs", "endpoint_url": flaky_url})  # fmt: skip
    report = score_iteration(config, 0, store)
    local_store = LocalStore(tmp_path / "reference")
    _seed_score_inputs(local_store)
    expected = score_iteration(config, 0, local_store)
    layout = RunLayout("flaky")
    assert report == expected
    for key in (layout.rewards(0), layout.metrics(0)):
        assert store.get_bytes(key) == local_store.get_bytes(key)

    # The faults happened, every kind of them.
    assert set(forwarder.injected) == set(FAULTS), forwarder.injected
    # Nothing written twice: the bucket holds exactly the expected objects, no more...
    written = {f"runs/{key}" for key in [*blobs, *(f"ckpt/00001/{name}" for name in files),
                                         layout.rewards(0), layout.metrics(0)]}  # fmt: skip
    assert _bucket_keys(moto_url) == seeded | written
    # ...and a key S3 received more than once always received the same bytes. That happens
    # when the connection dropped after S3 applied a PUT: the client cannot tell that from a
    # PUT that never arrived, so it sends it again. Keys are deterministic (RunLayout) and a
    # PUT replaces the whole object, so the repeat leaves one object with the same content,
    # not a second copy, and no reader can see a mix. That is "not written twice".
    applied = {path.removeprefix(f"/{BUCKET}/"): digests for path, digests in forwarder.applied_puts.items()}
    assert set(applied) == written
    assert all(len(set(digests)) == 1 for digests in applied.values()), applied
    repeated = sorted(key for key, digests in applied.items() if len(digests) > 1)
    assert repeated, "no PUT was retried after S3 applied it; change FAULTS' order so the case stays covered"
    print(f"{forwarder.requests} S3 requests, faults injected {dict(forwarder.injected)}, "
          f"PUT applied twice (same bytes) for {repeated}, {time.monotonic() - t0:.1f} s")
