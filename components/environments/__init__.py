"""Environments GUI agents act in: a browser, a desktop, and the seeded web apps of the task suite.

Exports load on first use (``components.core.lazy``): ``openforge tasks`` lives in this
package, and its ``--help`` must not load the browser's aiohttp and pydantic.
"""

from components.core.lazy import lazy_exports

__all__ = [
    "BrowserConfig",
    "BrowserEnvironment",
    "DesktopConfig",
    "DesktopEnvironment",
    "EnvironmentSetupError",
    "StepLimitExceeded",
    "WebTask",
    "WebTaskError",
    "start_web_task",
]

__getattr__, __dir__ = lazy_exports(
    __name__,
    {
        "EnvironmentSetupError": "components.environments.base:EnvironmentSetupError",
        "StepLimitExceeded": "components.environments.base:StepLimitExceeded",
        "BrowserConfig": "components.environments.browser:BrowserConfig",
        "BrowserEnvironment": "components.environments.browser:BrowserEnvironment",
        "DesktopConfig": "components.environments.desktop:DesktopConfig",
        "DesktopEnvironment": "components.environments.desktop:DesktopEnvironment",
        "WebTask": "components.environments.web_tasks:WebTask",
        "WebTaskError": "components.environments.web_tasks:WebTaskError",
        "start_web_task": "components.environments.web_tasks:start_web_task",
    },
)
