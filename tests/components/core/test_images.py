"""Image headers, references and request rebuilding (components.core.images), without a proxy."""

from __future__ import annotations

import base64
import io
from pathlib import Path

import pytest
from PIL import Image

from components.core import RecordedCall, rebuild_request
from components.core.images import ImageError, dimensions, make_pointer, pointer_parts, restore_images, sniff


def _encoded(fmt: str, size: tuple[int, int], **options) -> bytes:
    out = io.BytesIO()
    Image.new("RGB", size, (10, 20, 30)).save(out, format=fmt, **options)
    return out.getvalue()


@pytest.mark.parametrize(
    ("fmt", "options", "mime"),
    [
        ("PNG", {}, "image/png"),
        ("JPEG", {}, "image/jpeg"),
        ("JPEG", {"progressive": True}, "image/jpeg"),
        ("JPEG", {"exif": b"Exif\x00\x00" + b"\x00" * 64}, "image/jpeg"),  # an APP1 segment before the frame header
        ("GIF", {}, "image/gif"),
        ("WEBP", {"lossless": True}, "image/webp"),
        ("WEBP", {"quality": 50}, "image/webp"),
    ],
)
def test_size_is_read_from_the_header_of_every_accepted_type(fmt: str, options: dict, mime: str) -> None:
    data = _encoded(fmt, (123, 45), **options)
    assert sniff(data) == mime
    assert dimensions(mime, data) == (123, 45)


def test_a_cut_header_is_an_image_error_not_a_crash() -> None:
    png, jpeg = _encoded("PNG", (8, 8)), _encoded("JPEG", (8, 8))
    for mime, data in (("image/png", png[:14]), ("image/jpeg", jpeg[:30]), ("image/gif", b"GIF89a"), ("image/webp", b"RIFF0000WEBPVP8Z")):
        with pytest.raises(ImageError):
            dimensions(mime, data)
    assert sniff(b"%PDF-1.7") is None


def test_pointers_escape_slashes_and_tildes() -> None:
    parts = ["request", "a/b", "c~d", 3]
    assert make_pointer(parts) == "/request/a~1b/c~0d/3"
    assert pointer_parts(make_pointer(parts)) == ["request", "a/b", "c~d", "3"]


def _record(request: dict, images: list[str] | None = None, version: str = "1.3") -> RecordedCall:
    record = {"schema_version": version, "session_id": "s", "call_index": 0, "api": "chat.completions",
              "request": request, "started_at": 0.0, "latency_ms": 1.0, "upstream_status": 200}  # fmt: skip
    if images is not None:
        record["images"] = images
    return RecordedCall.model_validate(record)


def test_a_record_from_before_images_rebuilds_to_itself(tmp_path: Path) -> None:
    request = {"messages": [{"role": "user", "content": "hi"}]}
    call = _record(request, version="1.2")
    assert call.images == [] and rebuild_request(call, tmp_path) == request


def test_rebuilding_refuses_an_image_store_that_changed(tmp_path: Path) -> None:
    data = _encoded("PNG", (4, 4))
    ref = {"sha256": "ab" * 32, "mime": "image/png", "bytes": len(data), "width": 4, "height": 4,
           "file": f"images/{'ab' * 32}.png", "data_url_prefix": "data:image/png;base64,"}  # fmt: skip
    request = {"messages": [{"role": "user", "content": [{"type": "image_url", "image_url": {"url": ref}}]}]}
    pointer = "/request/messages/0/content/0/image_url/url"
    (tmp_path / f"{'ab' * 32}.png").write_bytes(data)
    rebuilt = restore_images(request, [pointer], "/request", tmp_path)
    assert rebuilt["messages"][0]["content"][0]["image_url"]["url"] == "data:image/png;base64," + base64.b64encode(data).decode()
    assert request["messages"][0]["content"][0]["image_url"]["url"] == ref  # the record itself is untouched
    (tmp_path / f"{'ab' * 32}.png").write_bytes(data + b"x")
    with pytest.raises(ValueError, match="the image store was changed"):
        rebuild_request(_record(request, [pointer]), tmp_path)
