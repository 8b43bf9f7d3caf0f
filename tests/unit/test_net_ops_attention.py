"""ONNX Attention (opset 23) lowered to te against onnxruntime: 4-D and 3-D inputs, grouped-query heads, scale,
causal and float/bool masks, softcap, a KV cache with present outputs, and the qk_matmul_output modes."""
import numpy as np
import pytest

from .nn_harness import check_op

RNG = np.random.default_rng(2)


def r(*shape):
    return RNG.standard_normal(shape).astype(np.float32)


def test_attention_4d_plain():
    check_op("Attention", [r(2, 3, 4, 8), r(2, 3, 6, 8), r(2, 3, 6, 8)], {}, opset=23)


def test_attention_3d_grouped_query_heads():
    check_op("Attention", [r(2, 4, 24), r(2, 6, 8), r(2, 6, 8)], {"q_num_heads": 3, "kv_num_heads": 1}, opset=23)


def test_attention_causal_with_float_mask_scale_and_value_size():
    check_op("Attention", [r(2, 3, 4, 8), r(2, 3, 6, 8), r(2, 3, 6, 10), r(4, 6)], {"is_causal": 1, "scale": 0.3},
             opset=23)


def test_attention_bool_mask_and_softcap():
    mask = RNG.random((2, 1, 4, 6)) > 0.3
    check_op("Attention", [r(2, 3, 4, 8), r(2, 3, 6, 8), r(2, 3, 6, 8), mask], {"softcap": 2.0}, opset=23)


def test_attention_kv_cache_gives_present_key_and_value():
    ins = [r(2, 3, 4, 8), r(2, 3, 6, 8), r(2, 3, 6, 8), r(4, 10), r(2, 3, 4, 8), r(2, 3, 4, 8)]
    check_op("Attention", ins, {"is_causal": 1}, n_out=3, opset=23)


@pytest.mark.parametrize("mode", [0, 1, 2, 3])
def test_attention_qk_matmul_output_modes(mode):
    ins = [r(1, 2, 3, 8), r(1, 2, 5, 8), r(1, 2, 5, 8), r(3, 7), r(1, 2, 2, 8), r(1, 2, 2, 8)]
    check_op("Attention", ins, {"qk_matmul_output_mode": mode, "softcap": 3.0}, n_out=4, opset=23)
