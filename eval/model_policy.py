"""A language model as a batch policy: batched generation, turns stopped and parsed as in training.

    model, tokenizer = load_checkpoint("outputs/easy/adapter")        # eval.checkpoint
    policy = ModelPolicy(model, tokenizer, max_new_tokens=512)        # greedy unless temperature > 0
    records = runner.play_split(split, policy, batch_size=16)

The model sees what it saw in training, token for token (``chat_format`` defines it once): the first
prompt is the chat template TRL's GRPOTrainer uses, applied to the row's messages with ``tools=`` the
SQLEnv tool methods and thinking off; after that the context grows the way TRL's tool loop grows it:
the tokens the model generated, then the tool replies (``chat_format.tool_reply_ids``), never a
re-rendering of the model's own turns. A turn stops at the end of its first tool call, which then
gets its end-of-turn token (``chat_format``'s stop rule), and is read with TRL's own parser. A turn
with no readable tool call ends the episode, as in TRL's tool loop; the reason and the model's text
go into the record.
"""

from __future__ import annotations

import time
from dataclasses import dataclass, field
from typing import Any

import torch

from agent_env import SQLEnv, tool_methods
from chat_format import (
    close_tool_call_turn,
    grpo_chat_template,
    parse_turn,
    prepare_tokenizer,
    render_ids,
    tool_reply_ids,
    turn_stop_ids,
)
from eval.runner import EpisodeEnd, StopReason
from policies import ToolCall

DEFAULT_MAX_NEW_TOKENS = 512
# --generation rounds: every row's first round of a turn is this many tokens; the rows still writing then go on
# alone. 96 tokens hold 97% of the oracle's tool-call turns on the held-out databases (Qwen2.5 tokens: median 22,
# p95 80, 1.7% over 128), so the wide first call ends long before a rambling row would reach the cap.
FIRST_ROUND_TOKENS = 96
# Share of the GPU's free memory one generate call may fill with its KV cache. The rest is headroom for
# the prefill's activations and the allocator's fragments; a call that still runs out halves the batch.
KV_CACHE_SHARE_OF_FREE_MEMORY = 0.5
CPU_TOKENS_PER_FORWARD = 512  # continuous batching on a CPU: tokens one forward pass takes (prefill chunks)


@dataclass(frozen=True)
class TurnDecision:
    """The tool calls of one model turn, or why there are none."""

    calls: list[ToolCall]
    stop_reason: StopReason | None = None


def decide_turn(tokenizer: Any, completion_ids: list[int], prompt_ids: list[int], *, truncated: bool) -> TurnDecision:
    """The calls TRL's parser reads in a generated turn, or the reason the episode stops there.

    ``truncated``: generation hit max_new_tokens, so an unfinished call was cut, not malformed.
    """
    parsed = parse_turn(tokenizer, completion_ids, prompt_ids)
    if parsed.calls:
        return TurnDecision([ToolCall(name, arguments) for name, arguments in parsed.calls])
    if truncated:
        return TurnDecision([], StopReason.TRUNCATED)
    return TurnDecision([], StopReason.MALFORMED_TOOL_CALL if parsed.has_unreadable_call else StopReason.NO_TOOL_CALL)


# --- the policy ------------------------------------------------------------------------------


@dataclass(frozen=True)
class Completion:
    ids: list[int]  # up to the first end-of-turn (a turn stopped at </tool_call> gets its end-of-turn token)
    text: str
    truncated: bool  # no end-of-turn token within max_new_tokens


@dataclass(frozen=True)
class GenerationCall:
    """One generate call of an evaluation: how wide, how long, how much of it decoded rows already finished."""

    batch: int
    longest_context: int  # tokens, after left padding every row's prompt length
    longest_new: int  # decode steps the call ran: the longest row's new tokens
    new_tokens: int  # new tokens of all rows, up to each row's end of turn
    seconds: float
    continuous: bool = False  # continuous batching: rows leave as they end, so no row-steps are idle
    # Context tokens the engine took from its prefix cache instead of computing them (vLLM's num_cached_tokens),
    # of all the rows' context tokens; None where the engine keeps no prefix cache.
    cached_context_tokens: int | None = None
    context_tokens: int = 0


