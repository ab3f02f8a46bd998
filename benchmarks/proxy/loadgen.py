"""Load generator: a fixed number of chat-completion calls from N concurrent clients.

Runs as its own process so its CPU use is not charged to the server under test. One
aiohttp session with a shared keep-alive connector; warm-up calls first (connections
opened, caches filled), then the measured calls. Prints one JSON object (``LoadResult``)
as the last line of stdout (or to ``--result FILE``); with ``--progress-every K`` it also prints
``{"progress": calls_done}`` lines while running, so a caller can sample the server's
memory at known call counts. ``run_loadgen`` starts it from another Python process.

Run: ``python -m benchmarks.proxy.loadgen --base http://127.0.0.1:P --clients 64 --calls 10000``.
"""

from __future__ import annotations

import argparse
import asyncio
import subprocess
import sys
import tempfile
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Callable, Literal

import orjson
from pydantic import BaseModel

from benchmarks.proxy.screenshots import ScreenshotBodies, ScreenshotPlan

StreamMode = Literal["off", "on", "mixed"]
_REPO = Path(__file__).resolve().parents[2]

# A short agent turn. The last message is made unique per call (see RequestBodies) so that a
# recording proxy never mistakes a new call for a retry of the previous one.
_MESSAGES = [
    {"role": "system", "content": "You are a careful coding agent. Use the tools you are given; answer briefly."},
    {"role": "user", "content": "List the files in the repository root and tell me which one holds the CLI."},
    {"role": "assistant", "content": "I will look at the tree first."},
    {"role": "user", "content": "pipelines/ components/ docs/ README.md pyproject.toml; call @@"},
]


class LoadResult(BaseModel):
    """What one load run measured; times in milliseconds."""

    clients: int
    stream: StreamMode
    calls: int  # measured calls attempted
    ok: int
    failed: int
    answered: int  # calls, warm-up included, that got an HTTP response: each one a proxy records
    errors: list[str]  # the first few failures, for the report
    wall_s: float
    latency_ms: list[float]
    first_chunk_ms: list[float]  # streamed calls only: request sent -> first body bytes
    request_bytes: int = 0  # bodies of the measured calls that got a 200


@dataclass
class _Tally:
    attempted: int = 0
    ok: int = 0
    answered: int = 0
    errors: list[str] = field(default_factory=list)
    latency_ms: list[float] = field(default_factory=list)
    first_chunk_ms: list[float] = field(default_factory=list)
    request_bytes: int = 0

    def fail(self, why: str) -> None:
        if len(self.errors) < 5:
            self.errors.append(why)


class RequestBodies:
    """Request bodies serialised once, with a slot for a per-call tag spliced in as bytes."""

    def __init__(self) -> None:
        self._parts: dict[bool, tuple[bytes, bytes]] = {}
        for stream in (False, True):
            body: dict = {"model": "bench-model", "messages": _MESSAGES, "max_tokens": 8, "temperature": 0.7}
            if stream:
                body["stream"] = True
                body["stream_options"] = {"include_usage": True}
            head, tail = orjson.dumps(body).split(b"@@")
            self._parts[stream] = (head, tail)

    def get(self, stream: bool, tag: str) -> bytes:
        head, tail = self._parts[stream]
        return head + tag.encode() + tail


def _url(base: str, session_paths: bool, session: str) -> str:
    return f"{base}/s/{session}/v1/chat/completions" if session_paths else f"{base}/v1/chat/completions"


async def _one_call(http, url: str, body: bytes, stream: bool, res: _Tally) -> None:
    res.attempted += 1
    t0 = time.perf_counter()
    try:
        async with http.post(url, data=body, headers={"Content-Type": "application/json"}) as resp:
            res.answered += 1
            if stream:
                head = await resp.content.readany()
                first = time.perf_counter()
                complete = (head + await resp.content.read()).endswith(b"data: [DONE]\n\n")
            else:
                data = await resp.read()
                complete = data.startswith(b"{") and b'"choices"' in data
            elapsed = time.perf_counter() - t0
            if resp.status != 200 or not complete:
                res.fail(f"HTTP {resp.status}, complete body: {complete}")
                return
    except Exception as exc:  # noqa: BLE001 - any failure is a counted error, the run goes on
        res.fail(f"{type(exc).__name__}: {exc}")
        return
    res.ok += 1
    res.request_bytes += len(body)
    res.latency_ms.append(elapsed * 1000)
    if stream:
        res.first_chunk_ms.append((first - t0) * 1000)


