"""EmbeddingGemma-300M (fp32 safetensors) to a Q8_0 GGUF that llama-server embeds with, without torch.

    python benchmarks/gemma_gguf.py MODEL_DIR OUT.gguf

What llama.cpp's ``gemma-embedding`` architecture reads, as its own converter writes it for a
``Gemma3TextModel``: the Gemma 3 hyperparameters (both rope bases, the model's own 512-token
sliding window), mean pooling from the sentence-transformers ``1_Pooling`` config, the two Dense
projections (768 -> 3072 -> 768) that follow the pooling, the SentencePiece vocabulary with the
added-token types from ``tokenizer_config.json``, and every norm weight shifted by one (Gemma's
RMSNorm multiplies by ``1 + w``). 2-D weights become Q8_0, norms and other 1-D tensors stay F32.
The safetensors are read with numpy (a JSON header, then little-endian arrays) and the
SentencePiece model with a small protobuf reader, so nothing beyond ``gguf`` and numpy is needed.
"""

from __future__ import annotations

import json
import logging
import struct
import sys
from collections.abc import Iterator
from pathlib import Path

import gguf
import numpy as np

ARCH = gguf.MODEL_ARCH.GEMMA_EMBEDDING
DENSE = {"2_Dense": "dense_2", "3_Dense": "dense_3"}
DTYPES = {"F32": np.float32, "F16": np.float16}
SPECIAL_LOOKING = ("<pad>", "<mask>", "<2mass>", "[@BOS@]")


def read_safetensors(path: Path) -> dict[str, np.ndarray]:
    """Every tensor of a .safetensors file as a read-only array mapped from the file, in header order."""
    with path.open("rb") as file:
        (length,) = struct.unpack("<Q", file.read(8))
        header = json.loads(file.read(length))
    data = np.memmap(path, dtype=np.uint8, mode="r", offset=8 + length)
    tensors = {}
    for name, entry in header.items():
        if name == "__metadata__":
            continue
        if entry["dtype"] not in DTYPES:
            raise ValueError(f"{path.name}: tensor {name} has dtype {entry['dtype']}, expected one of {list(DTYPES)}")
        start, end = entry["data_offsets"]
        tensors[name] = data[start:end].view(DTYPES[entry["dtype"]]).reshape(entry["shape"])
    return tensors


def _varint(buffer: bytes, position: int) -> tuple[int, int]:
    result = shift = 0
    while True:
        byte = buffer[position]
        position += 1
        result |= (byte & 0x7F) << shift
        if byte < 0x80:
            return result, position
        shift += 7


def _fields(buffer: bytes) -> Iterator[tuple[int, int | bytes | float]]:
    """(field number, value) of one protobuf message: varints, length-delimited bytes and 32-bit floats."""
    position = 0
    while position < len(buffer):
        key, position = _varint(buffer, position)
        number, wire = key >> 3, key & 7
        if wire == 0:
            value, position = _varint(buffer, position)
            yield number, value
        elif wire == 2:
            size, position = _varint(buffer, position)
            yield number, buffer[position : position + size]
            position += size
        elif wire == 5:
            yield number, struct.unpack("<f", buffer[position : position + 4])[0]
            position += 4
        elif wire == 1:
            position += 8
        else:
            raise ValueError(f"tokenizer.model: unsupported protobuf wire type {wire}")


def sentencepiece_pieces(path: Path) -> list[tuple[bytes, float, int]]:
    """(piece, score, type) for each entry of a SentencePiece ModelProto (field 1 of the model)."""
    pieces = []
    for number, message in _fields(path.read_bytes()):
        if number != 1 or not isinstance(message, bytes):
            continue
        piece, score, kind = b"", 0.0, 1  # proto defaults: type NORMAL
        for field, value in _fields(message):
            if field == 1 and isinstance(value, bytes):
                piece = value
            elif field == 2 and isinstance(value, float):
                score = value
            elif field == 3 and isinstance(value, int):
                kind = value
        pieces.append((piece, score, kind))
    return pieces


def vocabulary(model_dir: Path, size: int) -> tuple[list[bytes], list[float], list[int]]:
    """Tokens, scores and llama.cpp token types, the way the SentencePiece processor reports them."""
    Type = gguf.TokenType
    tokens = [f"[PAD{i}]".encode() for i in range(size)]
    scores = [-10000.0] * size
    types = [int(Type.UNUSED)] * size
    kinds = {2: Type.UNKNOWN, 3: Type.CONTROL, 5: Type.UNUSED, 6: Type.BYTE}  # user-defined pieces read as normal
    for index, (piece, score, kind) in enumerate(sentencepiece_pieces(model_dir / "tokenizer.model")[:size]):
        tokens[index], scores[index], types[index] = piece, score, int(kinds.get(kind, Type.NORMAL))
    added = model_dir / "added_tokens.json"
    for text, index in (json.loads(added.read_text()) if added.is_file() else {}).items():
        if index < size:
            tokens[index], scores[index], types[index] = text.encode(), -1000.0, int(Type.USER_DEFINED)
    config = json.loads((model_dir / "tokenizer_config.json").read_text())
    for key, entry in config.get("added_tokens_decoder", {}).items():
        index, text = int(key), entry["content"]
        if index >= size:
            continue
        if entry.get("special") or looks_special(text):
            types[index] = int(Type.CONTROL)
        else:
            text = text.replace("\u2581", " ")
            types[index] = int(Type.USER_DEFINED)
        tokens[index], scores[index] = text.encode(), -1000.0
    return tokens, scores, types


