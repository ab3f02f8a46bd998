"""Images in recorded requests: what a stored image is, how to read its header, how to rebuild a request.

The recording proxy stores each image a harness sends once, by SHA-256, in
``<out>/images/<sha256>.<ext>`` and puts an *image reference* in the record where the
base64 text was; the record's ``images`` field lists where (JSON pointers into the
record). ``rebuild_request`` puts the base64 back, so the rebuilt request is the JSON
value the harness sent, its data URL strings byte for byte (docs/trajectory-schema.md).

Width and height come from the file header (PNG IHDR, JPEG SOF, GIF, WebP): nothing is
decoded, and nothing heavier than the standard library is needed.
"""

from __future__ import annotations

import base64
import copy
import struct
from pathlib import Path
from typing import TYPE_CHECKING, Any

from pydantic import BaseModel, ConfigDict, Field

from components.core.rollout_identity import IMAGES_DIR

if TYPE_CHECKING:
    from components.core.trajectory import RecordedCall

# The image types the chat APIs accept, with the extension a stored file gets.
EXTENSIONS = {"image/png": "png", "image/jpeg": "jpg", "image/gif": "gif", "image/webp": "webp"}
_DECLARED = {"image/jpg": "image/jpeg", "image/pjpeg": "image/jpeg"}  # spellings clients use for JPEG


class ImageError(ValueError):
    """Image data that cannot be stored as sent; the message names the problem and the fix."""


class ImageRef(BaseModel):
    """What a record holds in place of an image's base64 text (schema 1.3)."""

    model_config = ConfigDict(extra="forbid")

    sha256: str = Field(description="Hex SHA-256 of the image bytes; the file is images/<sha256>.<ext>.")
    mime: str = Field(description="The type the bytes are (image/png, image/jpeg, image/gif, image/webp).")
    bytes: int = Field(ge=0, description="Size of the decoded image in bytes.")
    width: int | None = Field(None, description="Pixels, from the file header.")
    height: int | None = Field(None, description="Pixels, from the file header.")
    file: str = Field(description="The stored file, relative to the directory of the session file.")
    data_url_prefix: str | None = Field(
        None, description="For a data URL, the text before the base64 (e.g. 'data:image/png;base64,'); null for bare base64."
    )


def sniff(data: bytes) -> str | None:
    """The image type the bytes are, from their magic number, or None."""
    if data.startswith(b"\x89PNG\r\n\x1a\n"):
        return "image/png"
    if data.startswith(b"\xff\xd8\xff"):
        return "image/jpeg"
    if data[:6] in (b"GIF87a", b"GIF89a"):
        return "image/gif"
    if data[:4] == b"RIFF" and data[8:12] == b"WEBP":
        return "image/webp"
    return None


def canonical_mime(declared: str) -> str:
    """A declared type, lower-cased and with JPEG's other spellings mapped to image/jpeg."""
    declared = declared.strip().lower()
    return _DECLARED.get(declared, declared)


def dimensions(mime: str, data: bytes) -> tuple[int, int]:
    """(width, height) read from the header; ImageError when the header is not readable."""
    try:
        if mime == "image/png":
            if data[12:16] != b"IHDR":
                raise ImageError("PNG without an IHDR chunk first")
            return struct.unpack(">II", data[16:24])
        if mime == "image/jpeg":
            return _jpeg_dimensions(data)
        if mime == "image/gif":
            return struct.unpack("<HH", data[6:10])
        if mime == "image/webp":
            return _webp_dimensions(data)
    except struct.error:
        pass
    raise ImageError(f"the {mime} header is cut short or unreadable")


# JPEG start-of-frame markers (baseline, progressive, lossless, ...): they hold the size.
_SOF = frozenset({0xC0, 0xC1, 0xC2, 0xC3, 0xC5, 0xC6, 0xC7, 0xC9, 0xCA, 0xCB, 0xCD, 0xCE, 0xCF})


def _jpeg_dimensions(data: bytes) -> tuple[int, int]:
    at = 2
    while at + 4 <= len(data):
        if data[at] != 0xFF:
            raise ImageError("JPEG segment does not start with a 0xFF marker")
        marker = data[at + 1]
        if marker == 0xFF:  # fill byte
            at += 1
            continue
        if marker in (0x01, *range(0xD0, 0xD8)):  # markers without a length
            at += 2
            continue
        (length,) = struct.unpack(">H", data[at + 2 : at + 4])
        if marker in _SOF:
            height, width = struct.unpack(">HH", data[at + 5 : at + 9])
            return width, height
        if marker == 0xDA:  # image data starts before any frame header: not a valid JPEG
            break
        at += 2 + length
    raise ImageError("JPEG without a frame header (SOF) before its image data")


