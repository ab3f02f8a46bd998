"""What a vision-language checkpoint's own processor makes of a recorded request: the
independent expansion recorded prompt ids are checked against (docs/engine.md, "Images")."""

from __future__ import annotations

import base64
import io
import json
from pathlib import Path

from components.core.images import rebuild_request, rebuild_upstream_request
from components.core.trajectory import RecordedCall


def processor_prompt_ids(call: RecordedCall, images_dir: Path, model_dir: Path) -> list[int]:
    """The chat request the engine was sent, rebuilt from the record and the image store,
    rendered by the checkpoint's chat template as vLLM prepares messages (text parts joined
    by newlines, each image as Qwen2-VL's marker, tool-call arguments parsed from their JSON)
    and expanded by its image processor: one pad per merged patch."""
    from PIL import Image
    from transformers import AutoTokenizer, Qwen2VLImageProcessorPil

    from components.engine.tiny_vl_model import IMAGE_MARKER, IMAGE_PAD

    tokenizer = AutoTokenizer.from_pretrained(model_dir)
    processor = Qwen2VLImageProcessorPil.from_pretrained(model_dir)
    request = rebuild_upstream_request(call, images_dir) or rebuild_request(call, images_dir)
    messages, images = [], []
    for message in request["messages"]:
        content = message.get("content")
        if isinstance(content, list):
            texts = []
            for part in content:
                if part["type"] == "image_url":
                    data = base64.b64decode(part["image_url"]["url"].partition(",")[2])
                    images.append(Image.open(io.BytesIO(data)).convert("RGB"))
                    texts.append(IMAGE_MARKER)
                else:
                    texts.append(part["text"])
            content = "\n".join(texts)
        calls = [
            {**call, "function": {**call["function"], "arguments": json.loads(call["function"]["arguments"] or "{}")}}
            if isinstance(call["function"].get("arguments"), str) else call
            for call in message.get("tool_calls") or []
        ]  # fmt: skip
        messages.append({**message, "content": content or "", **({"tool_calls": calls} if calls else {})})
    text = tokenizer.apply_chat_template(messages, tools=request.get("tools"), tokenize=False, add_generation_prompt=True)
    ids = tokenizer.encode(text, add_special_tokens=False)
    pad = tokenizer.convert_tokens_to_ids(IMAGE_PAD)
    counts = iter((processor(images=images, return_tensors="pt")["image_grid_thw"].prod(-1) // 4).tolist()) if images else iter(())
    expanded: list[int] = []
    for token in ids:
        expanded.extend([pad] * next(counts) if token == pad else [token])
    return expanded
