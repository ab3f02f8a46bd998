"""Request bodies the dev engine accepts, with vLLM's field names and defaults.

Like vLLM, unknown fields are accepted and ignored (``extra="allow"``). Fields vLLM
knows but the dev engine cannot honour are accepted at their neutral value and refused
otherwise, so a client never silently gets different behaviour than it asked for.
"""

from __future__ import annotations

from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field, ValidationError, model_validator

from components.core.parsers import parses_tools

MAX_TOP_LOGPROBS = 20  # vLLM's default --max-logprobs


class ApiError(Exception):
    """A request the engine refuses; rendered in vLLM's error shape."""

    def __init__(self, message: str, *, status: int = 400, param: str | None = None) -> None:
        super().__init__(message)
        self.message = message
        self.status = status
        self.param = param

    @property
    def error_type(self) -> str:
        return {400: "BadRequestError", 404: "NotFoundError", 405: "MethodNotAllowed"}.get(
            self.status, "InternalServerError"
        )

    def body(self) -> dict[str, Any]:
        return {
            "error": {"message": self.message, "type": self.error_type, "param": self.param, "code": self.status}
        }


class _Body(BaseModel):
    model_config = ConfigDict(extra="allow")


class StreamOptions(_Body):
    include_usage: bool | None = False
    continuous_usage_stats: bool | None = False


class FunctionDefinition(_Body):
    name: str
    description: str | None = None
    parameters: dict[str, Any] | None = None


class ToolParam(_Body):
    type: Literal["function"] = "function"
    function: FunctionDefinition


def tool_dicts(tools: list[ToolParam] | None) -> list[dict[str, Any]] | None:
    """Tools as the chat template receives them (unset optional fields left out)."""
    return [tool.model_dump(exclude_none=True) for tool in tools] if tools else None


# Sampling knobs vLLM has and the dev engine does not implement, with their neutral value.
_NEUTRAL_VALUES: dict[str, tuple[Any, ...]] = {
    "frequency_penalty": (None, 0, 0.0),
    "presence_penalty": (None, 0, 0.0),
    "repetition_penalty": (None, 1, 1.0),
    "min_p": (None, 0, 0.0),
    "logit_bias": (None, {}),
    "use_beam_search": (None, False),
    "echo": (None, False),
    "suffix": (None,),
    "prompt_logprobs": (None,),  # on chat requests (vLLM: 0 is the prompt tokens alone, not off); /v1/completions serves it
    "allowed_token_ids": (None,),
    "bad_words": (None, []),
    "response_format": (None, {"type": "text"}),
    "structured_outputs": (None,),
    "guided_json": (None,),
    "guided_regex": (None,),
    "guided_choice": (None,),
}


# Structured outputs the dev engine can serve without the constraint (`--unconstrained-json`).
_JSON_FORMATS = ("json_schema", "json_object")


def without_json_format(body: Any) -> Any:
    """``body`` without a JSON ``response_format``, for an engine told to sample unconstrained.

    The dev engine cannot constrain decoding. GUI harnesses such as browser-use ask for a
    JSON schema on every call, so a CPU run of them needs the request served anyway; the
    answer is then whatever the model samples (the recorded logprobs are still exactly
    those of the sampled tokens, so training stays on-policy). vLLM enforces the schema.
    """
    if isinstance(body, dict) and isinstance(body.get("response_format"), dict):
        if body["response_format"].get("type") in _JSON_FORMATS:
            return {key: value for key, value in body.items() if key != "response_format"}
    return body


class _Generation(_Body):
    """Fields chat and text completions share."""

    model: str | None = None
    temperature: float | None = Field(None, ge=0)
    top_p: float | None = Field(None, gt=0, le=1)
    top_k: int | None = None
    n: int | None = 1
    seed: int | None = None
    stop: str | list[str] | None = None
    stop_token_ids: list[int] | None = None
    stream: bool | None = False
    stream_options: StreamOptions | None = None
    ignore_eos: bool = False
    min_tokens: int = Field(0, ge=0)
    skip_special_tokens: bool = True
    include_stop_str_in_output: bool = False
    return_token_ids: bool | None = None

    @model_validator(mode="after")
    def _check_common(self) -> "_Generation":
        if self.n not in (None, 1):
            raise ApiError(
                f"n={self.n} is not supported by the dev engine: it returns one choice per "
                "request; send n=1 (or several requests)",
                param="n",
            )
        if self.stream_options is not None and not self.stream:
            raise ApiError("Stream options can only be defined when `stream=True`.", param="stream_options")
        extras = self.model_extra or {}
        for field, neutral in _NEUTRAL_VALUES.items():
            if field in extras and extras[field] not in neutral:
                raise ApiError(
                    f"`{field}`={extras[field]!r} is not supported by the dev engine "
                    "(see docs/engine.md); leave it out or use vLLM",
                    param=field,
                )
        return self

    @property
    def stop_strings(self) -> list[str]:
        stops = [self.stop] if isinstance(self.stop, str) else self.stop or []
        return [s for s in stops if s]  # an empty stop string would end every answer at once


