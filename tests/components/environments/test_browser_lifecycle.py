"""A harness attaches to the environment's Chromium over CDP from its own process; teardown
then leaves no process, driver or profile behind.

Its own module: Playwright's sync API allows one running instance per thread, so the
other modules' browsers must be gone before this one starts.
"""

from __future__ import annotations

import os
import subprocess
import sys
import textwrap
from pathlib import Path

from components.environments import BrowserEnvironment, start_web_task
from components.environments.processes import is_running, pids_with

WEB_TASKS = Path(__file__).resolve().parents[3] / "examples" / "tasks" / "web"
# What a harness does with the CDP URL, in its own process (browser-use and Stagehand attach the same way).
HARNESS = textwrap.dedent(
    """
    import sys
    from playwright.sync_api import sync_playwright
    with sync_playwright() as p:
        browser = p.chromium.connect_over_cdp(sys.argv[1])
        page = browser.contexts[0].pages[-1]
        page.goto(sys.argv[2])
        page.get_by_role("link", name="Cart").click()
        page.get_by_text("Your cart is empty.").wait_for()
        browser.close()  # closes the connection only: the browser belongs to the environment
    """
)



def test_harness_attaches_over_cdp_and_teardown_leaves_nothing(chromium_ready: None, tmp_path: Path) -> None:
    before = set(_children())  # a whole-suite run has other fixtures' servers as children too
    env = BrowserEnvironment({"profile_root": tmp_path / "profiles"})
    env.setup()
    try:
        assert env.cdp_url.startswith("http://127.0.0.1:")
        assert env.cdp_version()["webSocketDebuggerUrl"].startswith(f"ws://{env.cdp_url[7:]}/devtools/browser/")
        with start_web_task(WEB_TASKS / "web-shop-checkout-1") as web:
            env.reset()
            harness = subprocess.run(
                [sys.executable, "-c", HARNESS, env.cdp_url, web.url], capture_output=True, text=True, timeout=60
            )
            assert harness.returncode == 0, harness.stderr[-2000:]
            assert env.page.url == web.url + "/cart"  # the owner sees the page the harness left
        profile, pids = env.profile_dir, env.pids()
        assert pids and profile.is_dir()
    finally:
        env.teardown()
    assert env.pids() == [] and pids_with(str(profile)) == [] and not profile.exists()
    assert not any(is_running(pid) for pid in pids)
    assert set(_children()) - before == set(), "the Playwright driver or a browser process outlived teardown"


def _children() -> list[str]:
    me = str(os.getpid())
    found = []
    for stat in Path("/proc").glob("[0-9]*/stat"):
        try:
            fields = stat.read_text().rsplit(")", 1)[1].split()
        except OSError:
            continue
        if fields[1] == me and fields[0] != "Z":
            found.append(stat.parent.name)
    return found
