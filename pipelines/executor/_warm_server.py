"""The warm-start server: forks `openforge` containers from a process that has imported them.

    python -m pipelines.executor._warm_server SOCKET ENTRY MODULE...

It imports MODULE..., listens on the Unix socket SOCKET and prints ``ready``. Each
connection sends one JSON line ``{"args", "cwd", "env", "log"}``; the server forks a
child that calls ENTRY (``module:function``; whoever starts the server names it, since
the executor never imports the CLI above it) with ARGS and becomes what ``openforge
ARGS`` would have been in a fresh interpreter (own
session, that cwd and environment, stdout and stderr to the log, stdin from /dev/null)
and answers ``{"pid": N}``, then ``{"exit": CODE}`` when the child ends (negative: killed
by that signal, as ``subprocess`` reports it). When its parent dies the server stops its
children and exits, so a killed run leaves nothing behind. ``_warm.py`` is the client.
"""

from __future__ import annotations

import atexit
import importlib
import json
import os
import selectors
import signal
import socket
import sys
import traceback
from collections.abc import Callable

_PARENT_CHECK_S = 1.0
_REQUEST_TIMEOUT_S = 5.0
_CONTAINER_SIGNALS = {signal.SIGTERM, signal.SIGINT, signal.SIGCHLD}


def main(path: str, entry: str, modules: list[str]) -> None:
    module_name, _, function = entry.partition(":")
    run = getattr(importlib.import_module(module_name), function)
    for name in modules:
        try:
            importlib.import_module(name)
        except Exception as exc:  # noqa: BLE001 - a missing extra only makes its users start slower
            print(f"warm-start server: skipping {name}: {exc!r}", file=sys.stderr, flush=True)
    listener = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    listener.bind(path)
    listener.listen(64)
    wake_read, wake_write = os.pipe()
    os.set_blocking(wake_write, False)
    signal.set_wakeup_fd(wake_write)
    signal.signal(signal.SIGCHLD, lambda *_: None)  # a handler, so SIGCHLD reaches the wakeup fd
    signal.signal(signal.SIGTERM, lambda *_: sys.exit(0))
    parent = os.getppid()
    children: dict[int, socket.socket] = {}
    selector = selectors.DefaultSelector()
    selector.register(listener, selectors.EVENT_READ, "accept")
    selector.register(wake_read, selectors.EVENT_READ, "reap")
    print("ready", flush=True)
    try:
        while os.getppid() == parent:
            for key, _ in selector.select(_PARENT_CHECK_S):
                if key.data == "accept":
                    conn, _ = listener.accept()
                    _spawn(run, conn, children, listener, wake_read, wake_write)
                else:
                    os.read(wake_read, 4096)
            _reap(children)
    finally:
        for pid in children:  # the run is gone: its containers go with it
            try:
                os.killpg(pid, signal.SIGKILL)
            except OSError:
                pass
        os.unlink(path)


def _spawn(run: Callable[[list[str]], None], conn: socket.socket, children: dict[int, socket.socket], *inherited: object) -> None:
    conn.settimeout(_REQUEST_TIMEOUT_S)  # a silent client must not stall every other start
    try:
        request = json.loads(conn.makefile("rb").readline())
        args, cwd, env, log = request["args"], request["cwd"], request["env"], request["log"]
    except (ValueError, KeyError, TypeError, OSError) as exc:  # socket.timeout is an OSError
        _send(conn, {"error": f"bad warm-start request: {exc!r}"})
        conn.close()
        return
    # Signals wait until the child has a fresh process's handlers: a SIGTERM sent right
    # after the start must kill it, not run the server's handler in the child.
    signal.pthread_sigmask(signal.SIG_BLOCK, _CONTAINER_SIGNALS)
    settled_read, settled_write = os.pipe()
    pid = os.fork()
    if pid == 0:
        os.setsid()  # its own process group, as `start_new_session=True` gives a fresh process
        signal.set_wakeup_fd(-1)
        for sig in (signal.SIGCHLD, signal.SIGTERM):
            signal.signal(sig, signal.SIG_DFL)
        signal.signal(signal.SIGINT, signal.default_int_handler)
        for other in (*children.values(), *inherited, settled_read, settled_write):
            _close(other)
        signal.pthread_sigmask(signal.SIG_UNBLOCK, _CONTAINER_SIGNALS)
        _become_container(run, args, cwd, env, log, conn)
    signal.pthread_sigmask(signal.SIG_UNBLOCK, _CONTAINER_SIGNALS)
    # Answer only once the child leads its own group: a stop sent at once must find it.
    os.close(settled_write)
    os.read(settled_read, 1)
    os.close(settled_read)
    children[pid] = conn
    _send(conn, {"pid": pid})


def _become_container(
    run: Callable[[list[str]], None], args: list[str], cwd: str, env: dict[str, str], log: str, conn: socket.socket
) -> None:
    """Turn this fork into ``openforge ARGS``; never returns."""
    code = 1
    try:
        conn.close()
        os.chdir(cwd)
        os.environ.clear()
        os.environ.update(env)
        out = os.open(log, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o644)
        null = os.open(os.devnull, os.O_RDONLY)
        os.dup2(null, 0)
        os.dup2(out, 1)
        os.dup2(out, 2)
        os.close(out)
        os.close(null)
        _reseed()
        sys.argv = ["openforge", *args]
        run(args)
        code = 0
    except SystemExit as exc:
        code = exc.code if isinstance(exc.code, int) else (0 if exc.code is None else 1)
    except BaseException:
        traceback.print_exc()
    finally:
        atexit._run_exitfuncs()  # what a fresh interpreter runs on exit (log flushes, temp dirs)
        for stream in (sys.stdout, sys.stderr):
            try:
                stream.flush()
            except (OSError, ValueError):
                pass
        os._exit(code)


def _reseed() -> None:
    """A fresh interpreter seeds numpy's global generator from the OS; a fork would share one."""
    numpy = sys.modules.get("numpy")
    if numpy is not None:
        numpy.random.seed()


def _reap(children: dict[int, socket.socket]) -> None:
    while children:
        try:
            pid, status = os.waitpid(-1, os.WNOHANG)
        except ChildProcessError:
            return
        if pid == 0:
            return
        conn = children.pop(pid, None)
        if conn is not None:
            _send(conn, {"exit": os.waitstatus_to_exitcode(status)})
            conn.close()


def _send(conn: socket.socket, message: dict) -> None:
    try:
        conn.sendall(json.dumps(message).encode() + b"\n")
    except OSError:
        pass  # the client went away; the child runs on and is reaped all the same


def _close(thing: object) -> None:
    try:
        thing.close() if hasattr(thing, "close") else os.close(thing)  # type: ignore[arg-type]
    except OSError:
        pass


if __name__ == "__main__":
    main(sys.argv[1], sys.argv[2], sys.argv[3:])
