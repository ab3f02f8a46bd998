"""A transformers KV cache whose tensors grow in place instead of being re-concatenated.

transformers' ``DynamicCache`` appends with ``torch.cat``, copying the whole cache on every
decoded token: at a 20k-token harness prompt that copy costs more than the attention
itself. Here each layer keeps a buffer with spare room, writes new keys and values into
it, and exposes the filled part as views; the buffer is copied only when it grows (by a
quarter), so decoding is amortised O(1) in copies. Cropping just shortens the views.
"""

from __future__ import annotations

from typing import Any

from transformers.cache_utils import Cache, DynamicLayer

_GROWTH = 1.25  # capacity after a resize, as a multiple of what is needed
_ROUND_TO = 1024  # tokens: resizes are rare and buffers come in familiar sizes


class GrowingLayer(DynamicLayer):
    """One layer's keys and values; ``keys``/``values`` are views of the filled part."""

    def lazy_initialization(self, key_states: Any, value_states: Any) -> None:
        super().lazy_initialization(key_states, value_states)
        self._key_buffer = key_states.new_empty((*key_states.shape[:-2], 0, key_states.shape[-1]))
        self._value_buffer = value_states.new_empty((*value_states.shape[:-2], 0, value_states.shape[-1]))

    def update(self, key_states: Any, value_states: Any, *args: Any, **kwargs: Any) -> tuple[Any, Any]:
        if not self.is_initialized:
            self.lazy_initialization(key_states, value_states)
        start = self.get_seq_length()
        end = start + key_states.shape[-2]
        if end > self._key_buffer.shape[-2]:
            self._resize(end)
        self._key_buffer[..., start:end, :].copy_(key_states)
        self._value_buffer[..., start:end, :].copy_(value_states)
        self.keys = self._key_buffer[..., :end, :]
        self.values = self._value_buffer[..., :end, :]
        return self.keys, self.values

    def _resize(self, needed: int) -> None:
        capacity = -(-int(needed * _GROWTH) // _ROUND_TO) * _ROUND_TO
        length = self.get_seq_length()
        self._key_buffer = _moved(self._key_buffer, length, capacity)
        self._value_buffer = _moved(self._value_buffer, length, capacity)
        self.keys = self._key_buffer[..., :length, :]
        self.values = self._value_buffer[..., :length, :]

    def prefix_copy(self, length: int) -> GrowingLayer:
        """A layer of its own holding this layer's first ``length`` tokens."""
        layer = GrowingLayer()
        if self.is_initialized:
            layer.update(self.keys[..., :length, :], self.values[..., :length, :])
        return layer

    @property
    def nbytes(self) -> int:
        if not self.is_initialized:
            return 0
        return self._key_buffer.nbytes + self._value_buffer.nbytes


def _moved(buffer: Any, length: int, capacity: int) -> Any:
    grown = buffer.new_empty((*buffer.shape[:-2], capacity, buffer.shape[-1]))
    grown[..., :length, :].copy_(buffer[..., :length, :])
    return grown


class GrowingCache(Cache):
    """A ``Cache`` of ``GrowingLayer``s, one per model layer, created as the model fills them."""

    def __init__(self, layers: list[GrowingLayer] | None = None) -> None:
        if layers is None:
            super().__init__(layer_class_to_replicate=GrowingLayer)
        else:
            super().__init__(layers=layers)

    def prefix_copy(self, length: int) -> GrowingCache:
        """An independent cache of the first ``length`` tokens; this one is left as it is."""
        return GrowingCache([layer.prefix_copy(length) for layer in self.layers])

    @property
    def nbytes(self) -> int:
        return sum(layer.nbytes for layer in self.layers)
