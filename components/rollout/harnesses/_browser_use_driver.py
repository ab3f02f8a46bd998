"""Runs browser-use headless for one rollout; executed by the Python of browser-use's own venv.

It imports nothing from OpenForge (that venv has only browser-use), reads its settings
from the JSON file named on the command line (written by ``browser_use.py``), attaches
to the browser the runner owns over CDP, and writes what the agent ended with to
``settings["result_file"]``. Exit 0 once the agent's run returned (done or out of steps:
the verifier judges the state), 1 when it crashed.
"""

import asyncio
import json
import sys
from pathlib import Path


async def run(settings: dict) -> dict:
    # Imported here, after the runner set the telemetry and cloud variables it reads at import.
    from browser_use import Agent, BrowserSession
    from browser_use.llm.openai.chat import ChatOpenAI

    llm = ChatOpenAI(
        model=settings["model"],
        base_url=settings["base_url"],
        api_key=settings["api_key"],
        max_completion_tokens=settings["max_tokens"],
        # Sampling belongs to the policy's engine: browser-use's defaults (0.2, 0.3) would
        # make the recorded logprobs those of another distribution than the one trained.
        temperature=None,
        frequency_penalty=None,
    )
    # The runner's Chromium: browser-use must neither launch one nor close it (teardown is
    # the runner's), nor fetch its default extensions (a download from outside).
    session = BrowserSession(cdp_url=settings["cdp_url"], keep_alive=True, enable_default_extensions=False)
    agent = Agent(
        task=settings["prompt"],
        llm=llm,
        browser_session=session,
        use_judge=False,  # a second, two-screenshot call per run that is no step of the agent
        message_compaction=False,  # summarising calls to the model that are no step either
        calculate_cost=False,  # would fetch a price list from outside
        enable_signal_handler=False,  # the runner stops it by killing its session
        # The runner has opened the task's page already; browser-use would load it a second
        # time, and its element numbers (Chromium node ids) then differed between browsers.
        directly_open_url=False,
    )
    history = await agent.run(max_steps=settings["max_steps"])
    return {
        "final_result": history.final_result(),
        "is_done": history.is_done(),
        "is_successful": history.is_successful(),
        "steps": history.number_of_steps(),
        "errors": [error for error in history.errors() if error],
    }


def main() -> int:
    settings = json.loads(Path(sys.argv[1]).read_text())
    result = asyncio.run(run(settings))
    Path(settings["result_file"]).write_text(json.dumps(result, indent=2) + "\n")
    print(json.dumps(result))
    return 0


if __name__ == "__main__":
    sys.exit(main())
