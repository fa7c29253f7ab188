"""What the model sees and writes, defined once for training, the warm-up, evaluation and the few-shot text: the
tokens and the call syntax here, the words (system prompt, first observation, ...) in prompt.py.

    template = grpo_chat_template(tokenizer)            # what TRL's GRPOTrainer renders episodes with
    stop_ids = turn_stop_ids(tokenizer, eos_ids)        # a turn ends at <|im_end|> or at </tool_call>
    ids = close_tool_call_turn(ids, tokenizer)          # ... and a turn cut at </tool_call> gets its <|im_end|>
    check_model_folder("/tmp/qc")                       # a clear error before any training, or nothing

The chat template: TRL's GRPOTrainer renders tool episodes with the tokenizer's own template when it
is prefix-preserving, else with TRL's training version of it (``grpo_chat_template``). The warm-up
needs assistant-token masks, so it renders with TRL's training template, which has generation markers
(``masked_chat_template``); ``tests/test_model_contract.py`` checks that both give the same tokens.
Tool replies are appended as TRL's tool loop appends them (``tool_reply_ids``), never by re-rendering
the model's own turns.

The stop rule: a turn ends at the end of its first tool call. Without it a model keeps writing after
``</tool_call>`` (invented ``<tool_response>`` blocks, up to the length cap), and those tokens are
generated for nothing, trained on, and seen as context by every later turn. The rule adds the
``</tool_call>`` token to the generation's end-of-turn ids (TRL reads them from
``model.generation_config.eos_token_id``) and then appends ``<|im_end|>``, so the episode's tokens are
exactly what the chat template renders for an assistant turn with one tool call. It needs
``</tool_call>`` to be one token: Qwen2.5 and Qwen3 tokenizers have it, ``models.py fetch`` adds it to
SmolLM2.

Tool calls are the hermes format Qwen's templates render: ``<tool_call>\\n{"name": ..., "arguments":
{...}}\\n</tool_call>`` (``tool_call_text``); TRL's parser reads them back (``parse_turn``).
"""

from __future__ import annotations

import json
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

TOOL_CALL_START = "<tool_call>"
TOOL_CALL_END = "</tool_call>"
END_OF_TURN = "<|im_end|>"


class ModelFolderError(ValueError):
    """A model folder this project cannot train or evaluate; the message names the folder and what is missing."""


# --- the chat template -------------------------------------------------------------------------


def grpo_chat_template(tokenizer: Any) -> str | None:
    """The template GRPOTrainer renders tool episodes with: None (the tokenizer's own) when that one is
    prefix-preserving, else TRL's training version. Qwen3's own is not: it drops the empty think block of
    earlier assistant turns, which the token-concatenating tool loop never does."""
    from trl.chat_template_utils import get_training_chat_template, is_chat_template_prefix_preserving

    return None if is_chat_template_prefix_preserving(tokenizer) else get_training_chat_template(tokenizer)


def masked_chat_template(tokenizer: Any) -> str | None:
    """A template with ``{% generation %}`` markers (for assistant-token masks) rendering GRPO's tokens:
    None when the tokenizer's own has them, else TRL's training version."""
    from trl.chat_template_utils import get_training_chat_template, has_generation_markers

    if tokenizer.chat_template and has_generation_markers(tokenizer.chat_template):
        return None
    return get_training_chat_template(tokenizer)


def render_ids(tokenizer: Any, messages: list[dict[str, Any]], *, template: str | None,
               tools: Sequence[Callable[..., str]] | None = None, add_generation_prompt: bool = False) -> list[int]:
    """Token ids of a conversation, thinking off (Qwen3's templates read ``enable_thinking``)."""
    ids = tokenizer.apply_chat_template(
        messages, tools=list(tools) if tools else None, chat_template=template, tokenize=True, return_dict=False,
        add_generation_prompt=add_generation_prompt, enable_thinking=False,
    )
    return list(ids)


