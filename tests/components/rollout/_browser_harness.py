"""A scripted browser harness: one model call per step, the browser driven over CDP.

Run by ``test_runner_gui.py`` as ``python _browser_harness.py MODE``. It behaves like a
browser agent without a model's judgement: ``right`` registers the person of
web-form-submit-1's goal, ``wrong`` registers them with the wrong T-shirt size,
``runaway`` keeps asking the model and never ends. It exits 3 when it was handed the
app's state token, which only the verifier may have.
"""

import json
import os
import re
import sys
import time
import urllib.request

from playwright.sync_api import sync_playwright


def model_call(step: int) -> None:
    body = {"model": os.environ["FAKE_MODEL"], "messages": [{"role": "user", "content": f"step {step}"}]}
    request = urllib.request.Request(
        os.environ["FAKE_BASE_URL"] + "/chat/completions",
        data=json.dumps(body).encode(),
        headers={"Content-Type": "application/json", "Authorization": f"Bearer {os.environ['FAKE_API_KEY']}"},
    )
    with urllib.request.urlopen(request, timeout=10) as resp:
        resp.read()


def main(mode: str) -> int:
    if any(name.startswith("OPENFORGE_WEB") for name in os.environ):
        print("the harness was handed the web app's state variables", file=sys.stderr)
        return 3
    url = re.search(r"http://127\.0\.0\.1:\d+", os.environ["FAKE_PROMPT"])[0]  # {web_url}, rendered
    submission = json.loads(os.environ["FAKE_SUBMISSION"])
    with sync_playwright() as playwright:
        page = playwright.chromium.connect_over_cdp(os.environ["FAKE_CDP_URL"]).contexts[0].pages[-1]
        assert page.url.rstrip("/") == url, f"the browser is not on the app: {page.url}"
        if mode == "runaway":
            for step in range(10_000):
                model_call(step)
                time.sleep(0.05)
        model_call(0)
        page.fill("input[name=name]", submission["name"])
        page.fill("input[name=email]", submission["email"])
        page.select_option("select[name=session]", label=submission["session"])
        page.check(f"input[name=size][value={submission['size'] if mode == 'right' else 'XL'}]")
        if submission["newsletter"]:
            page.check("input[name=newsletter]")
        model_call(1)
        page.click("button")
        page.wait_for_load_state()
    # What the test checks is gone once the rollout ended: the browser and the app.
    print(f"registered {os.environ['FAKE_CDP_URL']} {url}")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1]))
