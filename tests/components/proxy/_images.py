"""Real PNG and JPEG screenshots for the image tests, made with Pillow, and their data URLs."""

from __future__ import annotations

import base64
import io
import os

from PIL import Image


def png(width: int = 64, height: int = 40, color: tuple[int, int, int] = (200, 30, 30), noise: bool = False) -> bytes:
    """A PNG; with ``noise`` its pixels are random, so it does not compress (a big screenshot)."""
    image = Image.frombytes("RGB", (width, height), os.urandom(width * height * 3)) if noise else Image.new("RGB", (width, height), color)
    out = io.BytesIO()
    image.save(out, format="PNG", compress_level=1)
    return out.getvalue()


def jpeg(width: int = 48, height: int = 32, color: tuple[int, int, int] = (20, 90, 200)) -> bytes:
    out = io.BytesIO()
    Image.new("RGB", (width, height), color).save(out, format="JPEG", quality=80)
    return out.getvalue()


def b64(data: bytes) -> str:
    return base64.b64encode(data).decode("ascii")


def data_url(data: bytes, mime: str = "image/png") -> str:
    return f"data:{mime};base64,{b64(data)}"


def opened_size(data: bytes) -> tuple[int, int]:
    """Width and height as Pillow decodes the file: the stored file is a valid image."""
    with Image.open(io.BytesIO(data)) as image:
        image.load()
        return image.size