def _webp_dimensions(data: bytes) -> tuple[int, int]:
    chunk = data[12:16]
    if chunk == b"VP8X":
        width = int.from_bytes(data[24:27], "little") + 1
        height = int.from_bytes(data[27:30], "little") + 1
        return width, height
    if chunk == b"VP8L":
        bits = int.from_bytes(data[21:25], "little")
        return (bits & 0x3FFF) + 1, ((bits >> 14) & 0x3FFF) + 1
    if chunk == b"VP8 ":
        width, height = struct.unpack("<HH", data[26:30])
        return width & 0x3FFF, height & 0x3FFF
    raise ImageError(f"WebP with an unknown first chunk {chunk!r}")


def image_file(sha256: str, mime: str) -> str:
    return f"{IMAGES_DIR}/{sha256}.{EXTENSIONS[mime]}"


# -- rebuilding --------------------------------------------------------------------


def pointer_parts(pointer: str) -> list[str]:
    """The reference tokens of an RFC 6901 JSON pointer."""
    if not pointer.startswith("/"):
        raise ValueError(f"JSON pointer {pointer!r} must start with '/'")
    return [part.replace("~1", "/").replace("~0", "~") for part in pointer[1:].split("/")]


def make_pointer(parts: list[str | int]) -> str:
    return "".join("/" + str(part).replace("~", "~0").replace("/", "~1") for part in parts)


def restore_images(value: dict[str, Any], pointers: list[str], root: str, images_dir: str | Path) -> dict[str, Any]:
    """A deep copy of ``value`` (the record's ``root`` field) with each image reference under it
    replaced by the base64 text (or data URL) it stood for, read from ``images_dir``."""
    restored = copy.deepcopy(value)
    prefix = pointer_parts(root)
    for pointer in pointers:
        parts = pointer_parts(pointer)
        if parts[: len(prefix)] != prefix:
            continue
        *path, last = parts[len(prefix) :]
        parent: Any = restored
        for part in path:
            parent = parent[int(part)] if isinstance(parent, list) else parent[part]
        key: Any = int(last) if isinstance(parent, list) else last
        parent[key] = image_text(ImageRef.model_validate(parent[key]), images_dir)
    return restored


def image_text(ref: ImageRef, images_dir: str | Path) -> str:
    """The base64 text (data URL when the harness sent one) a reference stands for."""
    text = base64.b64encode(read_image(ref, images_dir)).decode("ascii")
    return text if ref.data_url_prefix is None else ref.data_url_prefix + text


def rebuild_request(call: "RecordedCall", images_dir: str | Path) -> dict[str, Any]:
    """The request exactly as the harness sent it, images included (``images_dir``: ``<out>/images``)."""
    return restore_images(call.request, call.images, "/request", images_dir)


def rebuild_upstream_request(call: "RecordedCall", images_dir: str | Path) -> dict[str, Any] | None:
    """The chat request the engine was sent, images included; None for chat completions (it got ``request``)."""
    if call.translation is None:
        return None
    return restore_images(call.translation.upstream_request, call.images, "/translation/upstream_request", images_dir)


def referenced_images(call: "RecordedCall") -> set[str]:
    """The files (relative to the session file's directory) a record refers to, for copying a trajectory."""
    files = set()
    record = {"request": call.request}
    if call.translation is not None:
        record["translation"] = {"upstream_request": call.translation.upstream_request}
    for pointer in call.images:
        node: Any = record
        for part in pointer_parts(pointer):
            node = node[int(part)] if isinstance(node, list) else node[part]
        files.add(ImageRef.model_validate(node).file)
    return files


def prompt_images(call: "RecordedCall") -> list[ImageRef]:
    """The stored images of the chat request the engine was sent, in the order its prompt
    holds them: messages in order, each message's parts in order (the engine expands image
    parts where they stand). ValueError naming the part when an image was not stored (an
    image URL instead of data)."""
    chat = call.translation.upstream_request if call.translation is not None else call.request
    refs = []
    for m, message in enumerate(chat.get("messages") or []):
        content = message.get("content") if isinstance(message, dict) else None
        for p, part in enumerate(content if isinstance(content, list) else []):
            if not (isinstance(part, dict) and part.get("type") == "image_url"):
                continue
            image = part.get("image_url")
            url = image.get("url") if isinstance(image, dict) else image
            if not isinstance(url, dict):
                raise ValueError(f"call {call.call_index}: messages[{m}].content[{p}] holds no stored image (a URL?)")
            refs.append(ImageRef.model_validate(url))
    return refs


def read_image(ref: ImageRef, images_dir: str | Path) -> bytes:
    """A stored image's bytes; ValueError when the store's file is not the one recorded."""
    path = Path(images_dir) / Path(ref.file).name
    data = path.read_bytes()
    if len(data) != ref.bytes:
        raise ValueError(f"{path} holds {len(data)} bytes, the record says {ref.bytes}: the image store was changed")
    return data
