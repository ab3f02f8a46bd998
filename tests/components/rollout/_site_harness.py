"""A scripted browser harness for the benchmark suites' web tasks: it follows links by their text
and answers with the text of the page it ends on, as an agent that read that page would.

Run by ``test_runner_suites.py`` as ``python _site_harness.py LINK...`` with the rendered prompt
in FAKE_PROMPT and the runner's browser in FAKE_CDP_URL; it prints its answer.
"""

import os
import re
import sys

from playwright.sync_api import sync_playwright


def main(links: list[str]) -> int:
    start = re.search(r"http://127\.0\.0\.1:\d+/\S*", os.environ["FAKE_PROMPT"])[0]  # {web_url}, rendered
    with sync_playwright() as playwright:
        page = playwright.chromium.connect_over_cdp(os.environ["FAKE_CDP_URL"]).contexts[0].pages[-1]
        assert page.url == start, f"the browser is not on the task's start page {start}: {page.url}"
        for link in links:
            page.get_by_role("link", name=link, exact=True).click()
            page.wait_for_load_state()
        print(page.inner_text("body"))
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