def looks_special(text: str) -> bool:
    """Added tokens that Gemma's files leave unmarked but that llama.cpp treats as control tokens."""
    return (
        text in SPECIAL_LOOKING
        or (text.startswith("<|") and text.endswith("|>"))
        or (text.startswith("<unused") and text.endswith(">"))
    )


def write_parameters(writer: gguf.GGUFWriter, model_dir: Path) -> None:
    config = json.loads((model_dir / "config.json").read_text())
    writer.add_name("EmbeddingGemma 300M")
    writer.add_license("gemma")
    writer.add_block_count(config["num_hidden_layers"])
    writer.add_context_length(config["max_position_embeddings"])
    writer.add_embedding_length(config["hidden_size"])
    writer.add_feed_forward_length(config["intermediate_size"])
    writer.add_head_count(config["num_attention_heads"])
    writer.add_head_count_kv(config["num_key_value_heads"])
    writer.add_rope_freq_base(config["rope_theta"])
    writer.add_rope_freq_base_swa(config["rope_local_base_freq"])
    writer.add_layer_norm_rms_eps(config["rms_norm_eps"])
    writer.add_key_length(config["head_dim"])
    writer.add_value_length(config["head_dim"])
    writer.add_file_type(gguf.LlamaFileType.MOSTLY_Q8_0)
    writer.add_sliding_window(config["sliding_window"])
    pooling = json.loads((model_dir / "1_Pooling" / "config.json").read_text())
    if not pooling["pooling_mode_mean_tokens"]:
        raise ValueError("1_Pooling/config.json: expected mean pooling")
    writer.add_pooling_type(gguf.PoolingType.MEAN)
    for folder, prefix in DENSE.items():
        dense = json.loads((model_dir / folder / "config.json").read_text())
        writer.add_dense_features_dims(prefix, dense["in_features"], dense["out_features"])


def write_vocabulary(writer: gguf.GGUFWriter, model_dir: Path, size: int) -> None:
    tokens, scores, types = vocabulary(model_dir, size)
    writer.add_tokenizer_model("llama")
    writer.add_tokenizer_pre("default")
    writer.add_token_list(tokens)
    writer.add_token_scores(scores)
    writer.add_token_types(types)
    gguf.SpecialVocab(model_dir, n_vocab=len(tokens)).add_to_gguf(writer)
    writer.add_add_space_prefix(False)


def model_tensors(model_dir: Path) -> Iterator[tuple[str, np.ndarray]]:
    """(GGUF name, fp32 array) of the transformer, then of the two Dense projections."""
    names = gguf.get_tensor_name_map(ARCH, json.loads((model_dir / "config.json").read_text())["num_hidden_layers"])
    for name, data in read_safetensors(model_dir / "model.safetensors").items():
        mapped = names.get_name(name, try_suffixes=(".weight", ".bias"))
        if mapped is None:
            raise ValueError(f"model.safetensors: no GGUF name for tensor {name}")
        array = data.astype(np.float32)
        yield mapped, array + 1.0 if name.endswith("norm.weight") else array
    for folder, prefix in DENSE.items():
        for name, data in read_safetensors(model_dir / folder / "model.safetensors").items():
            if name.endswith(".weight"):
                yield names.get_name(f"{prefix}.weight", try_suffixes=(".weight",)), data.astype(np.float32)


def quantized(name: str, data: np.ndarray) -> tuple[np.ndarray, gguf.GGMLQuantizationType]:
    if data.ndim <= 1 or name.endswith("_norm.weight"):
        return data, gguf.GGMLQuantizationType.F32
    try:
        return gguf.quants.quantize(data, gguf.GGMLQuantizationType.Q8_0), gguf.GGMLQuantizationType.Q8_0
    except gguf.QuantError:
        return data.astype(np.float16), gguf.GGMLQuantizationType.F16


def convert(model_dir: Path, out: Path) -> None:
    """Write the Q8_0 GGUF of the EmbeddingGemma checkpoint in ``model_dir`` to ``out``."""
    config = json.loads((model_dir / "config.json").read_text())
    if config.get("architectures") != ["Gemma3TextModel"]:
        raise ValueError(f"{model_dir}/config.json: expected a Gemma3TextModel, found {config.get('architectures')}")
    logging.getLogger("gguf.vocab").setLevel(logging.ERROR)  # it warns of the unused pair template
    writer = gguf.GGUFWriter(str(out), gguf.MODEL_ARCH_NAMES[ARCH])
    write_parameters(writer, model_dir)
    write_vocabulary(writer, model_dir, config["vocab_size"])
    for name, data in model_tensors(model_dir):
        array, kind = quantized(name, data)
        writer.add_tensor(name, array, raw_dtype=kind)
    writer.write_header_to_file()
    writer.write_kv_data_to_file()
    writer.write_tensors_to_file()
    writer.close()


if __name__ == "__main__":
    if len(sys.argv) != 3:
        sys.exit("usage: python benchmarks/gemma_gguf.py MODEL_DIR OUT.gguf")
    convert(Path(sys.argv[1]), Path(sys.argv[2]))
