"""A BERT encoder forward pass in numpy, float32, for inference only."""

from __future__ import annotations

import json
from dataclasses import dataclass
from pathlib import Path

import numpy as np
import numpy.typing as npt
from safetensors.numpy import load_file

F32: type[np.float32] = np.float32
Array = npt.NDArray[np.float32]

# Abramowitz & Stegun 7.1.28: erfc(z) ~ (1 + a1 z + ... + a6 z^6)^-16, |error| < 3e-7, about
# float32 resolution. numpy has no erf (scipy would be a dependency for one function), and this
# form needs no exp(), which costs as much as a dozen multiplies and dominated GELU time.
_AS_A = (0.0705230784, 0.0422820123, 0.0092705272, 0.0001520143, 0.0002765672, 0.0000430638)
# GELU evaluates erfc at |x|/sqrt(2); folding that scale into the coefficients saves a pass.
_GELU_A = tuple(F32(a / np.sqrt(2.0) ** (i + 1)) for i, a in enumerate(_AS_A))
# Rows of the feed-forward block processed at once. Only bounds memory for long inputs
# (3 x 2048 x 1536 floats = 36 MiB): measured, smaller cache-sized chunks were slower, as
# BLAS loses more to short matrices than it gains from cache hits.
_FFN_ROWS = 2048


def gelu_(x: Array, scratch: Array) -> None:
    """x * Phi(x) in place, with the exact (erf) normal CDF, as BERT's "gelu" activation.

    ``scratch`` holds two arrays shaped like x, so repeated calls allocate nothing.
    """
    # With e = erfc(|x|/sqrt2)/2, Phi(x) is 1 - e for x >= 0 and e for x < 0, so
    # GELU(x) = x/2 + |x| * (1/2 - e) on both sides: no select, no copysign, no max().
    ax, e = scratch[0], scratch[1]
    np.abs(x, out=ax)
    # Large |x| overflows the polynomial or its 16th power to inf, making e = 0: the right
    # limit, not an error.
    with np.errstate(over="ignore"):
        np.multiply(ax, _GELU_A[5], out=e)
        for a in _GELU_A[4::-1]:
            e += a
            e *= ax
        e += F32(1.0)
        for _ in range(4):
            np.multiply(e, e, out=e)
    np.divide(F32(0.5), e, out=e)
    np.subtract(F32(0.5), e, out=e)
    e *= ax
    x *= F32(0.5)
    x += e


def layer_norm_(x: Array, gamma: Array, beta: Array, eps: float) -> None:
    """Normalise over the last axis in place, then scale and shift."""
    x -= x.mean(axis=-1, keepdims=True)
    var = np.einsum("ij,ij->i", x, x)[:, None]
    var *= F32(1.0 / x.shape[-1])
    var += F32(eps)
    x *= 1.0 / np.sqrt(var)
    x *= gamma
    x += beta


@dataclass(frozen=True, slots=True)
class BertConfig:
    """The shape of a BERT checkpoint, read from its config.json."""

    hidden: int
    heads: int
    layers: int
    intermediate: int
    max_positions: int
    eps: float

    @classmethod
    def from_file(cls, path: Path) -> BertConfig:
        """Read a Hugging Face BERT config.json."""
        raw = json.loads(path.read_text())
        if raw.get("hidden_act", "gelu") != "gelu":
            raise ValueError(f"unsupported activation {raw['hidden_act']!r}")
        return cls(
            hidden=int(raw["hidden_size"]),
            heads=int(raw["num_attention_heads"]),
            layers=int(raw["num_hidden_layers"]),
            intermediate=int(raw["intermediate_size"]),
            max_positions=int(raw["max_position_embeddings"]),
            eps=float(raw["layer_norm_eps"]),
        )


@dataclass(frozen=True, slots=True)
class _Layer:
    # Weights are stored transposed ((in, out), C-contiguous) so each dense layer is one x @ w.
    qkv_w: Array
    qkv_b: Array
    attn_out_w: Array
    attn_out_b: Array
    attn_ln: tuple[Array, Array]
    ffn_in_w: Array
    ffn_in_b: Array
    ffn_out_w: Array
    ffn_out_b: Array
    ffn_ln: tuple[Array, Array]


