"""The HTTP endpoints: vLLM's OpenAI-compatible subset, backed by the dev engine."""

from __future__ import annotations

import time
from typing import Any

import orjson
from aiohttp import web

from components.engine._chat_render import encode, normalize_messages, render_chat, scripted_reply_ids
from components.engine._chat_template import read_prompt
from components.engine._engine import DevEngine
from components.engine._engine_sse import chat_chunks, collect, completion_chunks, send_events
from components.engine._generation import ChoiceReply, ScriptedReply
from components.engine._vision import VisionInputs
from components.engine._protocol import (
    ApiError,
    ChatRequest,
    CompletionRequest,
    DetokenizeRequest,
    TokenizeRequest,
    parse_body,
    tool_dicts,
    without_json_format,
)
from components.engine._responses import (
    ChatStream,
    CompletionStream,
    TokenText,
    chat_response,
    completion_response,
)
from components.engine._sampling import SamplingParams
from components.core.choices import CHOICE_HEADER, DRAWN, FORCED, FORCED_FROM_HEADER, MISS, ChoiceBook
from components.core.parsers import ChatParsers
from components.core.sampling import APPLIED_SAMPLING_HEADER, NEUTRAL_SAMPLING, same_setting
from components.core.scripted_turns import MissingToolError, ScriptedTurn
from components.engine._script import Script


# Settings the sampler does not implement: refused unless neutral (requests: _protocol.py).
_UNIMPLEMENTED = ("min_p", "repetition_penalty", "presence_penalty", "frequency_penalty")


def json_response(body: Any, status: int = 200, headers: dict[str, str] | None = None) -> web.Response:
    return web.Response(body=orjson.dumps(body), status=status, content_type="application/json", headers=headers)


def _applied_header(params: SamplingParams) -> dict[str, str]:
    return {APPLIED_SAMPLING_HEADER: orjson.dumps(params.applied()).decode()}


def _marks(reply: ScriptedReply | ChoiceReply | None, choosing: bool) -> dict[str, str]:
    """What the proxy must record of how this answer was made (components/core/choices.py).

    ``choosing``: a choice book is loaded, so a request without a reply found no candidate.
    """
    if isinstance(reply, ChoiceReply):
        if len(reply.candidates) > 1:
            return {CHOICE_HEADER: DRAWN}  # the policy's own draw among whole candidates: trained on
        return {CHOICE_HEADER: FORCED, FORCED_FROM_HEADER: "0"}
    if isinstance(reply, ScriptedReply):
        return {FORCED_FROM_HEADER: str(reply.sampled_first)}
    return {CHOICE_HEADER: MISS} if choosing else {}


