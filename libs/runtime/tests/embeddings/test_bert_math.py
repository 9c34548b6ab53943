"""The numpy building blocks of the encoder against float64 reference formulas."""

from __future__ import annotations

import math

import numpy as np

from mnemo_runtime.embeddings.bert import gelu_, layer_norm_


def test_gelu_matches_the_erf_form() -> None:
    x = np.linspace(-40.0, 40.0, 200_001, dtype=np.float32)
    expected = np.array([v * 0.5 * (1.0 + math.erf(v / math.sqrt(2.0))) for v in x.tolist()])
    out = x.copy()
    gelu_(out, np.empty((2, *x.shape), dtype=np.float32))
    assert out.dtype == np.float32
    np.testing.assert_allclose(out, expected, atol=1e-6, rtol=1e-6)


def test_gelu_saturates_cleanly_on_large_inputs() -> None:
    x = np.array([-1e30, -1e4, 1e4, 1e30], dtype=np.float32)
    gelu_(x, np.empty((2, 4), dtype=np.float32))
    np.testing.assert_allclose(x, np.array([0.0, 0.0, 1e4, 1e30]), rtol=1e-7, atol=1e-30)


def test_layer_norm_matches_float64() -> None:
    rng = np.random.default_rng(3)
    x = rng.standard_normal((5, 384)).astype(np.float32) * 4 + 1
    gamma = rng.standard_normal(384).astype(np.float32)
    beta = rng.standard_normal(384).astype(np.float32)
    x64 = x.astype(np.float64)
    centred = x64 - x64.mean(axis=1, keepdims=True)
    expected = centred / np.sqrt((centred**2).mean(axis=1, keepdims=True) + 1e-12) * gamma + beta
    layer_norm_(x, gamma, beta, 1e-12)
    np.testing.assert_allclose(x, expected, atol=1e-5)
