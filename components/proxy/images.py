"""Images in harness requests: checked, stored once by SHA-256, replaced by references in the record.

GUI harnesses send a screenshot with (nearly) every call, and the same screenshot often
recurs. The engine needs each image itself (vLLM reads data URLs), so the request sent
upstream keeps them; only the *record* is de-duplicated: each image is written once to
``<out>/images/<sha256>.<ext>`` and the record holds an image reference
(``components.core.images.ImageRef``) where its base64 text was, plus the JSON pointers
of those places in ``images``. A file is written (atomically, 0600) before the upstream
sees the call, so it is on disk before any record that refers to it.

Image-free calls pay one substring search of the raw body (``may_hold_images``); only a
body with a string that starts ``data:`` (Anthropic: equals ``base64``) is walked.
"""

from __future__ import annotations

import asyncio
import base64
import binascii
import hashlib
import os
import threading
from collections import OrderedDict
from pathlib import Path
from typing import Any

import pybase64

from components.core.images import (
    EXTENSIONS,
    ImageError,
    canonical_mime,
    dimensions,
    image_file,
    make_pointer,
    sniff,
)
from components.core.rollout_identity import IMAGES_DIR
from components.proxy.errors import ProxyError, bad_request

# What a body must contain to hold a base64 image, per API: a JSON string that starts a data
# URL (chat image_url, Responses input_image and screenshots), or Anthropic's base64 source
# type. One search per call: a byte search costs about as much as parsing the body.
_DATA_URL_MARK = b'"data:'
_MARKS = {"anthropic.messages": b'"base64"'}
_KNOWN_FILES = 65536  # stored images remembered in memory, so a recurring screenshot costs no stat
_TMP_FLAGS = os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_CLOEXEC | os.O_NOFOLLOW

JsonPath = tuple[str | int, ...]


def may_hold_images(api: str, raw: bytes) -> bool:
    """False when a body of this API cannot hold a base64 image: the call skips the walk."""
    return _MARKS.get(api, _DATA_URL_MARK) in raw


class ImageStore:
    """Writes each image once to ``<out>/images/``; safe to call from worker threads."""

    def __init__(self, out: Path, *, fsync: bool) -> None:
        self.directory = out / IMAGES_DIR
        self._fsync = fsync
        self._known: OrderedDict[str, None] = OrderedDict()
        self._lock = threading.Lock()

    def put(self, sha256: str, mime: str, data: bytes) -> None:
        with self._lock:
            if sha256 in self._known:
                self._known.move_to_end(sha256)
                return
        path = self.directory / f"{sha256}.{EXTENSIONS[mime]}"
        if not path.exists():  # an earlier run, or another session, may have stored it already
            try:
                self._write(path, data)
            except OSError as exc:
                raise ProxyError(
                    500, f"the proxy could not store an image in {self.directory} ({exc.strerror or exc}); call refused",
                    code="recording_failed",
                ) from exc
        with self._lock:
            self._known[sha256] = None
            if len(self._known) > _KNOWN_FILES:
                self._known.popitem(last=False)

    def _write(self, path: Path, data: bytes) -> None:
        self.directory.mkdir(mode=0o700, parents=True, exist_ok=True)
        # A unique temporary name, then rename: a reader sees the whole image or none, and two
        # writers of the same image (same bytes) simply replace one another.
        tmp = self.directory / f".{path.name}.{os.getpid()}.{threading.get_ident()}.{os.urandom(4).hex()}.tmp"
        fd = os.open(tmp, _TMP_FLAGS, 0o600)
        try:
            view = memoryview(data)
            while view:
                view = view[os.write(fd, view) :]
            if self._fsync:
                os.fsync(fd)
        except BaseException:
            os.close(fd)
            tmp.unlink(missing_ok=True)
            raise
        os.close(fd)
        os.rename(tmp, path)
        if self._fsync:  # the new name is durable only once its directory is
            dir_fd = os.open(self.directory, os.O_RDONLY | os.O_DIRECTORY)
            try:
                os.fsync(dir_fd)
            finally:
                os.close(dir_fd)