class Routes:
    def __init__(
        self,
        engine: DevEngine,
        *,
        served_model_name: str,
        model_root: str,
        policy_version: str,
        max_model_len: int,
        script: Script | None,
        choices: ChoiceBook | None = None,
        unconstrained_json: bool = False,
        parsers: ChatParsers = ChatParsers(),
    ) -> None:
        self.engine = engine
        self.parsers = parsers
        self.served_model_name = served_model_name
        self.model_root = model_root
        self.policy_version = policy_version
        self.max_model_len = max_model_len
        self.script = script
        self.choices = choices
        self.unconstrained_json = unconstrained_json
        self.created = int(time.time())
        self._token_text = TokenText(engine.tokenizer)

    def register(self, app: web.Application) -> None:
        app.router.add_post("/v1/chat/completions", self.chat_completions)
        app.router.add_post("/v1/completions", self.completions)
        app.router.add_post("/tokenize", self.tokenize)
        app.router.add_post("/detokenize", self.detokenize)
        app.router.add_get("/v1/models", self.models)
        app.router.add_get("/health", self.health)

    # -- generation ------------------------------------------------------------------

    async def chat_completions(self, request: web.Request) -> web.StreamResponse:
        body = await _read_json(request)
        req = parse_body(ChatRequest, without_json_format(body) if self.unconstrained_json else body)
        self._check_model(req.model)
        prompt_ids, reply, vision = await self.engine.prepare(self._prepare_chat, req)
        top = (req.top_logprobs or 0) if req.logprobs else 0
        params = self._sampling(req, prompt_ids, req.requested_max_tokens, top, reply, param="messages")
        steps = self.engine.generate(prompt_ids, params, reply, vision)
        headers = self._headers(params, reply)
        if req.stream:
            stream = ChatStream(req, self.served_model_name, prompt_ids, self._token_text, self.parsers)
            return await send_events(request, chat_chunks(stream, steps), headers)
        collected = await collect(steps)
        body = chat_response(req, self.served_model_name, prompt_ids, collected, self._token_text, self.parsers)
        return json_response(body, headers=headers)

    async def completions(self, request: web.Request) -> web.StreamResponse:
        req = parse_body(CompletionRequest, await _read_json(request))
        self._check_model(req.model)
        prompt = req.single_prompt()
        if isinstance(prompt, str):
            prompt_ids = await self.engine.prepare(
                lambda: encode(self.engine.tokenizer, prompt, add_special_tokens=req.add_special_tokens)
            )
        else:
            prompt_ids = self._checked_ids(prompt, "prompt")
        self._check_no_image_tokens(prompt_ids)
        scripted = self.script or self.choices
        reply = await self.engine.prepare(self._scripted_completion, prompt_ids) if scripted else None
        params = self._sampling(req, prompt_ids, req.max_tokens, req.logprobs or 0, reply, param="prompt")
        scored = None if req.prompt_logprobs is None else await self._score_prompt(prompt_ids, req.prompt_logprobs)
        steps = self.engine.generate(prompt_ids, params, reply)
        headers = self._headers(params, reply)
        if req.stream:
            stream = CompletionStream(req, self.served_model_name, prompt_ids, self._token_text, scored)
            return await send_events(request, completion_chunks(stream, steps), headers)
        collected = await collect(steps)
        body = completion_response(req, self.served_model_name, prompt_ids, collected, self._token_text, scored)
        return json_response(body, headers=headers)

    async def _score_prompt(self, prompt_ids: list[int], top: int) -> list[Any]:
        try:
            return await self.engine.score_prompt(prompt_ids, top)
        except ValueError as exc:
            raise ApiError(f"prompt_logprobs: {exc}; score with a text checkpoint", param="prompt_logprobs") from None

    def _headers(self, params: SamplingParams, reply: ScriptedReply | ChoiceReply | None) -> dict[str, str]:
        choosing = self.script is None and self.choices is not None
        return {**_applied_header(params), **_marks(reply, choosing)}

    def _prepare_chat(self, req: ChatRequest) -> tuple[list[int], ScriptedReply | ChoiceReply | None, VisionInputs | None]:
        tokenizer = self.engine.tokenizer
        images: list[bytes] | None = [] if self.engine.runner.vision is not None else None
        messages = normalize_messages(req.messages, images)
        tools = req.tool_dicts()
        text = render_chat(
            tokenizer,
            messages,
            tools,
            add_generation_prompt=req.add_generation_prompt,
            continue_final_message=req.continue_final_message,
        )
        turns_so_far = sum(1 for m in messages if m.get("role") == "assistant")
        reply = self._reply(text, turns_so_far, messages, tools)
        ids, vision = self._with_images(encode(tokenizer, text, add_special_tokens=req.add_special_tokens), images)
        return ids, reply, vision

    def _with_images(self, ids: list[int], images: list[bytes] | None) -> tuple[list[int], VisionInputs | None]:
        """``ids`` with image markers expanded into the vision tokens of ``images`` (vision-language models)."""
        expander = self.engine.runner.vision
        return (ids, None) if expander is None or images is None else expander.expand(ids, images)

    def _check_no_image_tokens(self, prompt_ids: list[int]) -> None:
        expander = self.engine.runner.vision
        if expander is not None and expander.pad_id in prompt_ids:
            raise ApiError(
                "this prompt holds image tokens but a completions request carries no images: "
                "send requests with images to /v1/chat/completions as image_url parts",
                param="prompt",
            )

    def _reply(
        self, text: str, turns_so_far: int, messages: list[dict[str, Any]], tools: list[dict[str, Any]] | None
    ) -> ScriptedReply | ChoiceReply | None:
        """What the script or the choice book says for this conversation; None: sample freely."""
        tokenizer = self.engine.tokenizer
        if self.script is not None:
            turn = self.script.turn_at(turns_so_far)
            return None if turn is None else _scripted_reply(tokenizer, messages, tools, turn)
        found = self.choices.candidates(text, turns_so_far) if self.choices is not None else None
        if found is None:
            return None
        task_id, turn, candidates = found
        forced = [_scripted_reply(tokenizer, messages, tools, candidate).forced_ids for candidate in candidates]
        return ChoiceReply(forced, label=f"{task_id} turn {turn}", error_rate=self.choices.error_rate)

    def _scripted_completion(self, prompt_ids: list[int]) -> ScriptedReply | ChoiceReply | None:
        """The script's turn for a chat prompt sent as token ids, as the chat endpoint would play it.

        A client holding the conversation's tokens (the recording proxy, to keep the ids
        the policy sampled) sends the rendered prompt itself; the turn and the tools are
        read back from it.
        """
        text = self.engine.tokenizer.decode(prompt_ids, skip_special_tokens=False)
        read = read_prompt(text)
        if read is None:
            return None
        turns_so_far, tools = read
        placeholder = [{"role": "user", "content": ""}]  # a Qwen2.5 assistant turn renders the same after any history
        return self._reply(text, turns_so_far, placeholder, tools)

    def _sampling(
        self,
        req: ChatRequest | CompletionRequest,
        prompt_ids: list[int],
        requested: int | None,
        top_logprobs: int,
        reply: ScriptedReply | ChoiceReply | None,
        *,
        param: str,
    ) -> SamplingParams:
        limit, used = self.max_model_len, len(prompt_ids)
        if used >= limit:
            raise ApiError(
                f"This model's maximum context length is {limit} tokens. However, your request has "
                f"{used} input tokens. Please reduce the length of the input messages.",
                param=param,
            )
        if requested is not None and requested > limit - used:
            raise ApiError(
                f"'max_tokens' or 'max_completion_tokens' is too large: {requested}. This model's "
                f"maximum context length is {limit} tokens and your request has {used} input tokens "
                f"({requested} > {limit} - {used}).",
                param="max_tokens",
            )
        chosen = self._chosen_sampling(req, reply)
        return SamplingParams(
            max_tokens=requested if requested is not None else min(limit - used, self.engine.runner.default_max_tokens or limit),
            temperature=chosen["temperature"],
            top_p=chosen["top_p"],
            top_k=max(int(chosen["top_k"]), 0),  # vLLM's -1 also means off
            seed=req.seed,
            stop=tuple(req.stop_strings),
            stop_token_ids=tuple(self._checked_ids(req.stop_token_ids or [], "stop_token_ids")),
            ignore_eos=req.ignore_eos,
            min_tokens=req.min_tokens,
            top_logprobs=top_logprobs,
            skip_special_tokens=req.skip_special_tokens,
            include_stop_str_in_output=req.include_stop_str_in_output,
        )

    def _chosen_sampling(
        self, req: ChatRequest | CompletionRequest, reply: ScriptedReply | ChoiceReply | None
    ) -> dict[str, Any]:
        """Each distribution setting: the request's, else the checkpoint's, else neutral (vLLM's
        priority), refused (400 naming it) where this engine could not sample with it."""
        defaults = {**NEUTRAL_SAMPLING, **self.engine.runner.default_sampling}
        asked = {name: _request_value(req, name) for name in NEUTRAL_SAMPLING}
        chosen = {name: asked[name] if asked[name] is not None else defaults[name] for name in NEUTRAL_SAMPLING}
        for name in _UNIMPLEMENTED:
            if asked[name] is None and not same_setting(name, chosen[name], NEUTRAL_SAMPLING[name]):
                raise ApiError(
                    f"the checkpoint's generation_config.json sets `{name}`={chosen[name]!r}, which the dev "
                    f"engine cannot apply; send `{name}`: {NEUTRAL_SAMPLING[name]!r} to sample without it, or use vLLM",
                    param=name,
                )
        if isinstance(reply, ChoiceReply):
            for name in ("top_k", "top_p"):  # a choice is drawn from the candidates' whole probabilities
                if not same_setting(name, chosen[name], NEUTRAL_SAMPLING[name]):
                    raise ApiError(
                        f"`{name}`={chosen[name]!r} cannot be applied to a choice-mode draw (it samples among "
                        f"whole candidate turns); send `{name}`: {NEUTRAL_SAMPLING[name]!r}",
                        param=name,
                    )
        return chosen

    # -- tokenizer and metadata ------------------------------------------------------

    async def tokenize(self, request: web.Request) -> web.Response:
        req = parse_body(TokenizeRequest, await _read_json(request))
        self._check_model(req.model)
        tokenizer = self.engine.tokenizer
        images: list[bytes] | None = None
        if req.messages is not None:
            images = [] if self.engine.runner.vision is not None else None
            messages = normalize_messages(req.messages, images)
            tools = tool_dicts(req.tools)
            text = await self.engine.prepare(
                lambda: render_chat(
                    tokenizer,
                    messages,
                    tools,
                    add_generation_prompt=req.add_generation_prompt,
                    continue_final_message=req.continue_final_message,
                )
            )
            add_special = bool(req.add_special_tokens)  # vLLM: off for chats
        else:
            text = req.prompt or ""
            add_special = req.add_special_tokens is not False  # vLLM: on for plain prompts
        tokens, _ = await self.engine.prepare(
            lambda: self._with_images(encode(tokenizer, text, add_special_tokens=add_special), images)
        )
        return json_response(
            {
                "count": len(tokens),
                "max_model_len": self.max_model_len,
                "tokens": tokens,
                "token_strs": tokenizer.convert_ids_to_tokens(tokens) if req.return_token_strs else None,
            }
        )

    async def detokenize(self, request: web.Request) -> web.Response:
        req = parse_body(DetokenizeRequest, await _read_json(request))
        self._check_model(req.model)
        tokens = self._checked_ids(req.tokens, "tokens")
        return json_response({"prompt": self.engine.tokenizer.decode(tokens)})

    async def models(self, request: web.Request) -> web.Response:
        card = {
            "id": self.served_model_name,
            "object": "model",
            "created": self.created,
            "owned_by": "vllm",
            "root": self.model_root,
            "parent": None,
            "max_model_len": self.max_model_len,
            "permission": [
                {
                    "id": f"modelperm-{self.policy_version}",
                    "object": "model_permission",
                    "created": self.created,
                    "allow_create_engine": False,
                    "allow_sampling": True,
                    "allow_logprobs": True,
                    "allow_search_indices": False,
                    "allow_view": True,
                    "allow_fine_tuning": False,
                    "organization": "*",
                    "group": None,
                    "is_blocking": False,
                }
            ],
            "policy_version": self.policy_version,
        }
        return json_response({"object": "list", "data": [card]})

    async def health(self, request: web.Request) -> web.Response:
        # vLLM answers an empty 200; the extra JSON is for humans, the test fixtures and the
        # engine benchmark (the prefix cache's counters).
        body = {
            "status": "ok",
            "policy_version": self.policy_version,
            "in_flight": self.engine.in_flight,
            # What the engine costs the machine, for the benchmarks that split a rollout
            # phase between the model and the harnesses (docs/benchmarks.md).
            "busy_s": round(self.engine.busy_s, 3),
            "cpu_s": round(time.process_time(), 3),
            "kv_cache": self.engine.runner.cache.snapshot(),
        }
        return json_response(body)

    # -- checks ----------------------------------------------------------------------

    def _check_model(self, model: str | None) -> None:
        if model is not None and model != self.served_model_name:
            raise ApiError(
                f"The model `{model}` does not exist. This engine serves `{self.served_model_name}`.",
                status=404,
                param="model",
            )

    def _checked_ids(self, ids: list[int], field: str) -> list[int]:
        vocab = len(self.engine.tokenizer)
        bad = [t for t in ids if not 0 <= t < vocab]
        if bad:
            raise ApiError(f"`{field}` holds token ids outside the vocabulary [0, {vocab}): {bad[:5]}", param=field)
        return ids


def _scripted_reply(
    tokenizer: Any, messages: list[dict[str, Any]], tools: list[dict[str, Any]] | None, turn: ScriptedTurn
) -> ScriptedReply:
    try:
        message = turn.as_message(tools)
    except MissingToolError as exc:
        raise ApiError(str(exc)) from None
    forced = scripted_reply_ids(tokenizer, messages, tools, message)
    if turn.sampled_text and turn.tool_calls:
        # The template writes a newline between an assistant's text and its first call.
        forced = encode(tokenizer, "\n") + forced
    return ScriptedReply(forced, turn.sampled_text)


def _request_value(req: ChatRequest | CompletionRequest, name: str) -> Any:
    value = getattr(req, name, None)
    return (req.model_extra or {}).get(name) if value is None else value


async def _read_json(request: web.Request) -> Any:
    raw = await request.read()
    try:
        return orjson.loads(raw)
    except orjson.JSONDecodeError as exc:
        raise ApiError(f"the request body is not valid JSON: {exc}") from None
