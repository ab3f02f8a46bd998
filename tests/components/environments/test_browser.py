"""The browser environment on real Debian Chromium: screenshots, step limit, no connection
past 127.0.0.1, config errors. (Attach and teardown: test_browser_lifecycle.py.)"""

from __future__ import annotations

import io
import os
import time
from collections.abc import Iterator
from pathlib import Path

import pytest
from PIL import Image

from components.environments import BrowserEnvironment, EnvironmentSetupError, StepLimitExceeded, start_web_task
from components.environments.processes import outside_connections, remote_endpoints
from components.rollout.egress import EgressSink

WEB_TASKS = Path(__file__).resolve().parents[3] / "examples" / "tasks" / "web"
@pytest.fixture(scope="module")
def sink() -> Iterator[EgressSink]:
    """A refusing proxy that Chromium would use if it honoured HTTP(S)_PROXY (it must not)."""
    with EgressSink() as egress:
        saved = {key: os.environ.get(key) for key in egress.proxy_env()}
        os.environ.update(egress.proxy_env())
        yield egress
        for key, value in saved.items():
            if value is None:
                os.environ.pop(key, None)
            else:
                os.environ[key] = value


@pytest.fixture(scope="module")
def small(chromium_ready: None, sink: EgressSink) -> Iterator[BrowserEnvironment]:
    env = BrowserEnvironment({"viewport_width": 800, "viewport_height": 600, "max_steps": 3})
    env.setup()
    yield env
    env.teardown()


def test_screenshot_is_a_png_of_the_viewport(small: BrowserEnvironment) -> None:
    small.reset("data:text/html,<body style='background:rgb(10,200,30)'><h1>hello</h1></body>")
    image = Image.open(io.BytesIO(small.screenshot()))
    assert image.format == "PNG" and image.size == (800, 600)
    assert image.convert("RGB").getpixel((790, 590)) == (10, 200, 30)


def test_step_limit_raises_and_reset_restores_it(small: BrowserEnvironment) -> None:
    small.reset()
    small.goto("data:text/html,<input autofocus>")
    small.click(10, 10)
    small.type_text("abc")
    with pytest.raises(StepLimitExceeded, match=r"step limit of 3 reached, refused step 4 \(press Enter\)"):
        small.press("Enter")
    small.reset()
    small.press("Enter")
    assert small.steps.taken == 1


def test_no_connection_leaves_loopback(small: BrowserEnvironment, sink: EgressSink) -> None:
    """Sockets of every Chromium process, sampled while it loads the app and pages asking for outside hosts."""
    with start_web_task(WEB_TASKS / "web-shop-checkout-1") as web:
        small.reset(web.url)
        small.page.set_content(
            "<img src='http://198.51.100.7/a.png'><img src='https://openforge-probe.invalid/b.png'>"
            "<script>fetch('https://openforge-probe.invalid/x').catch(() => 0)</script>"
        )
        small.page.goto(web.url + "/cart")
        seen, loopback = set(), set()
        deadline = time.monotonic() + 2.0
        while time.monotonic() < deadline:
            pids = small.pids()
            seen.update(outside_connections(pids))
            loopback.update(port for _, host, port in remote_endpoints(pids) if host.is_loopback)
            time.sleep(0.05)
    assert seen == set()
    assert sink.attempts == []
    # The check sees Chromium's sockets at all: its connection to the app shows, on loopback.
    assert int(web.url.rsplit(":", 1)[1]) in loopback


def test_missing_chromium_names_the_apt_command(tmp_path: Path) -> None:
    env = BrowserEnvironment({"chromium": str(tmp_path / "chromium")})
    with pytest.raises(EnvironmentSetupError, match="apt-get install -y chromium chromium-driver"):
        env.setup()
    assert env.profile_dir is None


@pytest.mark.parametrize(
    ("config", "message"),
    [
        ({"extra_args": ["--proxy-server=http://10.0.0.1:3128"]}, "extra_args: .*would change the proxy"),
        ({"max_steps": 0}, "max_steps: Input should be greater than or equal to 1"),
        ({"viewport": 5}, r"viewport: unknown field \(misspelled\? fields: chromium, "),
    ],
)
def test_bad_config_names_the_field(config: dict, message: str) -> None:
    with pytest.raises(EnvironmentSetupError, match=f"invalid browser environment config: {message}"):
        BrowserEnvironment(config)
