"""Argo's ``{{...}}`` references, resolved against a scope of known values.

Values substituted from parameters (workflow parameters, ``{{item}}``, task outputs,
task addresses) are *data*: they are wrapped in invisible markers so that the pod
runtime's path and port rewriting, which applies to text written in the manifest only,
never touches them (a config whose storage path happens to start with a mount path must
reach the step unchanged). ``unmark`` strips the markers before anything runs or parses.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Iterator, Mapping
from typing import Any

_REF = re.compile(r"\{\{\s*([^{}]*?)\s*\}\}")
# `{{tasks.serve.ip}}:8000`: the port belongs to the task's pod, so it resolves together.
_ADDRESS = re.compile(r"\{\{\s*tasks\.([A-Za-z0-9][-\w]*)\.ip\s*\}\}(?::(\d+))?")
# Unicode private-use characters: never produced by YAML, JSON or a shell.
_OPEN, _CLOSE = "\ue000", "\ue001"
_MARKED = re.compile(f"{_OPEN}(.*?){_CLOSE}", re.S)
# A `when` after substitution: one comparison of two plain values (`true == true`).
_COMPARISON = re.compile(r"^\s*([^\s=!]+)\s*(==|!=)\s*([^\s=!]+)\s*$")

# task name, container port (None for a bare `{{tasks.X.ip}}`) -> "host[:port]"
AddressOf = Callable[[str, int | None], str]


class ManifestError(ValueError):
    """A manifest the local executor cannot run; the message names the object and the fix."""


class TemplateError(ManifestError):
    """A ``{{...}}`` reference that cannot be resolved where it is used."""


def mark(value: str) -> str:
    """Tag ``value`` as data: path and port rewriting leave it alone."""
    return f"{_OPEN}{value}{_CLOSE}"


def unmark(obj: Any) -> Any:
    """``obj`` with every data marker removed (recursively through lists and dicts)."""
    if isinstance(obj, str):
        return obj.replace(_OPEN, "").replace(_CLOSE, "")
    if isinstance(obj, list):
        return [unmark(v) for v in obj]
    if isinstance(obj, dict):
        return {k: unmark(v) for k, v in obj.items()}
    return obj


def split_marked(text: str) -> Iterator[tuple[str, bool]]:
    """``text`` as consecutive ``(segment, is_data)`` pieces."""
    pos = 0
    for match in _MARKED.finditer(text):
        if match.start() > pos:
            yield text[pos : match.start()], False
        yield match.group(0), True
        pos = match.end()
    if pos < len(text):
        yield text[pos:], False


def map_manifest_text(text: str, fn: Callable[[str], str]) -> str:
    """Apply ``fn`` to the parts of ``text`` written in the manifest, not to data."""
    return "".join(seg if is_data else fn(seg) for seg, is_data in split_marked(text))


def evaluate_when(text: str, where: str) -> bool:
    """A task's ``when``, its references already substituted: ``a == b`` or ``a != b``.

    Argo evaluates a full expression language here; a manifest that needs more than one
    comparison is refused by name rather than guessed at.
    """
    match = _COMPARISON.match(text)
    if not match:
        raise ManifestError(f"{where}: when {text!r}: the local executor supports one 'a == b' or 'a != b' comparison")
    left, operator, right = (match.group(1).strip("'\""), match.group(2), match.group(3).strip("'\""))
    return (left == right) == (operator == "==")


def resolve(obj: Any, scope: Mapping[str, str], where: str, address_of: AddressOf | None = None) -> Any:
    """Substitute every ``{{ref}}`` in the strings of ``obj`` from ``scope``.

    Unknown references are errors that name ``where`` (the template or task) and the
    reference, since Argo would fail the same workflow at submission or run time.
    """
    if isinstance(obj, str):
        return _resolve_text(obj, scope, where, address_of)
    if isinstance(obj, list):
        return [resolve(v, scope, where, address_of) for v in obj]
    if isinstance(obj, dict):
        return {k: resolve(v, scope, where, address_of) for k, v in obj.items()}
    return obj


def _resolve_text(text: str, scope: Mapping[str, str], where: str, address_of: AddressOf | None) -> str:
    if "{{" not in text:
        return text

    def address(match: re.Match[str]) -> str:
        if address_of is None:
            raise TemplateError(f"{where}: {match.group(0)} can only be used in a DAG task's arguments")
        port = int(match.group(2)) if match.group(2) else None
        return mark(address_of(match.group(1), port))

    def lookup(match: re.Match[str]) -> str:
        ref = match.group(1)
        if ref.startswith("="):
            raise TemplateError(f"{where}: expression {match.group(0)} is not supported by the local executor")
        if ref not in scope:
            known = ", ".join(sorted(scope)) or "none"
            raise TemplateError(f"{where}: unknown reference {match.group(0)} (known here: {known})")
        return scope[ref]

    return _REF.sub(lookup, _ADDRESS.sub(address, text))