def generation_summary(calls: list[GenerationCall], elapsed_s: float) -> dict[str, Any]:
    """Where an evaluation's generation time went (report.json's timing.generation). ``idle_decode_share`` is the
    share of row-steps spent on rows that had already ended their turn while the longest one decoded on."""
    if not calls:
        return {}
    seconds = sum(call.seconds for call in calls)
    padded = [call for call in calls if not call.continuous]
    slots = sum(call.batch * call.longest_new for call in padded)
    slowest = sorted(calls, key=lambda call: call.seconds, reverse=True)[:5]
    return {
        "calls": len(calls),
        "seconds": round(seconds, 3),
        "share_of_elapsed": round(seconds / elapsed_s, 3) if elapsed_s > 0 else None,
        "mean_batch": round(sum(call.batch for call in calls) / len(calls), 1),
        "decode_steps": sum(call.longest_new for call in calls),
        "row_steps": slots,  # rows x decode steps of the padded calls: the decode work, whatever the hardware
        "new_tokens": sum(call.new_tokens for call in calls),
        "idle_decode_share": round(1 - sum(call.new_tokens for call in padded) / slots, 3) if slots else None,
        "prefix_cache_hit_rate": prefix_cache_hit_rate(calls),
        "slowest_calls": [{"batch": call.batch, "longest_context": call.longest_context,
                           "longest_new": call.longest_new, "seconds": round(call.seconds, 3)} for call in slowest],
    }


