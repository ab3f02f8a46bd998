"""One write-a-file conversation in each API's own shapes, shared by the SDK and schema tests."""

from __future__ import annotations

# Anthropic Messages.
MESSAGES_WRITE_TOOL = {
    "name": "write_file",
    "description": "Write a file.",
    "input_schema": {"type": "object", "properties": {"path": {"type": "string"}, "content": {"type": "string"}}},
}
MESSAGES_ASK = {"role": "user", "content": "Write hello to notes.txt."}
MESSAGES_TOOL_TURN = {"role": "assistant", "content": [{"type": "tool_use", "id": "toolu_1", "name": "write_file", "input": {"path": "notes.txt", "content": "hello"}}]}
MESSAGES_TOOL_RESULT = {"role": "user", "content": [{"type": "tool_result", "tool_use_id": "toolu_1", "content": "written"}]}

# OpenAI Responses.
RESPONSES_WRITE_TOOL = {
    "type": "function",
    "name": "write_file",
    "description": "Write a file.",
    "parameters": {"type": "object", "properties": {"path": {"type": "string"}, "content": {"type": "string"}}},
    "strict": False,
}
RESPONSES_ASK = {"role": "user", "content": [{"type": "input_text", "text": "Write hello to notes.txt."}]}
