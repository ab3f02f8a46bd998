"""MiniWoB++ task pages served on 127.0.0.1 from the pinned ``miniwob`` package, one seeded episode each.

The ``miniwob`` package (pinned in pyproject.toml) ships the 125 task pages as static
HTML; its own Python side drives them with Selenium, and BrowserGym's with its own
Playwright (pinned to 1.44) and its own browser. We use neither: the rollout's browser is
the runner's (browser.py), so the episode set-up BrowserGym does through Playwright
(``Math.seedrandom``, a longer ``core.EPISODE_MAX_TIME``, ``core.startEpisodeReal()``)
runs inside the page, from a script this server injects into the task page
(``miniwob_episode.js``). The script also reports each episode's start (its utterance)
and end (``WOB_REWARD_GLOBAL``, ``WOB_RAW_REWARD_GLOBAL``, the reason) here, and the state
endpoint of ``webapps/server.py`` gives them to the verifier, which so needs no browser.

The first episode that ends is the one judged; it passes when its raw reward is positive,
BrowserGym's rule (``float(WOB_RAW_REWARD_GLOBAL > 0)``). The page redraws a new problem
when the agent starts another episode; those are recorded, never judged.
"""

from __future__ import annotations

import importlib.util
import json
from functools import cache
from pathlib import Path
from typing import TYPE_CHECKING

from components.environments.base import EnvironmentSetupError

if TYPE_CHECKING:  # aiohttp loads when a site is served: every rollout's runner imports this module
    from aiohttp import web

APP = "miniwob"
REPORT_PATH = "/_openforge/miniwob/episode"
SCRIPT_PATH = "/_openforge/miniwob/episode.js"
# MiniWoB ends an episode after 10 s ("timed out", reward -1). A model call per action
# takes longer than that; the rollout's time limit is what bounds an episode here.
EPISODE_MAX_TIME_MS = 24 * 3600 * 1000
_SCRIPT = Path(__file__).with_name("miniwob_episode.js")
_MAX_REPORT_BYTES = 64 * 1024


@cache
def pages_root() -> Path:
    """The ``html`` folder of the installed ``miniwob`` package.

    Found without importing the package: its ``__init__`` registers gymnasium environments
    and pulls in Selenium, none of which serving its pages needs.
    """
    spec = importlib.util.find_spec("miniwob")
    if spec is None or not spec.submodule_search_locations:
        raise EnvironmentSetupError(
            "the miniwob package (MiniWoB++ task pages) is not installed: `make install` installs it, "
            "or pip install the version pinned in pyproject.toml"
        )
    return Path(next(iter(spec.submodule_search_locations))) / "html"


@cache
def task_names() -> tuple[str, ...]:
    """Every MiniWoB task page the installed package ships (``click-button``, ``enter-text``, ...)."""
    return tuple(sorted(path.stem for path in (pages_root() / "miniwob").glob("*.html")))


def page_seed(seed: int) -> int:
    """The number given to ``Math.seedrandom`` for ``seed``: BrowserGym's, so seed N is its episode N.

    BrowserGym draws it as ``np.random.RandomState(seed).randint(0, 1000000)``; numpy's
    legacy generator is frozen, so the draw is the same on every machine and version.
    """
    import numpy as np

    return int(np.random.RandomState(seed).randint(0, 1_000_000))


def task_path(task: str) -> str:
    """Where the task's page is served (the pages link ``../core/...``, so the folders are kept)."""
    return f"/miniwob/{task}.html"


def new_state(task: str, seed: int) -> dict:
    """What the state endpoint returns: the task, every episode's start and end, and the judged result."""
    return {"task": task, "seed": seed, "episodes": [], "result": {"ended": False}}


def add_routes(task: str, seed: int, app: web.Application, state: dict) -> None:
    """Serve the pages, ``task``'s with the episode script injected, and take the script's reports."""
    from aiohttp import web

    root = pages_root()
    page = (root / "miniwob" / f"{task}.html").read_text()
    config = {"seed": page_seed(seed), "episodeMaxTimeMs": EPISODE_MAX_TIME_MS, "reportUrl": REPORT_PATH}
    # Last in <body>: after the page's own scripts have defined `core` and its onload.
    injected = (
        f"<script>window.OPENFORGE_MINIWOB = {json.dumps(config)};</script>"
        f"<script src='{SCRIPT_PATH}'></script>\n</body>"
    )
    head, tail = page.rsplit("</body>", 1)
    served = head + injected + tail

    async def task_page(request: web.Request) -> web.Response:
        return web.Response(text=served, content_type="text/html")

    async def script(request: web.Request) -> web.Response:
        return web.Response(text=_SCRIPT.read_text(), content_type="application/javascript")

    async def report(request: web.Request) -> web.Response:
        raw = await request.content.read(_MAX_REPORT_BYTES)
        try:
            event = json.loads(raw)
            record_event(state, event)
        except (ValueError, KeyError, TypeError) as exc:
            raise web.HTTPBadRequest(text=f"not a MiniWoB episode report: {exc}") from None
        return web.Response(status=204)

    app.router.add_get(task_path(task), task_page)
    app.router.add_get(SCRIPT_PATH, script)
    app.router.add_post(REPORT_PATH, report)
    app.router.add_static("/", root, show_index=False, follow_symlinks=False)


def record_event(state: dict, event: dict) -> None:
    """Fold one report of the page into ``state``; only the first ended episode sets the result."""
    if event["event"] == "start":
        state["episodes"].append({"utterance": str(event["utterance"]), "ended": False})
    elif event["event"] == "end":
        if not state["episodes"]:
            raise ValueError("an episode ended before any started")
        ended = {
            "utterance": str(event["utterance"]),
            "ended": True,
            "reward": float(event["reward"]),
            "raw_reward": float(event["raw_reward"]),
            "reason": None if event.get("reason") is None else str(event["reason"]),
        }
        state["episodes"][-1] = ended
        if not state["result"]["ended"]:
            state["result"] = {**ended, "success": ended["raw_reward"] > 0}
    else:
        raise ValueError(f"unknown event {event['event']!r}")