class BertEncoder:
    """Token ids and attention mask in, last hidden states out; no pooling, no dropout."""

    def __init__(self, config: BertConfig, weights: dict[str, npt.NDArray[np.generic]]) -> None:
        self.config = config
        self._head_dim = config.hidden // config.heads

        def w(name: str) -> Array:
            return np.ascontiguousarray(weights[name], dtype=F32)

        self._word = w("embeddings.word_embeddings.weight")
        self._position = w("embeddings.position_embeddings.weight")
        # Every input is a single segment, so token type 0 folds into a constant row.
        self._type0 = w("embeddings.token_type_embeddings.weight")[0]
        self._emb_ln = (w("embeddings.LayerNorm.weight"), w("embeddings.LayerNorm.bias"))
        # Folding 1/sqrt(head_dim) into the query projection saves scaling every score matrix.
        scale = F32(1.0 / np.sqrt(self._head_dim))
        self._layers: list[_Layer] = []
        for i in range(config.layers):
            p = f"encoder.layer.{i}."
            att = p + "attention.self."
            qkv_w = np.concatenate(
                [w(att + "query.weight") * scale, w(att + "key.weight"), w(att + "value.weight")]
            )
            qkv_b = np.concatenate(
                [w(att + "query.bias") * scale, w(att + "key.bias"), w(att + "value.bias")]
            )
            self._layers.append(
                _Layer(
                    qkv_w=np.ascontiguousarray(qkv_w.T),
                    qkv_b=qkv_b,
                    attn_out_w=np.ascontiguousarray(w(p + "attention.output.dense.weight").T),
                    attn_out_b=w(p + "attention.output.dense.bias"),
                    attn_ln=(
                        w(p + "attention.output.LayerNorm.weight"),
                        w(p + "attention.output.LayerNorm.bias"),
                    ),
                    ffn_in_w=np.ascontiguousarray(w(p + "intermediate.dense.weight").T),
                    ffn_in_b=w(p + "intermediate.dense.bias"),
                    ffn_out_w=np.ascontiguousarray(w(p + "output.dense.weight").T),
                    ffn_out_b=w(p + "output.dense.bias"),
                    ffn_ln=(w(p + "output.LayerNorm.weight"), w(p + "output.LayerNorm.bias")),
                )
            )

    @classmethod
    def from_directory(cls, model_dir: Path) -> BertEncoder:
        """Load config.json and model.safetensors from a Hugging Face model folder."""
        config = BertConfig.from_file(model_dir / "config.json")
        return cls(config, load_file(str(model_dir / "model.safetensors")))

    def forward(self, ids: npt.NDArray[np.int64], mask: npt.NDArray[np.int64]) -> Array:
        """Hidden states (batch, seq, hidden) for ids and mask of shape (batch, seq)."""
        batch, seq = ids.shape
        if seq > self.config.max_positions:
            raise ValueError(f"sequence of {seq} exceeds {self.config.max_positions} positions")
        x = self._word[ids]
        x += self._position[:seq]
        x += self._type0
        h = x.reshape(batch * seq, -1)
        layer_norm_(h, *self._emb_ln, self.config.eps)
        # Padded keys get a large negative score so softmax gives them exactly zero weight; a
        # finite value (not -inf) keeps fully padded rows free of NaN.
        bias = ((mask.astype(F32) - F32(1.0)) * F32(1e9)).reshape(batch, 1, 1, seq)
        ws = _Workspace.allocate(self.config, batch, seq)
        for layer in self._layers:
            # Hidden states ping-pong between h and ws.hidden, so no layer allocates.
            self._attention(h, layer, bias, ws, out=ws.hidden)
            self._feed_forward(ws.hidden, layer, ws, out=h)
        return h.reshape(batch, seq, -1)

    def _attention(self, h: Array, layer: _Layer, bias: Array, ws: _Workspace, out: Array) -> None:
        batch, heads, seq, _ = ws.scores.shape
        dim = self._head_dim
        qkv = ws.qkv
        np.matmul(h, layer.qkv_w, out=qkv)
        qkv += layer.qkv_b
        # (batch, seq, 3, heads, dim) -> three (batch, heads, seq, dim) views, no copies.
        qkv5 = qkv.reshape(batch, seq, 3, heads, dim).transpose(2, 0, 3, 1, 4)
        q, k, v = qkv5[0], qkv5[1], qkv5[2]
        scores = ws.scores
        np.matmul(q, k.transpose(0, 1, 3, 2), out=scores)
        scores += bias
        scores -= scores.max(axis=-1, keepdims=True)
        np.exp(scores, out=scores)
        scores /= scores.sum(axis=-1, keepdims=True)
        # Writing through a transposed view lands heads side by side, ready for the output
        # projection, without a separate transpose-and-copy.
        np.matmul(scores, v, out=ws.context.transpose(0, 2, 1, 3))
        np.matmul(ws.context.reshape(batch * seq, heads * dim), layer.attn_out_w, out=out)
        out += layer.attn_out_b
        out += h
        layer_norm_(out, *layer.attn_ln, self.config.eps)

    def _feed_forward(self, h: Array, layer: _Layer, ws: _Workspace, out: Array) -> None:
        for start in range(0, h.shape[0], _FFN_ROWS):
            stop = min(start + _FFN_ROWS, h.shape[0])
            inner = ws.ffn[0, : stop - start]
            np.matmul(h[start:stop], layer.ffn_in_w, out=inner)
            inner += layer.ffn_in_b
            gelu_(inner, ws.ffn[1:, : stop - start])
            np.matmul(inner, layer.ffn_out_w, out=out[start:stop])
        out += layer.ffn_out_b
        out += h
        layer_norm_(out, *layer.ffn_ln, self.config.eps)


@dataclass(frozen=True, slots=True)
class _Workspace:
    """Buffers for one forward pass, shared by all layers.

    Measured: allocating fresh arrays per operation cost more than the small attention
    matmuls themselves, so each buffer is allocated once per batch.
    """

    hidden: Array
    qkv: Array
    scores: Array
    context: Array
    ffn: Array

    @classmethod
    def allocate(cls, config: BertConfig, batch: int, seq: int) -> _Workspace:
        """Buffers sized for a (batch, seq) input."""
        rows = batch * seq
        return cls(
            hidden=np.empty((rows, config.hidden), dtype=F32),
            qkv=np.empty((rows, 3 * config.hidden), dtype=F32),
            scores=np.empty((batch, config.heads, seq, seq), dtype=F32),
            context=np.empty((batch, seq, config.heads, config.hidden // config.heads), dtype=F32),
            ffn=np.empty((3, min(rows, _FFN_ROWS), config.intermediate), dtype=F32),
        )
