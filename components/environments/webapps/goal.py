"""What a task asks of an app, and what its verifier will check.

``expect`` is written to the task's ``goal.json`` and read by the standalone verifier
(``web_verify.py``): ``state`` is matched against the app's state endpoint (every listed
field must match; lists must match element by element, same length), ``answer_contains``
and ``answer_excludes`` against the agent's final answer.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

# The task prompt names the app by this placeholder; the port is only known at run time.
URL_PLACEHOLDER = "{web_url}"


@dataclass(frozen=True)
class Goal:
    prompt: str
    expect: dict[str, Any] = field(default_factory=dict)