async def record_images(
    store: ImageStore, request: dict[str, Any], upstream_request: dict[str, Any] | None,
    known: dict[str, dict[str, Any]] | None,
) -> "RecordImages":  # fmt: skip
    """The call's images checked and stored, with the record's copies of the requests.

    Called when ``may_hold_images`` says the body can hold one, or for an expanded Responses
    conversation (``known``: the references of its images, already stored).
    ``upstream_request`` is the translated chat request (None for chat completions, whose
    record holds no copy of it). Hashing and writing run in a worker thread: a body of tens
    of MB must not stall the other sessions' streams.
    """
    images = RecordImages(store, known)
    await asyncio.to_thread(images.take, request, upstream_request)
    return images


class RecordImages:
    """A call's images: the record's copies of request and upstream request, with references in place."""

    def __init__(self, store: ImageStore, known: dict[str, dict[str, Any]] | None = None) -> None:
        self._store = store
        # base64 text -> reference without its data URL prefix: an image met twice is hashed once.
        self.refs: dict[str, dict[str, Any]] = dict(known or ())
        self.pointers: list[str] = []
        self.request: dict[str, Any] = {}
        self.upstream_request: dict[str, Any] | None = None

    def take(self, request: dict[str, Any], upstream_request: dict[str, Any] | None) -> None:
        self.request = self.replace(request, "/request")
        if upstream_request is not None:
            self.upstream_request = self.replace(upstream_request, "/translation/upstream_request")

    def replace(self, value: dict[str, Any], root: str) -> dict[str, Any]:
        """``value`` with every base64 image replaced by its reference (stored first); shares untouched parts."""
        found: list[tuple[JsonPath, dict[str, Any]]] = []
        for path, text, declared in _image_texts(value):
            ref = self._ref(path, text, declared)
            if ref is not None:
                found.append((path, ref))
                self.pointers.append(root + make_pointer(list(path)))
        return _with_values(value, found) if found else value

    def _ref(self, path: JsonPath, text: str, declared: str | None) -> dict[str, Any] | None:
        where = make_pointer(list(path))
        if declared is None:  # a URL: only a base64 data URL holds the image itself
            if not text.startswith("data:"):
                return None  # an http(s) URL or file id: recorded as sent
            comma = text.find(",")
            header = text[5:comma] if comma >= 0 else text[5:]
            if comma < 0 or not header.endswith(";base64"):
                raise bad_request(
                    f"the image at {where} is a data URL that is not base64-encoded ({text[:40]!r}...); "
                    "send it as data:<image type>;base64,<data>",
                    param=where,
                )
            prefix, payload, declared = text[: comma + 1], text[comma + 1 :], header.split(";", 1)[0]
        else:
            prefix, payload = None, text
        ref = self.refs.get(payload)
        if ref is None:
            ref = self.refs[payload] = self._stored(where, payload, declared)
        return {**ref, "data_url_prefix": prefix}

    def _stored(self, where: str, payload: str, declared: str) -> dict[str, Any]:
        mime = canonical_mime(declared)
        if mime not in EXTENSIONS:
            raise bad_request(
                f"the image at {where} is declared {declared!r}; the proxy records PNG, JPEG, GIF and WebP images: "
                "convert it to one of those",
                param=where,
            )
        data = _decode(where, payload)
        actual = sniff(data)
        if actual != mime:
            what = f"{actual} data" if actual else "not an image of any known type"
            raise bad_request(f"the image at {where} is declared {declared!r} but its bytes are {what}; "
                              "send the image's real type", param=where)  # fmt: skip
        try:
            width, height = dimensions(mime, data)
        except ImageError as exc:
            raise bad_request(f"the image at {where} is not a readable {mime}: {exc}", param=where) from None
        sha256 = hashlib.sha256(data).hexdigest()
        self._store.put(sha256, mime, data)
        return {"sha256": sha256, "mime": mime, "bytes": len(data), "width": width, "height": height,
                "file": image_file(sha256, mime)}  # fmt: skip


