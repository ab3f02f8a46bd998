"""System calls the recording proxy makes per call, counted by strace: the kernel side callgrind cannot see.

    .venv/bin/python -m benchmarks.proxy.syscalls                 # streamed calls
    .venv/bin/python -m benchmarks.proxy.syscalls --no-stream

At one client a proxy hop's latency is mostly wake-ups: each send is a segment the next
process may wake for, each poll an event-loop iteration. The fast upstream and the proxy
run as processes of their own, as in ``make bench-proxy``; after a warm-up, ``strace -c``
attaches to the proxy for ``calls`` sequential calls from one client and the counts are
divided by the calls. Counts are exact when every call takes the same path; timing moves
only the polls (a read that finds its data already there needs none).
"""

from __future__ import annotations

import argparse
import shutil
import signal
import subprocess
import tempfile
import time
from pathlib import Path

from benchmarks.proxy import servers
from benchmarks.proxy.loadgen import run_loadgen

_SENDS = ("write", "writev", "sendto", "sendmsg")
_RECEIVES = ("read", "readv", "recvfrom", "recvmsg")
_POLLS = ("epoll_wait", "epoll_pwait", "epoll_pwait2")


def count(calls: int = 300, stream: bool = True) -> dict[str, float]:
    """Syscalls per call of a proxy process: every name strace saw, plus ``sends``, ``receives``, ``polls``."""
    if shutil.which("strace") is None:
        raise RuntimeError("strace is not installed (apt-get install strace); it counts the system calls")
    mode = "on" if stream else "off"
    with tempfile.TemporaryDirectory(prefix="proxy-syscalls-") as tmp:
        work = Path(tmp)
        with servers.upstream(work) as upstream, servers.our_proxy(upstream.base_url, work / "out", work) as proxy:
            run_loadgen(proxy.base_url, 1, 100, mode, 20, True, "warm-up", 60)
            summary = work / "strace.txt"
            with subprocess.Popen(["strace", "-f", "-c", "-o", str(summary), "-p", str(proxy.pid)],
                                  stderr=subprocess.PIPE, text=True) as tracer:
                try:
                    _wait_attached(tracer)
                    run_loadgen(proxy.base_url, 1, calls, mode, 0, True, "counted", 120)
                finally:
                    tracer.send_signal(signal.SIGINT)  # strace writes its summary on the way out
                    tracer.wait(30)
            totals = _parse_summary(summary.read_text())
    per_call = {name: n / calls for name, n in sorted(totals.items())}
    for group, names in (("sends", _SENDS), ("receives", _RECEIVES), ("polls", _POLLS)):
        per_call[group] = sum(per_call.get(name, 0.0) for name in names)
    per_call["total"] = sum(n for name, n in per_call.items() if name in totals)
    return per_call


def _wait_attached(tracer: subprocess.Popen) -> None:
    deadline = time.monotonic() + 30
    while time.monotonic() < deadline:
        line = tracer.stderr.readline()
        if "attached" in line:
            return
        if not line and tracer.poll() is not None:
            break
    raise RuntimeError("strace did not attach to the proxy (ptrace may be forbidden here)")


def _parse_summary(text: str) -> dict[str, int]:
    """``strace -c`` table rows: % time, seconds, usecs/call, calls, [errors], syscall."""
    counts: dict[str, int] = {}
    for line in text.splitlines():
        fields = line.split()
        if len(fields) in (5, 6) and fields[-1] != "total" and fields[3].isdigit():
            counts[fields[-1]] = int(fields[3])
    return counts


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--calls", type=int, default=300, help="counted calls")
    parser.add_argument("--no-stream", dest="stream", action="store_false", help="count non-streamed calls")
    args = parser.parse_args()
    per_call = count(args.calls, args.stream)
    kind = "streamed" if args.stream else "non-streamed"
    print(f"{kind}, {args.calls:,} calls from one client, proxy system calls per call: "
          f"{per_call['total']:.1f} ({per_call['sends']:.1f} sends, {per_call['receives']:.1f} receives, "
          f"{per_call['polls']:.1f} polls)")
    detail = {name: n for name, n in per_call.items() if name not in ("sends", "receives", "polls", "total")}
    print("  " + ", ".join(f"{name} {n:.2f}" for name, n in detail.items() if n >= 0.05))  # not start-up's


if __name__ == "__main__":
    main()
