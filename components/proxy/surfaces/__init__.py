"""API surfaces the proxy serves; each translates to and from the engine's chat completions."""

from components.proxy.surfaces.base import StreamTranslator, Surface
from components.proxy.surfaces.chat import ChatSurface

SURFACES: tuple[Surface, ...] = (ChatSurface(),)

__all__ = ["SURFACES", "ChatSurface", "StreamTranslator", "Surface"]
