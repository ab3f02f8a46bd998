"""Proof that a harness stayed on loopback: every connect()/sendto() it made, traced by strace.

The egress sink only sees traffic that honours the proxy variables; a harness that
ignored them (Node's fetch does by default) would connect straight out. strace sees
every socket address the whole process tree used, whatever library made the call.
"""

from __future__ import annotations

import ipaddress
import re
import shutil
from dataclasses import dataclass
from pathlib import Path

from components.rollout.harnesses import HarnessAdapter, HarnessCommand, HarnessRun

_IPV4 = re.compile(r'sin_addr=inet_addr\("([^"]+)"\)')
_IPV6 = re.compile(r'inet_pton\(AF_INET6, "([^"]+)"')
_PORT = re.compile(r"sin6?_port=htons\((\d+)\)")


def strace_available() -> bool:
    return shutil.which("strace") is not None


class TracedHarness(HarnessAdapter):
    """The same harness, run under ``strace -f`` recording its network syscalls to a file."""

    def __init__(self, inner: HarnessAdapter, log: Path) -> None:
        self.inner, self.log = inner, log
        # Instance attributes are enough here: the runner reads them off the adapter.
        self.name = inner.name  # type: ignore[misc]
        self.needs_browser, self.needs_desktop = inner.needs_browser, inner.needs_desktop  # type: ignore[misc]

    def is_installed(self) -> bool:
        return self.inner.is_installed()

    def require_installed(self) -> None:
        self.inner.require_installed()

    @property
    def version(self) -> str:
        return self.inner.version

    def command(self, run: HarnessRun) -> HarnessCommand:
        command = self.inner.command(run)
        strace = ["strace", "-f", "-qq", "-e", "trace=connect,sendto,sendmsg", "-o", str(self.log)]
        return HarnessCommand(argv=[*strace, *command.argv], env=command.env)

    def final_answer(self, run: HarnessRun, stdout: str) -> str | None:
        return self.inner.final_answer(run, stdout)


@dataclass(frozen=True)
class Connection:
    address: str
    port: int | None
    line: str


def traced_connections(log: Path) -> list[Connection]:
    """Every IP address a traced process tree connected or sent to (Unix sockets left out)."""
    found = []
    for line in log.read_text(errors="replace").splitlines():
        match = _IPV4.search(line) or _IPV6.search(line)
        if match:
            port = _PORT.search(line)
            found.append(Connection(match[1], int(port[1]) if port else None, line.strip()))
    return found


def off_loopback(connections: list[Connection]) -> list[Connection]:
    """The connections whose address is not loopback (IPv4-mapped loopback counts as loopback)."""
    outside = []
    for connection in connections:
        address = ipaddress.ip_address(connection.address)
        mapped = getattr(address, "ipv4_mapped", None)
        if not (address.is_loopback or (mapped is not None and mapped.is_loopback) or address.is_unspecified):
            outside.append(connection)
    return outside
