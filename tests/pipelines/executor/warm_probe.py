"""An entry point for the warm-start server in tests: reports what a container sees."""

from __future__ import annotations

import json
import os
import sys
import time


def main(args: list[str]) -> None:
    if args and args[0] == "sleep":
        print("sleeping", flush=True)
        time.sleep(float(args[1]))
        return
    if args and args[0] == "exit":
        sys.exit(int(args[1]))
    if args and args[0] == "raise":
        raise RuntimeError("the probe failed on purpose")
    print(json.dumps({
        "args": args,
        "cwd": os.getcwd(),
        "env": os.environ.get("WARM_PROBE"),
        "leaked": os.environ.get("WARM_PROBE_SERVER_ONLY"),
        "pgid_is_pid": os.getpgid(0) == os.getpid(),
        "stdin": os.readlink("/proc/self/fd/0"),
        "argv0": sys.argv[0],
    }))
