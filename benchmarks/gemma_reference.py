"""EmbeddingGemma-300M's fp32 forward pass in numpy: the reference the served Q8_0 GGUF is checked against.

It follows the sentence-transformers pipeline of the checkpoint (``modules.json``): the Gemma 3
encoder with bidirectional attention, mean pooling over every token, the two Dense projections,
L2 normalisation. Tokens come from the checkpoint's own ``tokenizer.json`` (the ``tokenizers``
package, with ``<bos>`` and ``<eos>`` added as its post-processor says). Sliding-window layers
see every token here, which is what the model does for inputs shorter than its window, so texts
of 256 tokens or more are refused rather than embedded differently.
"""

from __future__ import annotations

import json
import math
import sys
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from benchmarks.gemma_gguf import DENSE, read_safetensors

WINDOW_LIMIT = 256


def rms_norm(x: np.ndarray, weight: np.ndarray, eps: float) -> np.ndarray:
    """Gemma's RMSNorm: the stored weight is an offset from one."""
    return x / np.sqrt(np.mean(x * x, axis=-1, keepdims=True) + eps) * (1.0 + weight)


def gelu_tanh(x: np.ndarray) -> np.ndarray:
    return 0.5 * x * (1.0 + np.tanh(math.sqrt(2.0 / math.pi) * (x + 0.044715 * x**3)))


def rotate(x: np.ndarray, base: float) -> np.ndarray:
    """Rotary position embedding over the last axis (halves rotated, as Gemma's checkpoints expect)."""
    positions, dim = x.shape[0], x.shape[-1]
    inverse = 1.0 / base ** (np.arange(0, dim, 2, dtype=np.float32) / dim)
    angles = np.outer(np.arange(positions, dtype=np.float32), inverse)
    cos = np.concatenate([np.cos(angles)] * 2, axis=-1)[:, None, :]
    sin = np.concatenate([np.sin(angles)] * 2, axis=-1)[:, None, :]
    half = dim // 2
    rotated = np.concatenate([-x[..., half:], x[..., :half]], axis=-1)
    return x * cos + rotated * sin


class GemmaReference:
    """Embeds text with the fp32 checkpoint in ``model_dir``; slow (numpy on one core) but exact."""

    def __init__(self, model_dir: Path) -> None:
        from tokenizers import Tokenizer

        self.config = json.loads((model_dir / "config.json").read_text())
        self.weights = read_safetensors(model_dir / "model.safetensors")
        self.dense = [read_safetensors(model_dir / folder / "model.safetensors")["linear.weight"] for folder in DENSE]
        self.tokenizer = Tokenizer.from_file(str(model_dir / "tokenizer.json"))

    def tokens(self, text: str) -> list[int]:
        return list(self.tokenizer.encode(text).ids)

    def embed(self, text: str) -> np.ndarray:
        ids = self.tokens(text)
        if len(ids) >= WINDOW_LIMIT:
            raise ValueError(f"the reference embeds texts under {WINDOW_LIMIT} tokens; this one has {len(ids)}")
        c, w = self.config, self.weights
        x = w["embed_tokens.weight"][ids].astype(np.float32) * np.float32(math.sqrt(c["hidden_size"]))
        for layer, kind in enumerate(c["layer_types"]):
            base = c["rope_theta"] if kind == "full_attention" else c["rope_local_base_freq"]
            x = self.block(x, f"layers.{layer}.", base)
        pooled = rms_norm(x, w["norm.weight"], c["rms_norm_eps"]).mean(axis=0)
        for weight in self.dense:
            pooled = weight @ pooled
        return pooled / np.linalg.norm(pooled)

    def block(self, x: np.ndarray, prefix: str, base: float) -> np.ndarray:
        c, w, eps = self.config, self.weights, self.config["rms_norm_eps"]
        heads, kv_heads, dim = c["num_attention_heads"], c["num_key_value_heads"], c["head_dim"]
        h = rms_norm(x, w[prefix + "input_layernorm.weight"], eps)
        q = (h @ w[prefix + "self_attn.q_proj.weight"].T).reshape(len(x), heads, dim)
        k = (h @ w[prefix + "self_attn.k_proj.weight"].T).reshape(len(x), kv_heads, dim)
        v = (h @ w[prefix + "self_attn.v_proj.weight"].T).reshape(len(x), kv_heads, dim)
        q = rotate(rms_norm(q, w[prefix + "self_attn.q_norm.weight"], eps), base)
        k = rotate(rms_norm(k, w[prefix + "self_attn.k_norm.weight"], eps), base)
        k, v = np.repeat(k, heads // kv_heads, axis=1), np.repeat(v, heads // kv_heads, axis=1)
        scores = np.einsum("qhd,khd->hqk", q, k) / math.sqrt(c["query_pre_attn_scalar"])
        scores = np.exp(scores - scores.max(axis=-1, keepdims=True))
        scores /= scores.sum(axis=-1, keepdims=True)
        attended = np.einsum("hqk,khd->qhd", scores, v).reshape(len(x), heads * dim)
        out = attended @ w[prefix + "self_attn.o_proj.weight"].T
        x = x + rms_norm(out, w[prefix + "post_attention_layernorm.weight"], eps)
        h = rms_norm(x, w[prefix + "pre_feedforward_layernorm.weight"], eps)
        gate = gelu_tanh(h @ w[prefix + "mlp.gate_proj.weight"].T) * (h @ w[prefix + "mlp.up_proj.weight"].T)
        mlp = gate @ w[prefix + "mlp.down_proj.weight"].T
        return x + rms_norm(mlp, w[prefix + "post_feedforward_layernorm.weight"], eps)
