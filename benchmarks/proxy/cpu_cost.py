"""Instructions the recording proxy executes per call, counted by callgrind: a figure other work cannot move.

    .venv/bin/python -m benchmarks.proxy.cpu_cost                 # streamed calls, about a minute
    .venv/bin/python -m benchmarks.proxy.cpu_cost --no-stream
    .venv/bin/python -m benchmarks.proxy.cpu_cost --keep .bench/proxy-cpu   # then callgrind_annotate a profile

Latency at one client is mostly process wake-ups and CPU time moves with whatever else
shares the cores; the instructions a call executes do not. The fast upstream, the proxy
and one client run on one event loop in a worker process under valgrind's callgrind.
Each timed block (``calls`` sequential calls, directly or through the proxy) runs inside
a ctypes callback, and callgrind counts only inside that C function (``--toggle-collect``)
and writes one profile per block (``--dump-after``): start-up, imports and warm-up are
left out. The proxy's cost per call is the proxied block minus the direct one; repeats
show how little the count moves (garbage collection and hash seeds are the only noise).
"""

from __future__ import annotations

import argparse
import asyncio
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
from dataclasses import dataclass
from pathlib import Path

_REPO = Path(__file__).resolve().parents[2]
_TRAMPOLINE = "_CallPythonObject"  # ctypes' C entry for a Python callback: the counted region
_WARMUP_CALLS = 50


@dataclass(frozen=True)
class CallCost:
    """Instructions per call in each repeat, for the direct and the proxied path."""

    stream: bool
    calls: int
    direct: list[float]
    proxied: list[float]

    @property
    def added(self) -> float:
        return statistics.median(self.proxied) - statistics.median(self.direct)

    def summary(self) -> str:
        def kinstr(values: list[float]) -> str:
            return "/".join(f"{v / 1000:,.0f}" for v in values)

        return (
            f"{'streamed' if self.stream else 'non-streamed'}, {self.calls:,} calls x {len(self.direct)} repeats, "
            f"thousand instructions per call: direct {kinstr(self.direct)}, through the proxy "
            f"{kinstr(self.proxied)}; the proxy adds {self.added / 1000:,.0f}"
        )


def measure(calls: int = 100, repeats: int = 2, stream: bool = True, keep: Path | None = None) -> CallCost:
    """Count, under callgrind, ``repeats`` blocks of ``calls`` calls on each path."""
    if shutil.which("valgrind") is None:
        raise RuntimeError("valgrind is not installed (apt-get install valgrind); it counts the instructions")
    with tempfile.TemporaryDirectory(prefix="proxy-cpu-") as tmp:
        profiles = keep or Path(tmp)
        profiles.mkdir(parents=True, exist_ok=True)
        argv = ["valgrind", "--tool=callgrind", "--collect-atstart=no", f"--toggle-collect={_TRAMPOLINE}",
                f"--dump-after={_TRAMPOLINE}", f"--callgrind-out-file={profiles / 'callgrind.out'}",
                sys.executable, "-m", "benchmarks.proxy.cpu_cost", "--worker", "--calls", str(calls),
                "--repeats", str(repeats)] + ([] if stream else ["--no-stream"])
        # A fixed hash seed makes set and dict layouts, and so the counts, repeat from run to run.
        env = {**os.environ, "PYTHONHASHSEED": "0"}
        done = subprocess.run(argv, cwd=_REPO, env=env, capture_output=True, text=True)
        if done.returncode != 0:
            raise RuntimeError(f"the callgrind worker failed (exit {done.returncode}): {done.stderr.strip()[-800:]}")
        totals = [_total(profiles / f"callgrind.out.{n}") / calls for n in range(1, 2 * repeats + 1)]
    return CallCost(stream=stream, calls=calls, direct=totals[0::2], proxied=totals[1::2])


def _total(profile: Path) -> int:
    for line in profile.read_text().splitlines():
        if line.startswith("totals:"):
            return int(line.split()[1])
    raise RuntimeError(f"{profile} has no totals line; is it a callgrind profile?")


def _worker(calls: int, repeats: int, stream: bool) -> None:
    """Under callgrind: serve, warm up, then run each counted block through the ctypes trampoline."""
    import ctypes

    import uvloop

    loop = uvloop.new_event_loop()
    asyncio.set_event_loop(loop)
    with tempfile.TemporaryDirectory(prefix="proxy-cpu-out-") as out:
        servers = loop.run_until_complete(_Servers.start(Path(out), stream))
        try:
            for base in servers.paths:
                loop.run_until_complete(servers.block(base, _WARMUP_CALLS, "warm-up"))
            for r in range(repeats):
                for base in servers.paths:  # direct then proxied: the order the parent reads the profiles in

                    def counted(base: str = base, r: int = r) -> None:
                        loop.run_until_complete(servers.block(base, calls, f"repeat {r}"))

                    ctypes.CFUNCTYPE(None)(counted)()
        finally:
            loop.run_until_complete(servers.stop())
            loop.close()


class _Servers:
    """The fast upstream, a recording proxy in front of it, and one keep-alive client."""

    def __init__(self, upstream, upstream_url: str, proxy, http, stream: bool) -> None:
        from benchmarks.proxy.loadgen import RequestBodies

        self._upstream, self._proxy, self._http, self._stream = upstream, proxy, http, stream
        self._bodies = RequestBodies()
        # Direct first; through the proxy, one session file, as one rollout makes its calls.
        self.paths = (upstream_url, f"{proxy.url}/s/cpu")

    @classmethod
    async def start(cls, out: Path, stream: bool) -> "_Servers":
        import aiohttp
        from aiohttp import web

        from benchmarks.proxy.fast_upstream import build_app
        from components.proxy import ProxyConfig, start_proxy

        upstream = web.AppRunner(build_app(), access_log=None)
        await upstream.setup()
        await web.TCPSite(upstream, "127.0.0.1", 0).start()
        host, port = upstream.addresses[0][:2]
        upstream_url = f"http://{host}:{port}"
        proxy = await start_proxy(ProxyConfig(upstream=upstream_url, out=out, port=0))
        http = aiohttp.ClientSession(connector=aiohttp.TCPConnector(limit=1))
        return cls(upstream, upstream_url, proxy, http, stream)

    async def block(self, base: str, n: int, tag: str) -> None:
        url = f"{base}/v1/chat/completions"
        for k in range(n):
            async with self._http.post(url, data=self._bodies.get(self._stream, f"{tag} {k}")) as resp:
                body = await resp.read()
            if resp.status != 200 or (self._stream and not body.endswith(b"data: [DONE]\n\n")):
                raise RuntimeError(f"call {k} to {url} failed: HTTP {resp.status}: {body[:200]!r}")

    async def stop(self) -> None:
        await self._http.close()
        await self._proxy.stop()
        await self._upstream.cleanup()


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--calls", type=int, default=100, help="calls per counted block")
    parser.add_argument("--repeats", type=int, default=2, help="counted blocks per path")
    parser.add_argument("--no-stream", dest="stream", action="store_false", help="count non-streamed calls")
    parser.add_argument("--keep", type=Path, help="keep the callgrind profiles here (odd numbers direct, even proxied)")
    parser.add_argument("--worker", action="store_true", help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.worker:
        _worker(args.calls, args.repeats, args.stream)
        return
    print(measure(args.calls, args.repeats, args.stream, args.keep).summary())


if __name__ == "__main__":
    main()
