"""A language model as a batch policy: batched generation and Qwen3 tool-call parsing.

    model, tokenizer = load_checkpoint("outputs/easy/adapter")        # eval.checkpoint
    policy = ModelPolicy(model, tokenizer, max_new_tokens=512)        # greedy unless temperature > 0
    records = runner.play_split(split, policy, batch_size=16)

The model sees what it saw in training, token for token. The first prompt is the chat template
applied to the row's messages with ``tools=`` the four SQLEnv tool methods and
``enable_thinking=False``, using the template TRL's GRPOTrainer uses (its prefix-preserving
training version of Qwen3's). After that the context grows the way TRL's tool loop grows it: the
tokens the model generated, then the tool replies rendered by the template (the same
dummy-conversation slicing as TRL's ``_get_tool_suffix_ids``), never a re-rendering of the
model's own turns.

A turn's ``<tool_call>{"name": ..., "arguments": {...}}</tool_call>`` blocks become ToolCalls,
played in order. A turn with no block, or with one that is not that JSON, ends the episode, as in
TRL's tool loop; the reason and the model's text go into the record.
"""

from __future__ import annotations

import json
import re
from dataclasses import dataclass, field
from typing import Any

import torch

from agent_env import SQLEnv
from eval.runner import TOOL_NAMES, EpisodeEnd, StopReason
from policies import ToolCall

DEFAULT_MAX_NEW_TOKENS = 512
TOOL_CALL_BLOCK = re.compile(r"<tool_call>(.*?)</tool_call>", re.DOTALL)
TOOL_CALL_OPEN = "<tool_call>"


# --- parsing the model's turn ----------------------------------------------------------------


@dataclass(frozen=True)
class ParsedTurn:
    """The tool calls of one model turn, or why there are none."""

    calls: list[ToolCall]
    stop_reason: StopReason | None = None


def parse_tool_call(block: str) -> ToolCall | None:
    """One block's JSON: an object with a string "name" and an "arguments" object (or that object as a
    JSON string, which models sometimes write). Anything else is malformed: None."""
    try:
        payload = json.loads(block)
    except json.JSONDecodeError:
        return None
    if not isinstance(payload, dict) or not isinstance(payload.get("name"), str):
        return None
    arguments = payload.get("arguments", {})
    if isinstance(arguments, str):
        try:
            arguments = json.loads(arguments)
        except json.JSONDecodeError:
            return None
    return ToolCall(payload["name"], arguments) if isinstance(arguments, dict) else None


def parse_turn(text: str, *, truncated: bool) -> ParsedTurn:
    """The calls in a decoded turn; the turn is rejected whole if any block is malformed (as TRL does).

    ``truncated``: generation stopped at max_new_tokens, so an unclosed block was cut, not malformed.
    """
    blocks = TOOL_CALL_BLOCK.findall(text)
    is_unclosed = text.count(TOOL_CALL_OPEN) > len(blocks)
    if is_unclosed:
        return ParsedTurn([], StopReason.TRUNCATED if truncated else StopReason.MALFORMED_TOOL_CALL)
    if not blocks:
        return ParsedTurn([], StopReason.TRUNCATED if truncated else StopReason.NO_TOOL_CALL)
    calls = [parse_tool_call(block.strip()) for block in blocks]
    if any(call is None for call in calls):
        return ParsedTurn([], StopReason.MALFORMED_TOOL_CALL)
    return ParsedTurn([call for call in calls if call is not None])


# --- the policy ------------------------------------------------------------------------------


@dataclass(frozen=True)
class Completion:
    ids: list[int]  # up to and including the first end-of-turn token
    text: str
    truncated: bool  # no end-of-turn token within max_new_tokens


@dataclass
class _Context:
    """One episode as the model sees it: token ids so far, and where the conversation was last read."""

    ids: list[int]
    messages_seen: int
    pending: list[ToolCall] = field(default_factory=list)
    end: EpisodeEnd = field(default_factory=EpisodeEnd)