def _decode(where: str, payload: str) -> bytes:
    # The common case first: canonical base64 (it re-encodes to itself), decoded with SIMD.
    # binascii decodes about 200 MB/s here, 1.2 ms for one 260 kB screenshot holding the
    # event loop's lock; pybase64 takes 0.03 ms. Anything else goes to the strict decoder
    # below, which accepts exactly the canonical texts and names the fault of the rest.
    try:
        text = payload.encode("ascii")
        data = pybase64.b64decode(text, validate=True)
        if pybase64.b64encode(data) == text:
            return data
    except (UnicodeEncodeError, binascii.Error, ValueError):
        pass
    try:
        data = binascii.a2b_base64(payload, strict_mode=True)
    except (binascii.Error, ValueError) as exc:
        raise bad_request(f"the image at {where} is not valid base64 ({exc}); send standard base64 with padding",
                          param=where) from None  # fmt: skip
    # Strict mode still accepts non-zero bits in the padding of the last group; such text would
    # not come back byte for byte from the stored image. Only the last four characters can differ.
    tail = payload[-4:]
    if tail and base64.b64encode(base64.b64decode(tail)).decode("ascii") != tail:
        raise bad_request(f"the image at {where} has non-canonical base64 (padding bits set); re-encode it",
                          param=where)  # fmt: skip
    return data


def _image_texts(node: Any, path: JsonPath = ()) -> list[tuple[JsonPath, str, str | None]]:
    """(path, text, declared type) of every image part in a request: chat ``image_url``, Responses
    ``input_image`` and computer screenshots, Anthropic base64 ``image`` blocks; at any depth, so
    images inside ``tool_result`` and ``computer_call_output`` are found too. The declared type is
    None for URLs (the data URL names it)."""
    found: list[tuple[JsonPath, str, str | None]] = []
    stack: list[tuple[Any, JsonPath]] = [(node, path)]
    while stack:
        node, path = stack.pop()
        if isinstance(node, dict):
            kind = node.get("type")
            if kind == "image_url":
                url = node.get("image_url")
                if isinstance(url, dict) and isinstance(url.get("url"), str):
                    found.append((path + ("image_url", "url"), url["url"], None))
                elif isinstance(url, str):
                    found.append((path + ("image_url",), url, None))
            elif kind in ("input_image", "computer_screenshot") and isinstance(node.get("image_url"), str):
                found.append((path + ("image_url",), node["image_url"], None))
            elif kind == "image":
                source = node.get("source")
                if isinstance(source, dict) and source.get("type") == "base64" and isinstance(source.get("data"), str):
                    declared = source.get("media_type")
                    found.append((path + ("source", "data"), source["data"], declared if isinstance(declared, str) else ""))
            children = [(child, path + (key,)) for key, child in node.items() if isinstance(child, (dict, list))]
        elif isinstance(node, list):
            children = [(child, path + (i,)) for i, child in enumerate(node) if isinstance(child, (dict, list))]
        else:
            continue
        stack.extend(reversed(children))  # popped in document order: pointers come out in the order sent
    return found


def _with_values(value: Any, found: list[tuple[JsonPath, Any]]) -> Any:
    """A copy of ``value`` with each path set to its new value; containers off those paths are shared."""
    by_head: dict[Any, list[tuple[JsonPath, Any]]] = {}
    for path, new in found:
        if not path:
            return new
        by_head.setdefault(path[0], []).append((path[1:], new))
    copy: Any = list(value) if isinstance(value, list) else dict(value)
    for head, rest in by_head.items():
        copy[head] = _with_values(value[head], rest)
    return copy
