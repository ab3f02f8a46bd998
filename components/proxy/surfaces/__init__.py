"""API surfaces the proxy serves; each translates to and from the engine's chat completions."""

from components.proxy.surfaces.base import StreamTranslator, Surface, TranslationNotes
from components.proxy.surfaces.chat import ChatSurface
from components.proxy.surfaces.messages import MessagesSurface
from components.proxy.surfaces.responses import ResponsesSurface

SURFACES: tuple[Surface, ...] = (ChatSurface(), MessagesSurface(), ResponsesSurface())

__all__ = [
    "SURFACES",
    "ChatSurface",
    "MessagesSurface",
    "ResponsesSurface",
    "StreamTranslator",
    "Surface",
    "TranslationNotes",
]
