"""The sampling settings that shape the distribution tokens are drawn from, one definition.

The proxy records them, sends every one of them explicitly in training mode, and compares
its record with what the engine says it applied; the dev engine applies or refuses them
and says what it applied. Both sides import the names and neutral values from here.
"""

from __future__ import annotations

from typing import Any, Mapping

# Each knob at the value that leaves the model's distribution unchanged (vLLM's meaning).
# top_k: -1 is "off" in every vLLM version (newer ones also take 0, older ones refuse it).
NEUTRAL_SAMPLING: dict[str, float | int] = {
    "temperature": 1.0,
    "top_p": 1.0,
    "top_k": -1,
    "min_p": 0.0,
    "repetition_penalty": 1.0,
    "presence_penalty": 0.0,
    "frequency_penalty": 0.0,
}

# The dev engine's answer header naming the settings it sampled with, as a JSON object of
# NEUTRAL_SAMPLING's keys (vLLM sends no such header; its defaults are pinned at launch).
APPLIED_SAMPLING_HEADER = "x-openforge-sampling"


def same_setting(knob: str, recorded: Any, applied: Any) -> bool:
    """Whether two values of ``knob`` sample the same way (top_k: every value below 1 is off)."""
    if knob == "top_k":
        return max(int(recorded), 0) == max(int(applied), 0)
    return float(recorded) == float(applied)


def sampling_mismatch(recorded: Mapping[str, Any], applied: Mapping[str, Any]) -> str | None:
    """What the engine applied differently from what the record says, or None when they agree.

    Only knobs the record states are compared: a knob recorded as unset means the engine's
    default, which the ``applied`` report then states.
    """
    different = [
        f"{knob}={applied[knob]!r} (recorded {recorded[knob]!r})"
        for knob in NEUTRAL_SAMPLING
        if _number(recorded.get(knob)) and _number(applied.get(knob))
        and not same_setting(knob, recorded[knob], applied[knob])
    ]  # fmt: skip
    if not different:
        return None
    return "the engine sampled with " + ", ".join(different) + "; the record would misstate the sampling distribution"


def _number(value: Any) -> bool:
    return isinstance(value, (int, float)) and not isinstance(value, bool)