class ChatRequest(_Generation):
    messages: list[dict[str, Any]] = Field(min_length=1)
    tools: list[ToolParam] | None = None
    tool_choice: str | dict[str, Any] | None = None
    max_tokens: int | None = Field(None, ge=1)
    max_completion_tokens: int | None = Field(None, ge=1)
    logprobs: bool | None = False
    top_logprobs: int | None = Field(None, ge=0, le=MAX_TOP_LOGPROBS)
    add_generation_prompt: bool = True
    continue_final_message: bool = False
    add_special_tokens: bool = False  # the chat template writes its own special tokens

    @model_validator(mode="after")
    def _check_chat(self) -> "ChatRequest":
        if self.top_logprobs and not self.logprobs:
            raise ApiError("when using `top_logprobs`, `logprobs` must be set to true.", param="top_logprobs")
        if self.continue_final_message and self.add_generation_prompt:
            raise ApiError(
                "Cannot set both `continue_final_message` and `add_generation_prompt` to True.",
                param="continue_final_message",
            )
        return self

    @property
    def requested_max_tokens(self) -> int | None:
        return self.max_completion_tokens if self.max_completion_tokens is not None else self.max_tokens

    @property
    def parses_tools(self) -> bool:
        return parses_tools(self.tools, self.tool_choice)

    def tool_dicts(self) -> list[dict[str, Any]] | None:
        return tool_dicts(self.tools)


class CompletionRequest(_Generation):
    prompt: str | list[int] | list[str] | list[list[int]]
    # Left out, max_tokens is 16 (OpenAI's default); an explicit null means no limit of the
    # request's own, as in vLLM: the context left, capped by generation_config.json.
    max_tokens: int | None = Field(16, ge=1)
    logprobs: int | None = Field(None, ge=0, le=MAX_TOP_LOGPROBS)
    # vLLM's: each prompt token's logprob (and this many top alternatives) after the ones before it.
    prompt_logprobs: int | None = Field(None, ge=0, le=MAX_TOP_LOGPROBS)
    add_special_tokens: bool = True

    def single_prompt(self) -> str | list[int]:
        prompt = self.prompt
        if isinstance(prompt, list) and prompt and not isinstance(prompt[0], int):
            if len(prompt) != 1:
                raise ApiError(
                    f"`prompt` holds {len(prompt)} prompts; the dev engine serves one prompt per "
                    "request, send them separately",
                    param="prompt",
                )
            prompt = prompt[0]
        if not prompt:
            raise ApiError("Either prompt or prompt_embeds must be provided and non-empty.", param="prompt")
        return prompt


class TokenizeRequest(_Body):
    model: str | None = None
    prompt: str | None = None
    messages: list[dict[str, Any]] | None = None
    tools: list[ToolParam] | None = None
    add_generation_prompt: bool = True
    continue_final_message: bool = False
    add_special_tokens: bool | None = None
    return_token_strs: bool | None = False

    @model_validator(mode="after")
    def _one_input(self) -> "TokenizeRequest":
        if (self.prompt is None) == (self.messages is None):
            raise ApiError("send exactly one of `prompt` (text) or `messages` (a chat)", param="prompt")
        return self


class DetokenizeRequest(_Body):
    model: str | None = None
    tokens: list[int]


def parse_body(model: type[BaseModel], data: Any) -> Any:
    """Validate a decoded JSON body; raise ApiError naming the offending field."""
    if not isinstance(data, dict):
        raise ApiError(f"the request body must be a JSON object, got {type(data).__name__}")
    try:
        return model.model_validate(data)
    except ValidationError as exc:
        first = exc.errors()[0]
        field = ".".join(str(part) for part in first["loc"]) or None
        message = first["msg"].removeprefix("Value error, ")
        if field:
            message = f"invalid field `{field}`: {message} (got {_short(first.get('input'))})"
        raise ApiError(message, param=field) from None


def _short(value: Any) -> str:
    text = repr(value)
    return text if len(text) <= 80 else text[:77] + "..."
