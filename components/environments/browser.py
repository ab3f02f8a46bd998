"""A Chromium the rollout owns: fresh profile, no way off 127.0.0.1, a CDP endpoint for the harness.

The environment launches Debian's Chromium through Playwright (never Playwright's own
download, which fails here) and keeps it for the whole rollout. Harnesses attach to it
over CDP (browser-use: ``BrowserSession(cdp_url=...)``; Stagehand 3:
``localBrowserLaunchOptions: {cdpUrl}``) instead of launching a browser of their own, so
the isolation flags, the profile and the teardown stay in the owner's hands whatever the
harness does, and the owner can screenshot the very page the agent sees.
"""

from __future__ import annotations

import json
import shutil
import tempfile
import time
import urllib.request
from pathlib import Path
from typing import Any, Mapping

from pydantic import BaseModel, ConfigDict, Field, field_validator

from components.environments.base import EnvironmentSetupError, StepCounter, parse_config, require_program
from components.environments.processes import kill_and_wait, pids_with

CHROMIUM_PACKAGES = "chromium chromium-driver"
# docs/environments.md ("Browser environment"): headless Chromium still calls outside
# hosts (update, time, accounts, autofill) and honours HTTP(S)_PROXY. The first four flags
# cut most of it; the last two stopped every outside connection: no proxy, and every name
# but 127.0.0.1 unresolvable.
ISOLATION_FLAGS = (
    "--disable-background-networking",
    "--disable-component-update",
    "--disable-sync",
    "--no-first-run",
    "--no-proxy-server",
    "--host-resolver-rules=MAP * ~NOTFOUND , EXCLUDE 127.0.0.1",
)
# No GPU here, and QUIC is UDP that the checks above would only see late: both off.
_QUIET_FLAGS = ("--disable-gpu", "--disable-quic", "--no-default-browser-check")
# Port 0: Chromium picks a free port and writes it to <profile>/DevToolsActivePort.
_CDP_FLAGS = ("--remote-debugging-port=0", "--remote-debugging-address=127.0.0.1")
_RESERVED_PREFIXES = ("--proxy", "--no-proxy", "--host-resolver-rules", "--remote-debugging", "--user-data-dir")


