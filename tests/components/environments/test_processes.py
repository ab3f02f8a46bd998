"""The /proc checks the environments rely on can fail: they see a socket aimed off the machine."""

from __future__ import annotations

import os
import socket
import subprocess
import sys
import time

from components.environments.processes import kill_and_wait, outside_connections, pids_with


def test_outside_connections_sees_a_socket_aimed_off_the_machine() -> None:
    # A connected UDP socket has a remote address in /proc/net/udp and sends nothing.
    with socket.socket(socket.AF_INET, socket.SOCK_DGRAM) as outside, socket.socket() as listener:
        outside.connect(("198.51.100.1", 9))
        listener.bind(("127.0.0.1", 0))
        listener.listen()
        with socket.create_connection(listener.getsockname()):
            assert outside_connections([os.getpid()]) == ["udp 198.51.100.1:9"]
    assert outside_connections([os.getpid()]) == []


def test_pids_with_finds_a_process_by_marker_and_kill_ends_it(tmp_path) -> None:
    marker = str(tmp_path / "marker")
    # The marker as an argument of a process that keeps its argv: `sh -c "sleep 30 # marker"`
    # lost it whenever dash exec'd sleep in its place before the check.
    process = subprocess.Popen([sys.executable, "-c", "import time; time.sleep(30)", marker])
    try:
        # Until the child has exec'd, /proc shows the forked test's own command line: wait for it.
        deadline = time.monotonic() + 10
        while process.pid not in pids_with(marker) and time.monotonic() < deadline:
            time.sleep(0.01)
        assert process.pid in pids_with(marker)
        assert kill_and_wait(pids_with(marker)) == []
        process.wait(timeout=5)
        assert pids_with(marker) == []
    finally:
        process.kill()