async def run_load(
    base: str,
    clients: int,
    calls: int,
    stream: StreamMode = "off",
    warmup: int = 0,
    session_paths: bool = False,
    session_prefix: str = "bench",
    time_limit_s: float = 300.0,
    progress_every: int = 0,
    screenshots: ScreenshotPlan | None = None,
) -> LoadResult:
    """Make ``warmup`` then ``calls`` calls from ``clients`` concurrent clients.

    Client i always uses session ``<prefix>-<i>`` (one rollout per client, as in
    training). Each phase (warm-up, measured) stops early, with fewer calls made, once
    ``time_limit_s`` has passed: a slow server gets fewer calls, not an unbounded run.
    With ``screenshots``, every call (not streamed) carries a PNG screenshot instead
    (``ScreenshotBodies``: warm-up calls take the first screenshots of the plan).
    """
    import aiohttp

    if screenshots is not None and stream != "off":
        raise ValueError("screenshot calls are not streamed (browser agents do not stream): use stream='off'")
    bodies = RequestBodies()
    shots = ScreenshotBodies(screenshots, warmup + calls) if screenshots is not None else None
    connector = aiohttp.TCPConnector(limit=clients)
    timeout = aiohttp.ClientTimeout(total=60)
    async with aiohttp.ClientSession(connector=connector, timeout=timeout, skip_auto_headers=["User-Agent"]) as http:

        async def phase(name: str, n: int, tally: _Tally, first_call: int) -> None:
            counter = iter(range(n))
            deadline = time.perf_counter() + time_limit_s

            async def client(i: int) -> None:
                session = f"{session_prefix}-{i}"
                url = _url(base, session_paths, session)
                for k in counter:
                    if time.perf_counter() > deadline:
                        return
                    is_stream = stream == "on" or (stream == "mixed" and k % 2 == 1)
                    tag = f"{session} {name} {k}"
                    body = bodies.get(is_stream, tag) if shots is None else shots.get(first_call + k, tag)
                    await _one_call(http, url, body, is_stream, tally)
                    if progress_every and (k + 1) % progress_every == 0:
                        print(orjson.dumps({"progress": k + 1}).decode(), flush=True)

            await asyncio.gather(*(client(i) for i in range(clients)))

        warm = _Tally()
        await phase("warmup", warmup, warm, 0)
        tally = _Tally()
        t0 = time.perf_counter()
        await phase("measured", calls, tally, warmup)
        wall_s = time.perf_counter() - t0
    return LoadResult(
        clients=clients, stream=stream, calls=tally.attempted, ok=tally.ok, failed=tally.attempted - tally.ok,
        answered=warm.answered + tally.answered, errors=warm.errors + tally.errors, wall_s=wall_s,
        latency_ms=tally.latency_ms, first_chunk_ms=tally.first_chunk_ms, request_bytes=tally.request_bytes,
    )


def run_loadgen(
    base: str,
    clients: int,
    calls: int,
    stream: StreamMode,
    warmup: int,
    session_paths: bool,
    session_prefix: str,
    time_limit_s: float,
    progress_every: int = 0,
    on_progress: Callable[[int], None] | None = None,
    screenshots: ScreenshotPlan | None = None,
) -> LoadResult:
    """Run the load generator in a process of its own and return what it measured."""
    with tempfile.TemporaryDirectory(prefix="loadgen-") as tmp:
        # The result goes through a file: it can be hundreds of kB, more than a pipe
        # reliably carries from a process whose event loop may leave stdout non-blocking.
        result_path = Path(tmp) / "result.json"
        argv = [sys.executable, "-m", "benchmarks.proxy.loadgen", "--base", base, "--clients", str(clients),
                "--calls", str(calls), "--stream", stream, "--warmup", str(warmup), "--session-prefix",
                session_prefix, "--time-limit", str(time_limit_s), "--progress-every", str(progress_every),
                "--result", str(result_path)]
        if session_paths:
            argv.append("--session-paths")
        if screenshots is not None:
            argv += ["--screenshots", screenshots.model_dump_json()]
        with subprocess.Popen(argv, cwd=_REPO, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True) as proc:
            try:
                for line in proc.stdout:
                    if on_progress is not None and line.startswith('{"progress"'):
                        on_progress(orjson.loads(line)["progress"])
                stderr = proc.stderr.read()
                proc.wait(timeout=30)
            finally:
                if proc.poll() is None:
                    proc.kill()
        if proc.returncode != 0 or not result_path.exists():
            raise RuntimeError(f"load generator failed (exit {proc.returncode}): {stderr.strip()[-500:]}")
        return LoadResult.model_validate_json(result_path.read_bytes())


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--base", required=True, help="server root, e.g. http://127.0.0.1:8000")
    parser.add_argument("--clients", type=int, default=1)
    parser.add_argument("--calls", type=int, default=1000)
    parser.add_argument("--warmup", type=int, default=0)
    parser.add_argument("--stream", choices=["off", "on", "mixed"], default="off")
    parser.add_argument("--session-paths", action="store_true", help="call /s/<session>/v1/... (the recording proxy)")
    parser.add_argument("--session-prefix", default="bench")
    parser.add_argument("--time-limit", type=float, default=300.0, help="seconds; stop early past this")
    parser.add_argument("--progress-every", type=int, default=0)
    parser.add_argument("--result", type=Path, help="write the result JSON here instead of to stdout")
    parser.add_argument("--screenshots", type=ScreenshotPlan.model_validate_json,
                        help="a ScreenshotPlan as JSON: every call carries a PNG screenshot (screenshots.py)")
    args = parser.parse_args()
    import uvloop

    result = uvloop.run(
        run_load(args.base, args.clients, args.calls, args.stream, args.warmup, args.session_paths,
                 args.session_prefix, args.time_limit, args.progress_every, args.screenshots)
    )
    if args.result:
        args.result.write_text(result.model_dump_json())
    else:
        sys.stdout.write(result.model_dump_json() + "\n")


if __name__ == "__main__":
    main()