def prefix_cache_hit_rate(calls: list[GenerationCall]) -> float | None:
    """The share of context tokens served from the engine's prefix cache (a turn's conversation so far is the
    previous turn's context and reply), over the calls of an engine that keeps one; None for the others."""
    cached = [call for call in calls if call.cached_context_tokens is not None]
    context = sum(call.context_tokens for call in cached)
    return round(sum(call.cached_context_tokens for call in cached) / context, 3) if context else None


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
        continuous: bool = False,
        first_round_tokens: int | None = None,
    ) -> None:
        if max_new_tokens < 1:
            raise ValueError(f"max_new_tokens must be at least 1, got {max_new_tokens}")
        if first_round_tokens is not None and first_round_tokens < 1:
            raise ValueError(f"first_round_tokens must be at least 1, got {first_round_tokens}")
        if temperature < 0:
            raise ValueError(f"temperature must be 0 (greedy) or more, got {temperature}")
        self.model = model
        self.tokenizer = tokenizer
        self.max_new_tokens = max_new_tokens
        self.temperature = temperature
        self.name = name
        self.continuous = continuous  # transformers' continuous batching instead of padded generate calls
        # Padded calls in two rounds: this many tokens for every row, then the rest for the rows still writing.
        self.first_round_tokens = first_round_tokens
        # Only the bound methods are read: transformers builds the tool schemas from them.
        self.tools = tool_methods(SQLEnv())
        self.tokenizer = prepare_tokenizer(tokenizer)
        self.end_of_turn_ids = end_of_turn_ids(model, tokenizer)
        self.stop_ids = turn_stop_ids(tokenizer, self.end_of_turn_ids)
        self.pad_id = tokenizer.pad_token_id if tokenizer.pad_token_id is not None else self.end_of_turn_ids[0]
        self.context_limit = getattr(model.config, "max_position_embeddings", None)
        self.chat_template = grpo_chat_template(tokenizer)
        self.kv_bytes_per_token = kv_cache_bytes_per_token(model)
        # The most contexts one generate call has held without running out of GPU memory (None: no limit
        # found yet); it only shrinks, so a split pays for a too-large call once.
        self.max_generation_batch: int | None = None
        self.generation_calls: list[GenerationCall] = []  # every generate call, for the report's timing
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
        parsed = self.read_turn(key, completion, context.ids)
        context.ids += completion.ids
        context.end.turns += 1
        context.end.generated_tokens += len(completion.ids)
        if parsed.stop_reason is not None:
            context.end.stop_reason = parsed.stop_reason
            context.end.final_text = completion.text
            return None
        context.pending = parsed.calls[1:]
        return parsed.calls[0]

    def read_turn(self, key: int, completion: Completion, prompt_ids: list[int]) -> TurnDecision:
        """The tool calls the model wrote this turn (benchmarks override it to act out a fixed plan)."""
        return decide_turn(self.tokenizer, completion.ids, prompt_ids, truncated=completion.truncated)

    # Tokens.

    def prompt_ids(self, messages: list[dict[str, Any]]) -> list[int]:
        return render_ids(self.tokenizer, messages, template=self.chat_template, tools=self.tools,
                          add_generation_prompt=True)

    def tool_reply_ids(self, replies: list[dict[str, Any]]) -> list[int]:
        return tool_reply_ids(self.tokenizer, self.chat_template, replies)

    def generate(self, contexts: list[list[int]]) -> list[Completion]:
        """One turn for each context; completions in the given order."""
        if self.continuous:
            return self.generate_continuous(contexts)
        first = self.first_round_tokens
        if first is None or first >= self.max_new_tokens:
            return [self._completion(new) for new in self.generate_padded(contexts, self.max_new_tokens)]
        return self.generate_in_rounds(contexts, first)

    def generate_in_rounds(self, contexts: list[list[int]], first: int) -> list[Completion]:
        """Padded calls in two rounds: ``first`` tokens for every row, then the rest of the turn's budget for the
        rows that have not ended their turn, alone. A padded call decodes as many steps as its longest row; a few
        rows that write on to the cap would otherwise hold every finished row of a wide call (the eval's 512) for
        the whole budget. Each row's tokens are the ones a single call gives it: the second round starts from the
        row's context plus what it has written (recomputed in one prefill), so greedy decoding is unchanged up to
        floating-point rounding, and sampling draws from the same distribution."""
        generated = self.generate_padded(contexts, first)
        writing = [index for index, new in enumerate(generated) if self._first_stop(new) is None]
        if writing:
            rest = self.generate_padded([contexts[index] + generated[index] for index in writing],
                                        self.max_new_tokens - first)
            for index, new in zip(writing, rest, strict=True):
                generated[index] = generated[index] + new
        return [self._completion(new) for new in generated]

    def generate_padded(self, contexts: list[list[int]], max_new_tokens: int) -> list[list[int]]:
        """Up to ``max_new_tokens`` raw new tokens for each context (a row that ended is padded after its stop),
        in as few left-padded generate calls as GPU memory allows (contexts of similar length together, so little
        of each call is padding); in the given order."""
        order = sorted(range(len(contexts)), key=lambda index: len(contexts[index]))
        ordered = [contexts[index] for index in order]
        completions: dict[int, list[int]] = {}
        start = 0
        while start < len(order):
            size = self.generation_batch(ordered[start:], max_new_tokens)
            chunk = order[start: start + size]
            try:
                generated = self.generate_batch(ordered[start: start + size], max_new_tokens)
            except torch.cuda.OutOfMemoryError:
                if len(chunk) == 1:
                    raise RuntimeError(
                        f"one episode's turn ({len(contexts[chunk[0]])} tokens of context + {max_new_tokens} new) "
                        f"does not fit in GPU memory: lower --max-new-tokens or --step-budget, or free the GPU"
                    ) from None
                self.max_generation_batch = len(chunk) // 2
                torch.cuda.empty_cache()
                continue
            completions.update(zip(chunk, generated, strict=True))
            start += len(chunk)
        return [completions[index] for index in range(len(contexts))]

    def generation_batch(self, contexts: list[list[int]], max_new_tokens: int) -> int:
        """How many of these contexts (shortest first) one generate call takes: all of them, unless the GPU's
        free memory or an earlier out-of-memory says fewer."""
        size = len(contexts) if self.max_generation_batch is None else min(len(contexts), self.max_generation_batch)
        free = free_gpu_memory(self.model)
        if free is None or not self.kv_bytes_per_token:
            return size
        # The longest context of the chunk sets every row's length (left padding), so size it by that.
        tokens = len(contexts[size - 1]) + max_new_tokens
        return contexts_that_fit(free, self.kv_bytes_per_token, tokens, size)

    @torch.no_grad()
    def generate_batch(self, contexts: list[list[int]], max_new_tokens: int) -> list[list[int]]:
        """Up to ``max_new_tokens`` raw new tokens for each context, all in one left-padded batch."""
        started = time.perf_counter()
        longest = max(len(ids) for ids in contexts)
        input_ids = torch.tensor([[self.pad_id] * (longest - len(ids)) + ids for ids in contexts])
        attention_mask = torch.tensor([[0] * (longest - len(ids)) + [1] * len(ids) for ids in contexts])
        output = self.model.generate(
            input_ids=input_ids.to(self.model.device),
            attention_mask=attention_mask.to(self.model.device),
            max_new_tokens=max_new_tokens,
            eos_token_id=self.stop_ids,
            pad_token_id=self.pad_id,
            **self._sampling(),
        )
        generated = [row[longest:].tolist() for row in output.cpu()]  # .cpu() waits for the GPU
        self.generation_calls.append(GenerationCall(
            batch=len(contexts), longest_context=longest, longest_new=output.shape[1] - longest,
            new_tokens=sum(self._written_length(new) for new in generated),
            seconds=time.perf_counter() - started))
        return generated

    @torch.no_grad()
    def generate_continuous(self, contexts: list[list[int]]) -> list[Completion]:
        """One turn for each context through transformers' continuous batching: a paged KV cache, each row
        leaving the batch at its own end of turn (no row waits on the longest), prompts sharing cache blocks."""
        from transformers import GenerationConfig

        started = time.perf_counter()
        config = GenerationConfig(max_new_tokens=self.max_new_tokens, eos_token_id=self.stop_ids,
                                  pad_token_id=self.pad_id, **self._sampling())
        outputs = list(self.model.generate_batch(inputs=contexts, generation_config=config, progress_bar=False,
                                                 continuous_batching_config=self._paged_cache(contexts)).values())
        failed = [output.error for output in outputs if output.error is not None]
        if len(outputs) != len(contexts) or failed:  # generate_batch logs failures and returns what finished
            raise RuntimeError(f"continuous batching returned {len(outputs) - len(failed)} of {len(contexts)} turns"
                               + (f"; first error: {failed[0]}" if failed else "") + "; try --generation padded")
        completions = [self._completion(list(output.generated_tokens)) for output in outputs]
        self.generation_calls.append(GenerationCall(
            batch=len(contexts), longest_context=max(len(ids) for ids in contexts),
            longest_new=max(len(output.generated_tokens) for output in outputs),
            new_tokens=sum(len(completion.ids) for completion in completions),
            seconds=time.perf_counter() - started, continuous=True))
        return completions

    def _paged_cache(self, contexts: list[list[int]]) -> Any:
        """On a GPU, transformers sizes the paged cache by free memory (and queues what does not fit); on a CPU
        it would take a share of the machine's RAM (tens of seconds to set up), so give it what the turn needs."""
        from transformers import ContinuousBatchingConfig

        if self.model.device.type == "cuda":
            return None
        block = ContinuousBatchingConfig().block_size
        blocks = sum(-(-(len(ids) + self.max_new_tokens) // block) for ids in contexts)
        return ContinuousBatchingConfig(num_blocks=blocks + 1, max_batch_tokens=CPU_TOKENS_PER_FORWARD)

    def _sampling(self) -> dict[str, Any]:
        if self.temperature > 0:
            return {"do_sample": True, "temperature": self.temperature, "top_k": 0, "top_p": 1.0}
        # None clears the checkpoint's own sampling defaults (Qwen3 ships temperature 0.6, top_k 20).
        return {"do_sample": False, "temperature": None, "top_k": None, "top_p": None}

    def _first_stop(self, generated: list[int]) -> int | None:
        """Where a row's turn ended (its first stop token), None if it did not end within these tokens."""
        return next((position for position, token in enumerate(generated) if token in self.stop_ids), None)

    def _written_length(self, generated: list[int]) -> int:
        """Tokens a row wrote in a call: up to and with its first stop, the padding after it left out."""
        end = self._first_stop(generated)
        return len(generated) if end is None else end + 1

    def _completion(self, generated: list[int]) -> Completion:
        end = self._first_stop(generated)
        ids = generated if end is None else close_tool_call_turn(generated[: end + 1], self.tokenizer)
        text = self.tokenizer.decode(ids, skip_special_tokens=True)
        return Completion(ids=ids, text=text, truncated=end is None)


def end_of_turn_ids(model: Any, tokenizer: Any) -> list[int]:
    """The tokenizer's end-of-turn token (Qwen3: <|im_end|>) first, then the model's other eos ids."""
    configured = model.generation_config.eos_token_id if model.generation_config is not None else None
    configured = configured if isinstance(configured, list) else [configured]
    ids = [tokenizer.eos_token_id] + [token for token in configured if token is not None]
    return list(dict.fromkeys(token for token in ids if token is not None))


# --- GPU memory ------------------------------------------------------------------------------------


def kv_cache_bytes_per_token(model: Any) -> int | None:
    """Bytes of KV cache one token of context takes: keys and values of every layer's KV heads (None when
    the config does not say, e.g. a stand-in model)."""
    config = getattr(model, "config", None)
    layers = getattr(config, "num_hidden_layers", None)
    heads = getattr(config, "num_attention_heads", None)
    if not isinstance(layers, int) or not isinstance(heads, int):
        return None
    kv_heads = getattr(config, "num_key_value_heads", None) or heads
    head_dim = getattr(config, "head_dim", None) or config.hidden_size // heads
    element = torch.finfo(getattr(model, "dtype", torch.float32)).bits // 8
    return 2 * layers * kv_heads * head_dim * element


def free_gpu_memory(model: Any) -> int | None:
    """Bytes a generate call can still get on the model's GPU: the driver's free memory plus what PyTorch's
    allocator holds unused. None off the GPU."""
    device = getattr(model, "device", None)
    if not isinstance(device, torch.device) or device.type != "cuda":
        return None
    free, _ = torch.cuda.mem_get_info(device)
    return free + torch.cuda.memory_reserved(device) - torch.cuda.memory_allocated(device)


def contexts_that_fit(free_bytes: int, kv_bytes_per_token: int, tokens_per_context: int, wanted: int) -> int:
    """How many of ``wanted`` contexts of this many tokens one generate call can hold, at least one."""
    fit = int(free_bytes * KV_CACHE_SHARE_OF_FREE_MEMORY) // (kv_bytes_per_token * tokens_per_context)
    return max(1, min(wanted, fit))