def tool_reply_ids(tokenizer: Any, template: str | None, replies: list[dict[str, Any]]) -> list[int]:
    """The tokens that follow the model's end-of-turn: the tool replies, then the next assistant header.

    Rendered as TRL's tool loop does (``GRPOTrainer._get_tool_suffix_ids``): a dummy conversation with
    and without the replies, the difference taken after the last end-of-turn token.
    """
    dummy = [
        {"role": "user", "content": "dummy"},
        {"role": "assistant", "content": "",
         "tool_calls": [{"type": "function", "function": {"name": replies[0]["name"], "arguments": {}}}]},
    ]
    prefix = render_ids(tokenizer, dummy, template=template)
    full = render_ids(tokenizer, dummy + replies, template=template, add_generation_prompt=True)
    end_positions = [position for position, token in enumerate(prefix) if token == tokenizer.eos_token_id]
    if end_positions:
        prefix = prefix[: end_positions[-1] + 1]
    if full[: len(prefix)] != prefix:
        raise ValueError("the chat template renders tool replies in a way that changes the turns before them")
    return full[len(prefix) :]


# --- tool calls as text ------------------------------------------------------------------------


def tool_call_text(name: str, arguments: dict[str, Any]) -> str:
    """One tool call exactly as Qwen2.5's and Qwen3's templates render it inside an assistant turn."""
    payload = json.dumps(arguments, ensure_ascii=False)
    return f'{TOOL_CALL_START}\n{{"name": "{name}", "arguments": {payload}}}\n{TOOL_CALL_END}'


@dataclass(frozen=True)
class ParsedTurn:
    """What one generated turn holds: its tool calls (name, arguments), its text, and whether a call
    block was opened but could not be read (malformed JSON, or no closing tag)."""

    calls: list[tuple[str, dict[str, Any]]]
    content: str
    has_unreadable_call: bool


def parse_turn(tokenizer: Any, completion_ids: list[int], prompt_ids: list[int]) -> ParsedTurn:
    """Read a turn with TRL's own parser (``trl.chat_template_utils.parse_response``), as its tool loop does.

    The tokenizer needs a response template (``prepare_tokenizer``). A turn TRL cannot parse comes back
    as plain text; one that still holds ``<tool_call>`` is reported as unreadable.
    """
    from trl.chat_template_utils import parse_response

    message = parse_response(tokenizer, completion_ids, prefix=prompt_ids)
    calls = []
    for call in message.get("tool_calls") or []:
        function = call.get("function", call)
        arguments = function.get("arguments") or {}
        if isinstance(arguments, str):  # some models write the arguments object as a JSON string
            try:
                arguments = json.loads(arguments)
            except json.JSONDecodeError:
                arguments = None
        if not isinstance(function.get("name"), str) or not isinstance(arguments, dict):
            return ParsedTurn([], message.get("content", ""), has_unreadable_call=True)
        calls.append((function["name"], arguments))
    content = message.get("content") or ""
    return ParsedTurn(calls, content, has_unreadable_call=not calls and TOOL_CALL_START in content)


def prepare_tokenizer(tokenizer: Any) -> Any:
    """Give the tokenizer TRL's response template for its chat template (TRL's trainer does the same)."""
    from trl.chat_template_utils import add_response_schema

    if getattr(tokenizer, "response_template", None) is None and getattr(tokenizer, "response_schema", None) is None:
        add_response_schema(tokenizer)
    return tokenizer


# --- the stop rule -----------------------------------------------------------------------------


def single_token_id(tokenizer: Any, text: str) -> int | None:
    """The id of ``text`` when the tokenizer encodes it as exactly one token, else None."""
    ids = tokenizer.encode(text, add_special_tokens=False)
    return ids[0] if len(ids) == 1 else None


def tool_token_ids(tokenizer: Any) -> list[int]:
    """The ids of <tool_call> and </tool_call> where each is one token (none where they are text pieces)."""
    ids = [single_token_id(tokenizer, text) for text in (TOOL_CALL_START, TOOL_CALL_END)]
    return [token for token in ids if token is not None]


