"""A folder of static pages served on 127.0.0.1 in place of a real site: ``web.yaml`` with ``app: static``.

Benchmark suites of live websites (WebVoyager, Online-Mind2Web: components/environments/suites/)
cannot reach their sites offline, so a task carries a copy of the pages it needs, in its
own folder, and the rollout's web app serves that copy at the site's root. The browser
reaches nothing but 127.0.0.1 (browser.py), so the pages must link relatively or
root-relatively; a form that submits by GET loads the page it names, with the query
ignored. There is no server-side behaviour: what the agent finds is judged from its final
answer (suites/answer_verify.py), not from the app's state.
"""

from __future__ import annotations

from pathlib import Path, PurePosixPath
from typing import TYPE_CHECKING, Literal

from pydantic import BaseModel, ConfigDict, Field, field_validator

if TYPE_CHECKING:  # aiohttp loads when a site is served: every rollout's runner imports this module
    from aiohttp import web

APP = "static"
INDEX = "index.html"


class StaticSiteSpec(BaseModel):
    """``web.yaml`` of a static site: which folder of the task to serve, and where the agent starts."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    app: Literal["static"]
    pages: str = Field(description="Folder inside the task folder served as the site's root.")
    start: str = Field("/", description="Path (and query) the browser opens first; a folder serves its index.html.")

    @field_validator("pages")
    @classmethod
    def _inside_task(cls, value: str) -> str:
        path = PurePosixPath(value)
        if not value or path.is_absolute() or ".." in path.parts:
            raise ValueError(f"pages {value!r} must be a folder inside the task folder, e.g. pages: site")
        return value

    @field_validator("start")
    @classmethod
    def _rooted(cls, value: str) -> str:
        if not value.startswith("/"):
            raise ValueError(f"start {value!r} must be a path on the site, starting with '/'")
        return value


def add_routes(root: Path, app: web.Application, state: dict) -> None:
    """Serve ``root``: a path names a file under it, a folder its ``index.html``; nothing else.

    ``state`` (what the state endpoint returns) stays empty: static pages change nothing.
    """
    from aiohttp import web

    root = root.resolve()

    async def page(request: web.Request) -> web.FileResponse:
        found = resolve(root, request.match_info["path"])
        if found is None:
            raise web.HTTPNotFound(text=f"no page {request.path} in this offline copy of the site")
        return web.FileResponse(found)

    # A dynamic route's index key is "/", so the state endpoint's longer, plain path wins.
    app.router.add_get("/{path:.*}", page)


def resolve(root: Path, path: str) -> Path | None:
    """The file ``path`` names under ``root`` (``root`` resolved); None when it is missing or outside."""
    found = (root / path.lstrip("/")).resolve()
    if not found.is_relative_to(root):
        return None
    if found.is_dir():
        found = found / INDEX
    return found if found.is_file() else None
