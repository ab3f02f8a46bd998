"""Validation of what the proxy returns against the APIs' published OpenAPI schemas.

The schemas are vendored in tests/fixtures/openapi/ by scripts/extract_openapi_schemas.py
(each file names its source repository, commit and license). OpenAPI 3.1 schemas are JSON
Schema 2020-12, so ``jsonschema`` validates with them as published, with one reading:
OpenAI's 3.1 spec still marks a few schemas ``nullable: true`` (an OpenAPI 3.0 keyword
JSON Schema ignores), meaning null is allowed there too.

Anthropic publishes its spec only at a URL outside any repository (named by its SDKs'
``.stats.yml``); anthropic.json is extracted from tryAGI/Anthropic, whose generator
downloads that spec unchanged and adds only the ``ping`` event schema Anthropic's spec
omits (its docs and SDKs have the event).
"""

from __future__ import annotations

import copy
import json
from functools import cache
from pathlib import Path
from typing import Any

import httpx
import orjson
from jsonschema import Draft202012Validator


_FIXTURES = Path(__file__).resolve().parents[3] / "fixtures" / "openapi"
_PREFIX = "#/components/schemas/"


def _with_nullable(node: Any) -> Any:
    """``nullable: true`` read as JSON Schema: null allowed besides what the schema says."""
    if isinstance(node, list):
        return [_with_nullable(item) for item in node]
    if not isinstance(node, dict):
        return node
    node = {key: _with_nullable(value) for key, value in node.items()}
    if node.pop("nullable", False) is True:
        if isinstance(node.get("enum"), list) and None not in node["enum"]:
            node["enum"] = [*node["enum"], None]  # an enum restricts null too, whatever the type says
        kind = node.get("type")
        if isinstance(kind, str):
            node["type"] = [kind, "null"]
        elif isinstance(kind, list):
            node["type"] = [*kind, "null"]
        else:
            return {"anyOf": [node, {"type": "null"}]}
    return node


@cache
def _document(api: str) -> dict[str, Any]:
    document = json.loads((_FIXTURES / f"{api}.json").read_text(encoding="utf-8"))
    document["components"]["schemas"] = _with_nullable(document["components"]["schemas"])
    return document


def schemas(api: str) -> dict[str, Any]:
    return _document(api)["components"]["schemas"]


@cache
def _validator(api: str, name: str) -> Draft202012Validator:
    if name not in schemas(api):
        raise KeyError(f"{api}.json has no schema {name!r}; add it to ROOTS in scripts/extract_openapi_schemas.py")
    # The document itself is the root, so every "#/components/schemas/..." resolves in it.
    root = {**_document(api), "$ref": _PREFIX + name}
    Draft202012Validator.check_schema(root)
    return Draft202012Validator(root)


def _mapped(api: str, name: str, instance: Any) -> str | None:
    """The member of union ``name`` whose ``type`` is ``instance``'s (its errors say more than the union's).

    Anthropic's unions name it in a ``discriminator`` mapping; OpenAI's ``ResponseStreamEvent``
    is a plain ``anyOf`` whose members each allow one ``type``.
    """
    if not isinstance(instance, dict) or not isinstance(instance.get("type"), str):
        return None
    schema = schemas(api)[name]
    mapping = (schema.get("discriminator") or {}).get("mapping") or {}
    if instance["type"] in mapping:
        return mapping[instance["type"]][len(_PREFIX) :]
    for option in schema.get("anyOf") or schema.get("oneOf") or ():
        member = option.get("$ref", "")[len(_PREFIX) :]
        kind = (schemas(api).get(member, {}).get("properties") or {}).get("type") or {}
        if instance["type"] == kind.get("const") or instance["type"] in (kind.get("enum") or ()):
            return member
    return None


def problems(api: str, name: str, instance: Any) -> list[str]:
    """Every way ``instance`` breaks schema ``name`` (empty when it conforms)."""
    found = []
    target = _mapped(api, name, instance)
    for schema in (target, name) if target else (name,):
        for error in _validator(api, schema).iter_errors(instance):
            where = "/".join(map(str, error.absolute_path)) or "(top)"
            found.append(f"{schema} at {where}: {error.message[:300]}")
        if found:
            break
    return found


def assert_conforms(api: str, name: str, instance: Any, what: str) -> None:
    found = problems(api, name, instance)
    assert not found, f"{what} breaks {api}'s {name} schema:\n  " + "\n  ".join(found) + f"\n{orjson.dumps(instance)[:2000]!r}"


def sse_events(response: httpx.Response) -> list[tuple[str | None, dict[str, Any]]]:
    """(event name, JSON data) of every SSE event of a streamed answer, ``[DONE]`` left out."""
    events = []
    for block in response.content.replace(b"\r\n", b"\n").split(b"\n\n"):
        lines = block.split(b"\n")
        names = [line[6:].strip().decode() for line in lines if line.startswith(b"event:")]
        data = b"\n".join(line[5:].removeprefix(b" ") for line in lines if line.startswith(b"data:"))
        if data and data != b"[DONE]":
            events.append((names[-1] if names else None, orjson.loads(data)))
    return events


def broken(instance: dict[str, Any], field: str) -> dict[str, Any]:
    """A copy of ``instance`` without ``field``: what a schema with that field required must refuse."""
    copied = copy.deepcopy(instance)
    del copied[field]
    return copied


def checked_answer(api: str, response: httpx.Response, *, body: str, event: str, error: str = "ErrorResponse") -> list[Any]:
    """Validate an answer: its body (or error body), or each of its SSE events; returns what was checked.

    Stream events named with ``event:`` must carry the same ``type`` (the SDKs dispatch on
    the name); an in-stream error (Anthropic's ``event: error``, chat's unnamed
    ``{"error": ...}``) is an error body.
    """
    if response.headers.get("content-type", "").startswith("text/event-stream"):
        assert response.status_code == 200, response.text
        events = sse_events(response)
        assert events, "the stream had no events"
        for position, (name, data) in enumerate(events):
            is_error = name == "error" or (name is None and "error" in data)
            if name is not None:
                assert name == data.get("type"), f"event {position} is named {name!r} but its type is {data.get('type')!r}"
            schema = error if is_error else event
            assert_conforms(api, schema, data, f"stream event {position} ({name or data.get('object')})")
        return [data for _, data in events]
    answer = response.json()
    assert_conforms(api, body if response.status_code == 200 else error, answer, f"the {response.status_code} answer")
    return [answer]
