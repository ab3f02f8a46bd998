"""What /proc says about an environment's processes: which are alive, and where their sockets go.

Teardown must leave nothing running, and a browser must not reach past 127.0.0.1; both are
checked here from /proc rather than trusted, because Chromium and Xvfb fork helpers the
launcher never sees (zygotes, renderers, the network service, xkbcomp).
"""

from __future__ import annotations

import ipaddress
import os
import signal
import time
from pathlib import Path

_PROC = Path("/proc")
IPAddress = ipaddress.IPv4Address | ipaddress.IPv6Address
_SOCKET_TABLES = ("tcp", "tcp6", "udp", "udp6")


def pids_with(marker: str) -> list[int]:
    """Live processes whose command line contains ``marker`` (a profile dir, a display), zombies excluded."""
    found = []
    for entry in _PROC.iterdir():
        if not entry.name.isdigit() or int(entry.name) == os.getpid():
            continue
        try:
            cmdline = (entry / "cmdline").read_bytes().replace(b"\0", b" ").decode(errors="replace")
            state = (entry / "stat").read_text().rsplit(")", 1)[1].split()[0]
        except OSError:
            continue  # gone while we looked
        if marker in cmdline and state != "Z":
            found.append(int(entry.name))
    return sorted(found)


def pids_in_sessions(session_ids: set[int]) -> list[int]:
    """Live processes in any of ``session_ids``: what is left of programs started with ``start_new_session``."""
    found = []
    for entry in _PROC.iterdir():
        if not entry.name.isdigit():
            continue
        try:
            fields = (entry / "stat").read_text().rsplit(")", 1)[1].split()
        except OSError:
            continue
        # After the command name: state, ppid, pgrp, session.
        if int(fields[3]) in session_ids and fields[0] != "Z":
            found.append(int(entry.name))
    return sorted(found)


def kill_and_wait(pids: list[int], timeout_s: float = 5.0) -> list[int]:
    """SIGKILL ``pids``; the ones still alive after ``timeout_s`` (empty when all are gone)."""
    for pid in pids:
        try:
            os.kill(pid, signal.SIGKILL)
        except ProcessLookupError:
            pass
    deadline = time.monotonic() + timeout_s
    alive = pids
    while alive and time.monotonic() < deadline:
        alive = [pid for pid in alive if is_running(pid)]
        if alive:
            time.sleep(0.02)
    return alive


def is_running(pid: int) -> bool:
    """Alive and not a zombie (an orphan's zombie may linger where PID 1 does not reap)."""
    try:
        return (_PROC / str(pid) / "stat").read_text().rsplit(")", 1)[1].split()[0] != "Z"
    except OSError:
        return False


def outside_connections(pids: list[int]) -> list[str]:
    """``"tcp 192.0.2.7:443"``-style remote ends, other than loopback, of the sockets ``pids`` hold."""
    return sorted({f"{table} {host}:{port}" for table, host, port in remote_endpoints(pids) if not host.is_loopback})


def remote_endpoints(pids: list[int]) -> set[tuple[str, IPAddress, int]]:
    """``(table, host, port)`` of every socket of ``pids`` that has a remote end.

    A socket counts once it has a remote address (a TCP connect in progress, a connected
    UDP socket), so an attempt shows even when the closed network refuses it at once.
    """
    inodes = _socket_inodes(pids)
    remotes = set()
    for table in _SOCKET_TABLES:
        try:
            lines = (_PROC / "net" / table).read_text().splitlines()[1:]
        except OSError:
            continue
        for line in lines:
            fields = line.split()
            if fields[9] not in inodes:
                continue
            host, port = _decode_address(fields[2])
            if port != 0 and not host.is_unspecified:
                remotes.add((table, host, port))
    return remotes


def _socket_inodes(pids: list[int]) -> set[str]:
    inodes = set()
    for pid in pids:
        try:
            fds = list((_PROC / str(pid) / "fd").iterdir())
        except OSError:
            continue
        for fd in fds:
            try:
                target = os.readlink(fd)
            except OSError:
                continue
            if target.startswith("socket:["):
                inodes.add(target[8:-1])
    return inodes


def _decode_address(text: str) -> tuple[IPAddress, int]:
    # The kernel prints each 32-bit word of the address in host (little-endian) order.
    hex_host, hex_port = text.split(":")
    raw = b"".join(bytes.fromhex(hex_host[i : i + 8])[::-1] for i in range(0, len(hex_host), 8))
    host = ipaddress.ip_address(raw)
    if isinstance(host, ipaddress.IPv6Address) and host.ipv4_mapped is not None:
        host = host.ipv4_mapped
    return host, int(hex_port, 16)
