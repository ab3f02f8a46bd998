"""Environments GUI agents act in: a browser, a desktop, and the seeded web apps of the task suite."""

from components.environments.base import EnvironmentSetupError, StepLimitExceeded
from components.environments.browser import BrowserConfig, BrowserEnvironment
from components.environments.desktop import DesktopConfig, DesktopEnvironment
from components.environments.web_tasks import WebTask, WebTaskError, start_web_task

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
