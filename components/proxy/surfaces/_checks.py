"""Request-shape checks every surface shares: a malformed body becomes a 400 that names the path."""

from __future__ import annotations

import uuid
from typing import Any

from components.proxy.errors import ProxyError, bad_request

_TYPE_NAMES = {dict: "an object", list: "an array", str: "a string", bool: "a boolean", type(None): "null"}


def json_type(value: Any) -> str:
    return _TYPE_NAMES.get(type(value), "a number")


def body_object(body: Any) -> dict[str, Any]:
    if not isinstance(body, dict):
        raise bad_request(f"request body must be a JSON object, got {json_type(body)}")
    return body


def wrong(path: str, expected: str, value: Any) -> ProxyError:
    return bad_request(f"'{path}' must be {expected}, got {json_type(value)}", param=path.split("[", 1)[0].split(".", 1)[0])


def object_at(value: Any, path: str) -> dict[str, Any]:
    if not isinstance(value, dict):
        raise wrong(path, "an object", value)
    return value


def list_at(value: Any, path: str) -> list[Any]:
    if not isinstance(value, list):
        raise wrong(path, "an array", value)
    return value


def string_at(value: Any, path: str) -> str:
    if not isinstance(value, str):
        raise wrong(path, "a string", value)
    return value


def optional_bool(body: dict[str, Any], key: str) -> bool:
    value = body.get(key)
    if value is not None and not isinstance(value, bool):
        raise wrong(key, "true or false", value)
    return value is True


def positive_int(body: dict[str, Any], key: str, *, required: bool, hint: str) -> int | None:
    value = body.get(key)
    if value is None:
        if required:
            raise bad_request(f"'{key}' is required: {hint}", param=key)
        return None
    if not isinstance(value, int) or isinstance(value, bool) or value < 1:
        shown = repr(value) if isinstance(value, int) and not isinstance(value, bool) else json_type(value)
        raise bad_request(f"'{key}' must be a positive integer ({hint}), got {shown}", param=key)
    return value


def short_id(engine_id: Any) -> str:
    """A stable id suffix from the engine's completion id, so a stream and its record agree."""
    text = engine_id if isinstance(engine_id, str) and engine_id else uuid.uuid4().hex
    return text.removeprefix("chatcmpl-").removeprefix("chatcmpl")