class BrowserConfig(BaseModel):
    """How to run the browser of one rollout (validated at the edge: ``BrowserEnvironment(config=dict)``)."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    chromium: Path = Field(Path("/usr/bin/chromium"), description="Debian's Chromium binary.")
    headless: bool = True
    viewport_width: int = Field(1280, ge=200, le=3840)
    viewport_height: int = Field(800, ge=200, le=2160)
    max_steps: int = Field(50, ge=1, description="Steps taken through the environment before StepLimitExceeded.")
    launch_timeout_s: float = Field(30.0, gt=0)
    action_timeout_s: float = Field(10.0, gt=0, description="Limit of one navigation, click or key press.")
    extra_args: tuple[str, ...] = Field((), description="More Chromium flags; none may undo the isolation flags.")
    profile_root: Path | None = Field(None, description="Where the per-rollout profile dirs go (default: temp).")

    @field_validator("extra_args")
    @classmethod
    def _keep_isolation(cls, args: tuple[str, ...]) -> tuple[str, ...]:
        for arg in args:
            if arg.startswith(_RESERVED_PREFIXES):
                raise ValueError(f"{arg!r} would change the proxy, resolver, CDP or profile the environment sets; "
                                 "drop it")
        return args


class BrowserEnvironment:
    """``setup()``, then ``cdp_url`` for the harness; ``reset``, steps, ``screenshot``; ``teardown()``."""

    def __init__(self, config: BrowserConfig | Mapping[str, Any] | None = None) -> None:
        self.config = parse_config(BrowserConfig, config, "browser environment")
        self.steps = StepCounter(self.config.max_steps, "browser environment")
        self.profile_dir: Path | None = None
        self.cdp_url: str | None = None
        self._playwright: Any = None
        self._context: Any = None

    def setup(self) -> None:
        """Launch Chromium on a fresh profile; raise EnvironmentSetupError saying how to fix it."""
        chromium = require_program("chromium", CHROMIUM_PACKAGES, self.config.chromium)
        try:
            from playwright.sync_api import Error as PlaywrightError, sync_playwright
        except ImportError:
            raise EnvironmentSetupError(
                "Python Playwright is missing; install the test extra (make install), never `playwright install`"
            ) from None
        root = self.config.profile_root
        if root is not None:
            root.mkdir(parents=True, exist_ok=True)
        self.profile_dir = Path(tempfile.mkdtemp(prefix="openforge-chromium-", dir=root))
        self._playwright = sync_playwright().start()
        try:
            self._context = self._playwright.chromium.launch_persistent_context(
                str(self.profile_dir),
                executable_path=str(chromium),
                headless=self.config.headless,
                args=self.chromium_args(),
                viewport={"width": self.config.viewport_width, "height": self.config.viewport_height},
                timeout=self.config.launch_timeout_s * 1000,
            )
        except PlaywrightError as exc:
            self.teardown()
            raise EnvironmentSetupError(f"Chromium at {chromium} did not start: {str(exc)[:1500]}") from None
        self._context.set_default_timeout(self.config.action_timeout_s * 1000)
        self.cdp_url = f"http://127.0.0.1:{self._cdp_port()}"

    def chromium_args(self) -> list[str]:
        """Every flag the environment launches Chromium with (Playwright adds its own, e.g. --no-sandbox)."""
        return [*ISOLATION_FLAGS, *_QUIET_FLAGS, *_CDP_FLAGS, *self.config.extra_args]

    def _cdp_port(self) -> int:
        port_file = self.profile_dir / "DevToolsActivePort"
        deadline = time.monotonic() + self.config.launch_timeout_s
        while time.monotonic() < deadline:
            lines = port_file.read_text().splitlines() if port_file.exists() else []
            if lines and lines[0].isdigit():
                return int(lines[0])
            time.sleep(0.02)
        self.teardown()
        limit = self.config.launch_timeout_s
        raise EnvironmentSetupError(f"Chromium wrote no CDP port to {port_file} within {limit:g}s")

    def cdp_version(self) -> dict[str, Any]:
        """Chromium's ``/json/version``: its browser websocket URL is what CDP clients that want ws:// use."""
        with urllib.request.urlopen(f"{self._require_cdp_url()}/json/version", timeout=5) as resp:
            return json.loads(resp.read())

    def _require_cdp_url(self) -> str:
        if self.cdp_url is None:
            raise EnvironmentSetupError("the browser environment is not set up; call setup() first")
        return self.cdp_url

    @property
    def page(self) -> Any:
        """The page the agent sees: the most recently opened one (harnesses open tabs)."""
        self._require_cdp_url()
        # Playwright's sync API applies browser events (a tab or a navigation the harness made
        # over CDP) only while a call is in flight: one round trip brings the page list up to date.
        self._context.cookies()
        pages = self._context.pages
        return pages[-1] if pages else self._context.new_page()

    def reset(self, url: str | None = None) -> None:
        """A new episode on the same browser: one blank (or ``url``) page, no cookies or storage, steps at 0."""
        self._require_cdp_url()
        fresh = self._context.new_page()
        for page in self._context.pages:
            if page is not fresh:
                page.close()
        self._context.clear_cookies()
        fresh.goto(url or "about:blank")
        # Storage belongs to an origin; clearing the start page's covers the task app (a fully
        # clean slate, cache and history included, is a new profile: teardown and setup).
        if url and url.startswith(("http://", "https://")):
            fresh.evaluate("() => { localStorage.clear(); sessionStorage.clear(); }")
        self.steps.reset()

    def screenshot(self) -> bytes:
        """PNG of the current page's viewport."""
        return self.page.screenshot(type="png")

    # Steps: each counts towards max_steps, for agents the environment drives itself.
    def goto(self, url: str) -> None:
        self.steps.take(f"goto {url}")
        self.page.goto(url)

    def click(self, x: float, y: float) -> None:
        self.steps.take(f"click {x},{y}")
        self.page.mouse.click(x, y)

    def type_text(self, text: str) -> None:
        self.steps.take(f"type {len(text)} characters")
        self.page.keyboard.type(text)

    def press(self, key: str) -> None:
        self.steps.take(f"press {key}")
        self.page.keyboard.press(key)

    def pids(self) -> list[int]:
        """Every live process of this browser (the profile dir is on each one's command line)."""
        return pids_with(str(self.profile_dir)) if self.profile_dir else []

    def teardown(self) -> None:
        """Close the browser and Playwright, kill any straggler, remove the profile; leaves nothing running."""
        if self._context is not None:
            try:
                self._context.close()
            except Exception:  # a crashed browser cannot close cleanly; the kill below covers it
                pass
        if self._playwright is not None:
            self._playwright.stop()
        self._context = self._playwright = self.cdp_url = None
        if self.profile_dir is not None:
            survivors = kill_and_wait(self.pids())
            shutil.rmtree(self.profile_dir, ignore_errors=True)
            profile, self.profile_dir = self.profile_dir, None
            if survivors:
                raise RuntimeError(f"Chromium processes {survivors} of {profile} survived SIGKILL")

    def __enter__(self) -> "BrowserEnvironment":
        self.setup()
        return self

    def __exit__(self, *exc: object) -> None:
        self.teardown()