def turn_stop_ids(tokenizer: Any, eos_ids: Sequence[int | None]) -> list[int]:
    """Every id that ends a generated turn: the end-of-turn ids given, then ``</tool_call>``."""
    end_of_call = single_token_id(tokenizer, TOOL_CALL_END)
    if end_of_call is None:
        raise ModelFolderError(f"the tokenizer splits {TOOL_CALL_END} into several tokens; the stop rule needs one")
    return list(dict.fromkeys([*[token for token in eos_ids if token is not None], end_of_call]))


def close_tool_call_turn(ids: list[int], tokenizer: Any) -> list[int]:
    """A turn that stopped at ``</tool_call>`` ends as the template ends one: with the end-of-turn token."""
    end_of_call = single_token_id(tokenizer, TOOL_CALL_END)
    if ids and ids[-1] == end_of_call:
        return [*ids, tokenizer.convert_tokens_to_ids(END_OF_TURN)]
    return ids


def install_stop_rule(model: Any, tokenizer: Any) -> list[int]:
    """Make generation stop at ``</tool_call>``: add it to ``model.generation_config.eos_token_id``, which
    TRL reads into its end-of-completion ids and its generation config. Returns the new id list."""
    configured = model.generation_config.eos_token_id
    configured = configured if isinstance(configured, list) else [configured]
    stop_ids = turn_stop_ids(tokenizer, [tokenizer.eos_token_id, *configured])
    model.generation_config.eos_token_id = stop_ids
    return stop_ids


# --- checking a model folder before anything loads ---------------------------------------------


def check_tokenizer(tokenizer: Any, source: str) -> None:
    """Raise ModelFolderError naming ``source`` and what is missing, unless the tokenizer can play episodes."""
    from trl.chat_template_utils import supports_tool_calling

    if not tokenizer.chat_template:
        raise ModelFolderError(f"{source}: the tokenizer has no chat template; this project needs one that renders "
                               "tools and tool calls (python models.py fetch gives the real models one)")
    if not supports_tool_calling(tokenizer):
        raise ModelFolderError(f"{source}: the chat template does not render tools, tool calls and tool replies "
                               "(TRL's check); give the tokenizer a template with tool support, such as Qwen2.5's")
    try:
        prepare_tokenizer(tokenizer)
    except ValueError:
        raise ModelFolderError(f"{source}: TRL cannot parse tool calls written with this chat template (it "
                               "recognises Qwen2.5's and Qwen3's, among others); use one of those templates") from None
    if tokenizer.eos_token_id is None or tokenizer.eos_token_id == tokenizer.pad_token_id:
        raise ModelFolderError(f"{source}: the tokenizer's eos and pad tokens must differ (eos {tokenizer.eos_token!r}, "
                               f"pad {tokenizer.pad_token!r}); set eos to the end-of-turn token, pad to another")
    if single_token_id(tokenizer, TOOL_CALL_END) is None:
        raise ModelFolderError(f"{source}: {TOOL_CALL_END} is not a single token, which the stop rule needs; "
                               "python models.py fetch adds it to SmolLM2")


def check_model_folder(folder: str | Path) -> None:
    """A local model folder must hold a config and a tokenizer whose chat template renders tool episodes."""
    from transformers import AutoTokenizer

    folder = Path(folder)
    if not folder.is_dir():
        raise ModelFolderError(f"--model {folder}: no such folder")
    if not (folder / "config.json").is_file():
        raise ModelFolderError(f"--model {folder}: no config.json there (a Hugging Face model folder has one; "
                               "python models.py fetch NAME --out DIR writes one)")
    try:
        tokenizer = AutoTokenizer.from_pretrained(folder)
    except (OSError, ValueError) as error:
        raise ModelFolderError(f"--model {folder}: the tokenizer does not load ({error})") from None
    check_tokenizer(tokenizer, f"--model {folder}")