class ModelPolicy:
    """Generates the next turn of many episodes in one batch (left padding); greedy by default."""

    def __init__(
        self,
        model: Any,
        tokenizer: Any,
        *,
        max_new_tokens: int = DEFAULT_MAX_NEW_TOKENS,
        temperature: float = 0.0,
        name: str = "model",
    ) -> None:
        if max_new_tokens < 1:
            raise ValueError(f"max_new_tokens must be at least 1, got {max_new_tokens}")
        if temperature < 0:
            raise ValueError(f"temperature must be 0 (greedy) or more, got {temperature}")
        self.model = model
        self.tokenizer = tokenizer
        self.max_new_tokens = max_new_tokens
        self.temperature = temperature
        self.name = name
        env = SQLEnv()  # only its bound methods are read: transformers builds the tool schemas from them
        self.tools = [getattr(env, tool) for tool in TOOL_NAMES]
        self.end_of_turn_ids = end_of_turn_ids(model, tokenizer)
        self.pad_id = tokenizer.pad_token_id if tokenizer.pad_token_id is not None else self.end_of_turn_ids[0]
        self.context_limit = getattr(model.config, "max_position_embeddings", None)
        self.chat_template = training_chat_template(tokenizer)
        self._contexts: dict[int, _Context | None] = {}

    # The runner's BatchPolicy protocol.

    def start(self, key: int, row: dict[str, Any]) -> None:
        self._contexts[key] = None  # the prompt is rendered on the first turn, from the reset conversation

    def next_calls(self, conversations: dict[int, list[dict[str, Any]]]) -> dict[int, ToolCall | None]:
        decisions: dict[int, ToolCall | None] = {}
        to_generate = []
        for key, messages in conversations.items():
            context = self._context(key, messages)
            if context.pending:
                decisions[key] = context.pending.pop(0)
            elif self.context_limit is not None and len(context.ids) + self.max_new_tokens > self.context_limit:
                context.end.stop_reason = StopReason.CONTEXT_FULL
                decisions[key] = None
            else:
                to_generate.append(key)
        if to_generate:
            completions = self.generate([self._contexts[key].ids for key in to_generate])
            for key, completion in zip(to_generate, completions, strict=True):
                decisions[key] = self._take_turn(key, completion)
        return decisions

    def finish(self, key: int) -> EpisodeEnd:
        context = self._contexts.pop(key)
        return context.end if context is not None else EpisodeEnd()

    # Contexts.

    def _context(self, key: int, messages: list[dict[str, Any]]) -> _Context:
        context = self._contexts[key]
        if context is None:
            context = _Context(ids=self.prompt_ids(messages), messages_seen=len(messages))
            self._contexts[key] = context
        elif not context.pending and len(messages) > context.messages_seen:
            replies = [message for message in messages[context.messages_seen :] if message["role"] == "tool"]
            context.ids += self.tool_reply_ids(replies)
            context.messages_seen = len(messages)
        return context

    def _take_turn(self, key: int, completion: Completion) -> ToolCall | None:
        context = self._contexts[key]
        context.ids += completion.ids
        context.end.turns += 1
        context.end.generated_tokens += len(completion.ids)
        parsed = self.read_turn(key, completion)
        if parsed.stop_reason is not None:
            context.end.stop_reason = parsed.stop_reason
            context.end.final_text = completion.text
            return None
        context.pending = parsed.calls[1:]
        return parsed.calls[0]

    def read_turn(self, key: int, completion: Completion) -> ParsedTurn:
        """The tool calls the model wrote this turn (benchmarks override it to act out a fixed plan)."""
        return parse_turn(completion.text, truncated=completion.truncated)

    # Tokens.

    def prompt_ids(self, messages: list[dict[str, Any]]) -> list[int]:
        return self._chat_ids(messages, tools=self.tools, add_generation_prompt=True)

    def tool_reply_ids(self, replies: list[dict[str, Any]]) -> list[int]:
        """The tokens that follow the model's end-of-turn: the tool replies, then the next assistant header.

        Rendered as TRL does (``GRPOTrainer._get_tool_suffix_ids``): a dummy conversation with and
        without the replies, the difference taken after the last end-of-turn token.
        """
        dummy = [
            {"role": "user", "content": "dummy"},
            {
                "role": "assistant",
                "content": "",
                "tool_calls": [{"type": "function", "function": {"name": replies[0]["name"], "arguments": {}}}],
            },
        ]
        prefix = self._chat_ids(dummy, add_generation_prompt=False)
        full = self._chat_ids(dummy + replies, add_generation_prompt=True)
        end_positions = [position for position, token in enumerate(prefix) if token == self.tokenizer.eos_token_id]
        if end_positions:
            prefix = prefix[: end_positions[-1] + 1]
        if full[: len(prefix)] != prefix:
            raise ValueError("the chat template renders tool replies in a way that changes the turns before them")
        return full[len(prefix) :]

    def _chat_ids(self, messages: list[dict[str, Any]], **options: Any) -> list[int]:
        ids = self.tokenizer.apply_chat_template(
            messages, chat_template=self.chat_template, tokenize=True, return_dict=False, enable_thinking=False,
            **options,
        )
        return list(ids)

    @torch.no_grad()
    def generate(self, contexts: list[list[int]]) -> list[Completion]:
        """One turn for each context, all in one left-padded batch."""
        longest = max(len(ids) for ids in contexts)
        input_ids = torch.tensor([[self.pad_id] * (longest - len(ids)) + ids for ids in contexts])
        attention_mask = torch.tensor([[0] * (longest - len(ids)) + [1] * len(ids) for ids in contexts])
        output = self.model.generate(
            input_ids=input_ids.to(self.model.device),
            attention_mask=attention_mask.to(self.model.device),
            max_new_tokens=self.max_new_tokens,
            eos_token_id=self.end_of_turn_ids,
            pad_token_id=self.pad_id,
            **self._sampling(),
        )
        return [self._completion(row[longest:].tolist()) for row in output.cpu()]

    def _sampling(self) -> dict[str, Any]:
        if self.temperature > 0:
            return {"do_sample": True, "temperature": self.temperature, "top_k": 0, "top_p": 1.0}
        # None clears the checkpoint's own sampling defaults (Qwen3 ships temperature 0.6, top_k 20).
        return {"do_sample": False, "temperature": None, "top_k": None, "top_p": None}

    def _completion(self, generated: list[int]) -> Completion:
        end = next((position for position, token in enumerate(generated) if token in self.end_of_turn_ids), None)
        ids = generated if end is None else generated[: end + 1]
        text = self.tokenizer.decode(ids, skip_special_tokens=True)
        return Completion(ids=ids, text=text, truncated=end is None)


def training_chat_template(tokenizer: Any) -> str | None:
    """The template TRL's GRPOTrainer renders tool episodes with: None (the tokenizer's own) when that one
    is prefix-preserving, else TRL's patched training version of it. Qwen3's own is not prefix-preserving:
    it drops the empty think block of earlier assistant turns, which training never does."""
    from trl.chat_template_utils import get_training_chat_template, is_chat_template_prefix_preserving

    return None if is_chat_template_prefix_preserving(tokenizer) else get_training_chat_template(tokenizer)


def end_of_turn_ids(model: Any, tokenizer: Any) -> list[int]:
    """The tokenizer's end-of-turn token (Qwen3: <|im_end|>) first, then the model's other eos ids."""
    configured = model.generation_config.eos_token_id if model.generation_config is not None else None
    configured = configured if isinstance(configured, list) else [configured]
    ids = [tokenizer.eos_token_id] + [token for token in configured if token is not None]
    return list(dict.fromkeys(token for token in ids if token is not None))
