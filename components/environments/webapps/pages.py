"""The HTML every app shares: plain server-rendered pages with labelled forms.

No JavaScript: every agent, from a screenshot-only computer-use model to a DOM-reading
browser agent, sees the same page, and each action is an ordinary HTTP request the
app's state follows exactly.
"""

from __future__ import annotations

from html import escape
from typing import TYPE_CHECKING

if TYPE_CHECKING:  # aiohttp loads when a site is served, not when a rollout's runner imports the app
    from aiohttp import web

_STYLE = (
    "body{font-family:sans-serif;margin:2em;max-width:52em}table{border-collapse:collapse}"
    "td,th{border:1px solid #999;padding:.3em .6em}label{display:block;margin:.5em 0}"
    ".error{color:#b00;font-weight:bold}nav a{margin-right:1em}"
)


def page(title: str, body: str, nav: str = "", status: int = 200) -> web.Response:
    from aiohttp import web

    html = (
        f"<!doctype html><html><head><meta charset='utf-8'><title>{escape(title)}</title>"
        f"<style>{_STYLE}</style></head><body><nav>{nav}</nav><h1>{escape(title)}</h1>{body}</body></html>"
    )
    return web.Response(text=html, content_type="text/html", status=status)


def options(values: list[str], selected: str = "") -> str:
    return "".join(
        f"<option value='{escape(v)}'{' selected' if v == selected else ''}>{escape(v)}</option>" for v in values
    )


def error(message: str) -> str:
    return f"<p class='error' role='alert'>{escape(message)}</p>" if message else ""
