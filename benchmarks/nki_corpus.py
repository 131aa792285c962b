"""Which published NKI kernels loopsim reads: every ``@nki.jit`` function under the folders given.

Not CI: point it at folders of kernel files you would run yourself (tracing EXECUTES them, as
``python FILE.py`` would, with loopsim's NKI shim), e.g. a snapshot of aws-neuron/nki-samples
and aws-neuron/nki-library. Each kernel is traced with the shapes of :data:`SHAPES` (by function
name; the library's kernels need theirs, which live here, not in the package) and counted with
the trn2-core sheet. One line per kernel:

  traced   the trace and the count ran; nothing assumed
  assumed  they ran, with something assumed (an unmodelled call costed as generic work, a loop
           whose iterations differ in engine ops, a stubbed import): the notes say what
  refused  the reason, as loopsim's one-line error gives it
  helper   not tried: a function without shapes in the table that another ``@nki.jit``
           function of the corpus calls (a subkernel taking its caller's tiles); its callers named

Run: python benchmarks/nki_corpus.py DIR [DIR ...] [--only SUBSTRING] [-v]
"""

from __future__ import annotations

import argparse
import ast
import contextlib
import io
import sys
import time
from collections import Counter
from pathlib import Path

# Shapes per kernel function: --arg strings (NAME=D0xD1[:dtype]), --kwarg values, --grid, and
# --register-value strings for kernels whose loops a register bounds at run time (the value a
# comment beside the entry derives; the result is then "assumed", its note naming the value).
# Tutorial shapes are those of the tutorials' own drivers (test files, __main__ blocks).
SHAPES: dict[str, dict] = {
    # tutorials/matrix_multiplication
    "nki_matmul_basic_": {"args": ["lhsT=128x64", "rhs=128x512"]},
    "nki_matmul_tiled_": {"args": ["lhsT=1024x4096", "rhs=1024x2048"]},
    "nki_matmul_hoist_load_": {"args": ["lhsT=1024x4096", "rhs=1024x2048"]},
    "nki_matmul_block_free_dimension_": {"args": ["lhsT=1024x4096", "rhs=1024x2048"]},
    "nki_matmul_fully_optimized_": {"args": ["lhsT=1024x4096", "rhs=1024x2048"]},
    # tutorials/tensor_addition (the launcher nki_tensor_add uses a 2-D grid of 128 x 512 tiles)
    "nki_tensor_add_kernel_": {"args": ["a_input=256x1024", "b_input=256x1024"], "grid": "2x2"},
    "nki_tensor_add": {"args": ["a_input=256x1024", "b_input=256x1024"]},
    "nki_tensor_add_nc2": {"args": ["a_input=512x2048", "b_input=512x2048"]},
    # tutorials/transpose2d, average_pool2d (their __main__ shapes, scaled to a full tile)
    "tensor_transpose2D_kernel_": {"args": ["in_tensor=128x12:int8"], "kwargs": ["shape2D=(3, 4)"]},
    "tensor_avgpool_kernel": {"args": ["in_tensor=128x64x64:fp16"], "kwargs": ["pool_size=2"]},
    # tutorials/attention_fwd_performance (test_attention.py: d_head 128; seqlen 128 for v1, v2)
    **{f"attn_fwd_v{v}": {"args": [f"{n}=128x{128 if v in ('1', '2') else 4096}" for n in "qkv"]}
       for v in ("1", "2", "3", "4", "5", "6", "7", "8", "8a", "9", "10", "11")},
    # tutorials/fused_mamba (batch 1, channels 256, seq_len 512, state 16)
    **{f"mamba_v{v}": {"args": ["delta=1x256x512:fp32", "u=1x256x512:fp32", "A=256x16:fp32",
                                "B=1x16x512:fp32", "C=1x16x512:fp32"]} for v in (1, 2, 3)},
    # tutorials/mxfp-matmul (mx_toplevel.py: M, K, N = 128, 128, 512; x4-packed data)
    "kernel_offline_quantized_mx_matmul": {
        "args": ["stationary_mx_data=128x128:float8_e4m3fn_x4", "stationary_mx_scale=16x128:uint8",
                 "moving_mx_data=128x512:float8_e4m3fn_x4", "moving_mx_scale=16x512:uint8"],
        "kwargs": ["mx_dtype=float8_e4m3fn_x4"]},
    "kernel_on_device_quantize_matmul_mx": {
        "args": ["stationary_mx_data=128x128:float8_e4m3fn_x4", "stationary_mx_scale=16x128:uint8",
                 "moving_data_bf16=128x2048"],
        "kwargs": ["stationary_mx_dtype=float8_e4m3fn_x4", "moving_mx_dtype=float8_e4m3fn_x4"]},
    "kernel_copy_strided_quantize_matmul_mx": {
        "args": ["stationary_hbm=512x128", "moving_hbm=512x512"],
        "kwargs": ["mx_dtype=float8_e4m3fn_x4"]},
    # contributed/
    # contributed/maxpooling.py check_correct: H = W = 448, pool 3; interpolate: (N, C, [D,] H, W)
    "max_pooling_2d_stride_1": {"args": ["in_tensor=448x448:fp32"], "kwargs": ["pool_size=3"]},
    "interpolate_bilinear_2x_fwd": {"args": ["src_arr=1x128x64x64"]},
    "interpolate_trilinear_2x_fwd": {"args": ["src_arr=1x128x16x32x32"]},
    # pipelined_attention.py's own top-level test: 3-D [bs, d, seq], 16k tokens ("can only run on
    # 16k seqlen"), no causal mask (its assert)
    "flash_fwd": {"args": ["q=1x128x16384", "k=1x128x16384", "v=1x16384x128"],
                  "kwargs": ["softmax_scale=0.125", "use_causal_mask=False"]},
    # nki-library (src/nkilib_src/nkilib): small shapes in each entry point's documented layout
    "cumsum": {"args": ["x=256x1024"]},
    "cascaded_max": {"args": ["input_tensor=1x128x4096"]},
    "RoPE": {"args": ["x_in=128x1x4x512", "cos=64x1x512", "sin=64x1x512"]},
    "rope_hf": {"args": ["q=1x4x512x128", "k=1x1x512x128", "q_out=1x4x512x128", "k_out=1x1x512x128",
                        "cos=1x512x128", "sin=1x512x128"]},
    "output_projection_cte": {"args": ["attention=1x4x128x512", "weight=512x1024"]},
    "output_projection_tkg": {"args": ["attention=128x1x4x4", "weight=512x1024"]},
    "cross_entropy_forward": {"args": ["logits_hbm=256x32768", "targets_hbm=256:int32"]},
    "cross_entropy_backward": {"args": ["logits_hbm=256x32768", "targets_hbm=256:int32",
                                        "lse_state_hbm=256:fp32"]},
    "conv1d": {"args": ["x_in=1x128x512", "filters=3x128x128"]},
    "depthwise_conv1d_implicit_gemm": {"args": ["img_ref=1x128x1x512", "filter_ref=128x1x1x3"],
                                       "kwargs": ["feature_group_count=128"]},
    "attention_bwd": {"args": ["q_ref=1x1x128x512", "k_ref=1x1x128x512", "v_ref=1x1x128x512",
                               "o_ref=1x1x128x512", "dy_ref=1x1x128x512", "lse_ref=1x1x128x4:fp32"]},
    "attention_cte": {"args": ["q=1x512x128", "k=1x128x512", "v=1x512x128"]},
    "rmsnorm_quant_kernel": {"args": ["hidden=1x128x1024", "ln_w=1x1024"]},
    "find_nonzero_indices": {"args": ["input_tensor=128x512:int32"]},
    "find_nonzero_indices_with_count": {"args": ["input_tensor=1x512:int32"]},
    "indexed_flatten": {"args": ["input_tensor=4x2048:int32", "row_offsets=4:int32"],
                        "kwargs": ["f_len=128", "output_len=8192"]},
    "topk_reduce": {"args": ["input=512x1026"], "kwargs": ["T=128", "K=4"]},
    "fine_grained_allgather": {"args": ["lhs=512x1024"], "kwargs": ["tp_degree=4", "num_groups=1"]},
    "allgather_compute_matmul": {"args": ["lhs=512x1024", "rhs=1024x512"],
                                 "kwargs": ["tp_degree=4", "num_groups=1"]},
    # num_m_tiles, read into a register, bounds its dynamic loop: given as M // 128 = 4, every
    # tile of the inputs (the most its docstring allows)
    "dynamic_elementwise_add": {"args": ["input_a=512x1024", "input_b=512x1024",
                                         "num_m_tiles=1x1:int32"], "registers": ["4"]},
    "mxfp_load_performance_wrapper": {"args": ["tensor=128x512"]},
    "output_projection": {"args": ["attention=1x4x128x512", "weight=512x1024"]},
    "qkv": {"args": ["input=1x512x1024", "fused_qkv_weights=1024x1536"]},
    "moe_block_tkg": {"args": ["inp=1x4x1024", "gamma=1x1024", "router_weights=1024x8",
                               "expert_gate_up_weights=8x1024x2x512",
                               "expert_down_weights=8x512x1024"], "grid": "2"},
    **{f: {"args": ["hidden_states=1024x1024", "expert_affinities_masked=1024x8",
                    "gate_up_proj_weight=8x1024x2x512", "down_proj_weight=8x512x1024",
                    "token_position_to_id=8192:int32", "block_to_expert=8:int32"],
           "kwargs": ["block_size=1024"],
           # shard-on-I splits a block between the two cores of a TRN2 LNC (sendrecv between them);
           # shard-on-block deals blocks to them in turn
           **({"grid": "2"} if "intermediate" in f or f == "bwmm_shard_on_block" else {})}
       for f in ("blockwise_mm_baseline_shard_intermediate", "blockwise_mm_shard_intermediate_dropping",
                 "bwmm_shard_on_block", "blockwise_mm_baseline_shard_hidden")},
    # the dynamic-loop variant: conditions [N+1] (1 = a block with tokens, the last 0). Its
    # dynamic loop runs from the static blocks (N - E = 0 here) to the register holding
    # sum(conditions), the blocks with tokens: given as N = 8192 // 1024 = 8, every block used
    # (the case a launcher plans its buffers for; the hybrid MX kernel below likewise, N = 4096 // 512)
    "blockwise_mm_baseline_shard_intermediate_hybrid": {
        "args": ["conditions=9:int32", "hidden_states=1024x1024", "expert_affinities_masked=1024x8",
                 "gate_up_proj_weight=8x1024x2x512", "down_proj_weight=8x512x1024",
                 "token_position_to_id=8192:int32", "block_to_expert=8:int32"],
        "kwargs": ["block_size=1024"], "grid": "2", "registers": ["8"]},
    # MX weights (docstrings): H = 1024 = 128 partitions x 2 tiles of 512 / x4 packing, I = 1024
    **{f: {"args": (["conditions=9:int32"] if "hybrid" in f else []) + [
                    "hidden_states=1025x1024", "expert_affinities_masked=8200x1",
                    "gate_up_proj_weight=8x128x2x2x1024:float8_e4m3fn_x4",
                    "down_proj_weight=8x128x2x1024:float8_e4m3fn_x4",
                    "token_position_to_id=4096:int32", "block_to_expert=8x1:int32",
                    "gate_up_proj_scale=8x16x2x2x1024:uint8", "down_proj_scale=8x16x2x1024:uint8",
                    # the MX paths read the biases' dtype unconditionally (their docstrings say
                    # optional): shapes of the library's tests (test_utils.py: [E, 128, 2,
                    # n_I512_tile, 4] and [E, H])
                    "gate_and_up_proj_bias=8x128x2x2x4", "down_proj_bias=8x1024"],
           "kwargs": ["block_size=512", "weight_dtype=float8_e4m3fn_x4"]
           + (["n_static_blocks=8", "n_dynamic_blocks=0"] if f.startswith("bwmm") else []),
           **({"registers": ["8"]} if "hybrid" in f else {}),
           "grid": "2"}  # both shard between the two cores of a TRN2 LNC
       for f in ("blockwise_mm_shard_intermediate_mx", "blockwise_mm_shard_intermediate_mx_hybrid",
                 "bwmm_shard_on_block_mx")},
    "blockwise_mm_bwd": {
        "args": ["hidden_states=1024x1024", "expert_affinities_masked=8192x1",
                 "gate_up_proj_weight=8x1024x2x512", "down_proj_weight=8x512x1024",
                 "gate_up_proj_act_checkpoint_T=8x2x512x512", "down_proj_act_checkpoint=8x512x1024",
                 "token_position_to_id=4096:int32", "block_to_expert=8x1:int32",
                 "output_hidden_states_grad=1024x1024"],
        "kwargs": ["block_size=512"]},
}

# Other public code (kernels written outside nki-samples/nki-library, in their authors' idioms).
# A key FILE.py::FUNCTION wins over FUNCTION alone (function names repeat across repositories).
# "paths": --path roots, relative to the nki-library snapshot beside the first folder given
# ({nkilib}: its src/nkilib_src, for kernels importing nkilib).
_F32 = ":fp32"
_DELTA_S = [f"{n}=256x128{_F32}" for n in ("query", "key", "value")]  # S = 256: two 128-token chunks
_DELTA_G1 = [f"{n}=256x1{_F32}" for n in ("g_in", "beta_in")]
_DELTA_MASKS = [f"{n}=128x128{_F32}" for n in ("lower_mask", "identity", "lower_mask_diag")]
SHAPES.update({
    # neuronx-distributed-inference contrib/models/Qwen3.5-*/src/nki_kernels (shapes: the
    # parameters' own comments; one (batch, head), D = 128, fp32)
    "_deltanet_recurrent_step_batched_kernel": {
        "args": [f"{n}=4x128{_F32}" for n in ("query", "key", "value")]
        + [f"{n}=4x1{_F32}" for n in ("g_in", "beta_in")] + [f"state_in=512x128{_F32}"]},
    "deltanet_recurrent_step": {
        "args": [f"{n}=1x128{_F32}" for n in ("query", "key", "value", "g_in", "beta_in")]
        + [f"state_in=128x128{_F32}"]},
    **{f: {"args": [f"{n}=256x128{_F32}" for n in ("query", "key", "value", "g_in", "beta_in")]}
       for f in ("deltanet_recurrent_fwd", "deltanet_recurrent_fwd_state")},
    "deltanet_chunk_step": {
        "args": [f"{n}=128x128{_F32}" for n in ("query", "key", "value", "beta_broadcast",
                                                "g_cumsum", "g_last", "state_in")] + _DELTA_MASKS},
    "deltanet_fused_chunked_fwd": {
        "args": _DELTA_S + _DELTA_G1 + [f"initial_state=128x128{_F32}"] + _DELTA_MASKS},
    "deltanet_autocp_affine_chunk": {
        "args": [f"{n}=128x128{_F32}" for n in ("query", "key", "value")]
        + [f"{n}=128x1{_F32}" for n in ("g_in", "beta_in")] + _DELTA_MASKS},
    "deltanet_autocp_affine_sequence": {"args": _DELTA_S + _DELTA_G1 + _DELTA_MASKS},
    "deltanet_autocp_state_summary_sequence": {"args": _DELTA_S[1:] + _DELTA_G1 + _DELTA_MASKS[:2]},
    "deltanet_autocp_state_prefix": {
        "args": [f"{n}=2x128x128{_F32}" for n in ("state_matrix", "state_bias")]
        + [f"initial_state=128x128{_F32}"]},
    "deltanet_autocp_apply_output": {
        "args": [f"{n}=2x128x128{_F32}" for n in ("output_base", "output_state", "chunk_states")]},
    "deltanet_autocp_prefix_apply_output": {
        "args": [f"{n}=2x128x128{_F32}" for n in ("output_base", "output_state", "state_matrix",
                                                  "state_bias")] + [f"initial_state=128x128{_F32}"]},
    "deltanet_fused_chunked_fwd_multihead": {
        "args": [f"{n}=2x256x128{_F32}" for n in ("query", "key", "value")]
        + [f"{n}=2x256x1{_F32}" for n in ("g_in", "beta_in")] + [f"initial_state=2x128x128{_F32}"]
        + _DELTA_MASKS},
    # qwen_qk_norm_rope.py: D_HEAD = 256 (its constant); 2 q heads, 1 k head, 128 tokens;
    # gammas [D_HEAD], RoPE caches [B, S, ROPE_DIM = 64]
    "qwen_qk_norm_partial_rope_kernel": {
        "args": ["q_proj=1x128x512", "k_proj=1x128x256", "q_gamma=256", "k_gamma=256",
                 "cos_cache=1x128x64", "sin_cache=1x128x64"], "kwargs": ["eps=1e-6"]},
    # GLM-5.2 mla_attention_nki_kernel.py: its defaults (2 heads, d_rope 64, d_c 512, d_v 256,
    # S = 512), one batch: q [BH, d], kv_cache [B, S, d_rope + d_c], v_absorb [H, d_v, d_c]
    "mla_attention_tkg": {"args": ["q_pe=2x64", "q_nope=2x512", "kv_cache=1x512x576",
                                   "v_absorb=2x256x512", "attn_mask=2x512:uint8"]},
    # ltx2-video-audio (nki-library's attention_cte with a bias): its shape checks' layouts,
    # q [B, S, d] (tp_q), k [B, d, S], v [B, S, d]; S = 512, d = 128
    "attention_cte_with_bias": {"args": ["q=1x512x128", "k=1x128x512", "v=1x512x128"],
                                "paths": ["{nkilib}"]},
    "cross_attn_kernel": {"args": ["q_ref=1x128x128", "k_ref=1x1024x128", "v_ref=1x1024x128",
                                   "mask_ref=1x1024"]},
    # neuronx_distributed_inference modules (kernels importing nkilib's helpers)
    "rolling_buffer_set_state": {"args": ["buffer=4x8x1024", "hidden_states=2x1024",
                                          "batch_ids=2:int32", "position_ids=2:int32"]},
    "write_kv_cache_at_batch_kernel": {
        "args": ["K=1x2x128x128", "V=1x2x128x128", "K_prior=4x2x512x128", "V_prior=4x2x512x128",
                 "batch_idx=1:int32"], "paths": ["{nkilib}"]},
    "split_along_dim0_kernel": {"args": ["tensor=512x1024", "rank=1:int32"],
                                "kwargs": ["num_partitions=4"], "paths": ["{nkilib}"]},
    # sliding_window/attention.py: MHA layouts of its docstring, q/k [b, h, d, s], v [b, h, s, d]
    # (it asserts a 2-D SPMD grid: batch x kv heads; a left window of 511 tokens: without one
    # its own code reads causal_mask unset, its else branch assigning `casual_mask`)
    "attention.py::flash_fwd": {"args": ["q=1x1x128x2048", "k=1x1x128x2048", "v=1x1x2048x128"],
                                "kwargs": ["window_size=(511, -1)"], "grid": "1x1"},
    # optimum-neuron flash_attention_nki.py: q, k [BH, D, S], v [BH, S, D], D = 256 (two d tiles)
    # (output: the caller's pre-allocated [BH, D, S])
    "flash_fwd_large_d": {"args": ["q=1x256x2048", "k=1x256x2048", "v=1x2048x256",
                                   "output=1x256x2048"]},
    # aws-neuron-sdk nki/examples (the shapes of their own __main__ blocks / docstrings)
    "nki_tensor_add_kernel": {"args": ["a_input=128x512", "b_input=128x512"]},
    "tensor_split_kernel_": {"args": ["in_tensor=128x512"]},
    "tensor_maxpool_kernel_": {"args": ["in_tensor=2x6x6"], "kwargs": ["sz_pool=2"]},
    "tensor_exp_kernel_": {"args": ["in_tensor=128x512"]},
    "add_kernel": {"args": ["a_ptr=128x512:fp32", "b_ptr=128x512:fp32"]},
    "kernel_copy_strided_quantize_matmul_mx_packed_scale": {
        "args": ["stationary_hbm=512x128", "moving_hbm=512x512"],
        "kwargs": ["mx_dtype=float8_e4m3fn_x4"]},
})


# Kernels that take configuration objects: a launcher (plain Python, run under the shim like
# the kernel) builds the HBM inputs and the objects and calls the kernel. {module} is the
# kernel's dotted module name; the library's root goes on the import path (``--path``).
LAUNCHERS: dict[str, str] = {
    "rmsnorm_quant_kernel": """
import nki.language as nl
from {module} import rmsnorm_quant_kernel, RmsNormQuantKernelArgs

def launch():
    hidden = nl.ndarray((1, 128, 1024), dtype=nl.bfloat16, buffer=nl.shared_hbm)
    ln_w = nl.ndarray((1, 1024), dtype=nl.bfloat16, buffer=nl.shared_hbm)
    return rmsnorm_quant_kernel(hidden, ln_w, RmsNormQuantKernelArgs())
""",
    "rotational_topk": """
import nki.language as nl
from {module} import rotational_topk
from {package}.rotational_topk_utils import create_topk_config, create_rotational_topk_config

def launch():
    inp = nl.ndarray((128, 4096), dtype=nl.bfloat16, buffer=nl.shared_hbm)
    cfg = create_rotational_topk_config(inp.shape, create_topk_config(inp.shape, inp.dtype, 8,
                                                                      num_programs=1))
    return rotational_topk(inp, cfg)
""",
    # all-gather of a [128, 512] slice per rank over 4 ranks (the docstring's example)
    **{f: """
import nki.language as nl
from nki.collectives import ReplicaGroup
from {module} import %s

def launch():
    inp = nl.ndarray((128, 512), dtype=nl.bfloat16, buffer=nl.shared_hbm)
    return %s(inp, ReplicaGroup([[0, 1, 2, 3]]), 4)
""" % (f, f) for f in ("allgather_sb2sb", "allgather_sb2sb_tiled")},
    # moe_tkg MX weight loaders: one expert's HBM weights (a TensorView of them, as their callers
    # pass) into SBUF; one local expert (a fixed slice of several is an IR limit), H = 1024 (128
    # partitions x 2 tiles of 512 / x4 packing), I = 1024
    "load_gate_up_weight_scale_bias": """
import nki.language as nl
from {module} import load_gate_up_weight_scale_bias, TensorView

def launch():
    w = nl.ndarray((1, 128, 2, 2, 1024), dtype=nl.float8_e4m3fn_x4, buffer=nl.shared_hbm)
    s = nl.ndarray((1, 16, 2, 2, 1024), dtype=nl.uint8, buffer=nl.shared_hbm)
    return load_gate_up_weight_scale_bias(TensorView(w), TensorView(s), None, expert_idx=0,
                                          gate_or_up_idx=0, H=1024, n_I512_tiles_local=2,
                                          I_local=1024, I_offset=0)
""",
    "load_broadcast_down_weight_scale_bias": """
import nki.language as nl
from {module} import load_broadcast_down_weight_scale_bias, TensorView

def launch():
    w = nl.ndarray((1, 128, 2, 1024), dtype=nl.float8_e4m3fn_x4, buffer=nl.shared_hbm)
    s = nl.ndarray((1, 16, 2, 1024), dtype=nl.uint8, buffer=nl.shared_hbm)
    return load_broadcast_down_weight_scale_bias(TensorView(w), TensorView(s), None, expert_idx=0,
                                                 H=1024, tile_I=128, n_I512_tiles=2,
                                                 tile_offset=0, tile_T=128)
""",
    "moe_cte": """
import nki.language as nl
from {module} import moe_cte, MoECTESpec, MoECTEImplementation

def launch():
    hbm = nl.shared_hbm
    # the dropping variant tiles blocks of at least 1024 tokens (its docstring)
    h = nl.ndarray((1024, 1024), dtype=nl.bfloat16, buffer=hbm)
    aff = nl.ndarray((1024, 8), dtype=nl.bfloat16, buffer=hbm)
    gu = nl.ndarray((8, 1024, 2, 512), dtype=nl.bfloat16, buffer=hbm)
    dn = nl.ndarray((8, 512, 1024), dtype=nl.bfloat16, buffer=hbm)
    tok = nl.ndarray((8192,), dtype=nl.int32, buffer=hbm)
    blk = nl.ndarray((8,), dtype=nl.int32, buffer=hbm)
    spec = MoECTESpec(implementation=MoECTEImplementation.shard_on_i_dropping)
    return moe_cte(h, aff, gu, dn, tok, blk, 1024, spec)
""",
}


def _on_chip(func: str, tiles: dict, call: str, after: str = "") -> str:
    """Launcher text for a subkernel taking on-chip tiles: each named tile ``(shape, dtype)``
    DMA'd into SBUF from an HBM input of its shape (``psum``: allocated in PSUM, ``out:DTYPE``:
    allocated in SBUF, neither loaded),
    then ``call`` (and ``after``, e.g. a store of the result)."""
    lines = ["import nki.isa as nisa", "import nki.language as nl", f"from {{module}} import {func}",
             "", "def launch():"]
    for name, (shape, dt) in tiles.items():
        if dt == "psum":
            lines.append(f"    {name} = nl.ndarray({shape}, dtype=nl.float32, buffer=nl.psum)")
            continue
        if dt.startswith("out:"):  # an output: allocated, not loaded
            lines.append(f"    {name} = nl.ndarray({shape}, dtype=nl.{dt[4:]}, buffer=nl.sbuf)")
            continue
        lines += [f"    {name}_hbm = nl.ndarray({shape}, dtype=nl.{dt}, buffer=nl.shared_hbm)",
                  f"    {name} = nl.ndarray({shape}, dtype=nl.{dt}, buffer=nl.sbuf)",
                  f"    nisa.dma_copy(dst={name}, src={name}_hbm)"]
    lines.append(f"    res = {call}")
    lines += [f"    {ln}" for ln in after.strip().splitlines()]
    lines.append("    return res")
    return "\n".join(lines) + "\n"


# moe_tkg MX subkernels on SBUF tiles: H = 1024 (128 partitions x 2 tiles of 512, x4-packed),
# T = 128 tokens, I = 512
_MX = "float8_e4m3fn_x4"
LAUNCHERS.update({
    "_clamp_tensor": _on_chip(
        "_clamp_tensor", {"t": ((128, 512), "bfloat16")}, "_clamp_tensor(t, 1.0, -1.0)",
        "out = nl.ndarray((128, 512), dtype=nl.bfloat16, buffer=nl.shared_hbm)\n"
        "nisa.dma_copy(dst=out, src=t)\nres = out"),
    "_matmul_mx_accumulate": _on_chip(
        "_matmul_mx_accumulate",
        {"acc": ((128, 4, 128), "psum"), "w": ((128, 2, 512), _MX), "ws": ((128, 2, 512), "uint8"),
         "x": ((128, 2, 128), _MX), "xs": ((128, 2, 128), "uint8")},
        "_matmul_mx_accumulate(acc, w, ws, x, xs, tile_i=0, tile_T_slice=nl.ds(0, 128), "
        "tile_T_actual=128, n_H512_tiles=2, cur_I128_tile_sz=128)",
        "r = nl.ndarray((128, 4, 128), dtype=nl.bfloat16, buffer=nl.sbuf)\n"
        "nisa.tensor_copy(dst=r, src=acc)\n"
        "out = nl.ndarray((128, 4, 128), dtype=nl.bfloat16, buffer=nl.shared_hbm)\n"
        "nisa.dma_copy(dst=out, src=r)\nres = out"),
    "gate_up_projection_mx_shard_I": _on_chip(
        "gate_up_projection_mx_shard_I",
        {"x": ((128, 2, 128), _MX), "xs": ((128, 2, 128), "uint8"),
         "g": ((128, 2, 512), _MX), "u": ((128, 2, 512), _MX),
         "gs": ((128, 2, 512), "uint8"), "us": ((128, 2, 512), "uint8")},
        "gate_up_projection_mx_shard_I(x, xs, g, u, gs, us, None, None)"),
    # T = 128 tokens, one local expert, I = 512, H = 1024, the output spilled to HBM
    "down_projection_mx": _on_chip(
        "down_projection_mx",
        {"a": ((128, 1, 128), _MX), "as_": ((128, 1, 128), "uint8"),
         "w": ((128, 1, 1024), _MX), "ws": ((128, 1, 1024), "uint8"),
         "aff": ((128, 1), "bfloat16"), "o": ((128, 1, 1024), "out:bfloat16")},
        "down_projection_mx(a, as_, w, ws, None, aff, 0, o, "
        "out_hbm=nl.ndarray((128, 1024), dtype=nl.bfloat16, buffer=nl.shared_hbm), "
        "is_first_expert=True, is_last_expert=True, shard_on_I=False)"),
    # the all-expert MX MoE token-generation kernel, launched through moe_tkg (its caller, which
    # builds the MLPParameters): T = 128, one local expert, H = 1024, I = 512
    "_all_expert_moe_tkg_mx": """
import nki.language as nl
from {package}.moe_tkg import moe_tkg
from {package}.down_projection_mx import TensorView
from {package}.moe_tkg import ExpertAffinityScaleMode

def launch():
    hbm = nl.shared_hbm
    x = nl.ndarray((128, 1024), dtype=nl.bfloat16, buffer=hbm)
    gu = nl.ndarray((1, 128, 2, 2, 512), dtype=nl.float4_e2m1fn_x4, buffer=hbm)
    dn = nl.ndarray((1, 128, 1, 1024), dtype=nl.float4_e2m1fn_x4, buffer=hbm)
    gus = nl.ndarray((1, 16, 2, 2, 512), dtype=nl.uint8, buffer=hbm)
    dns = nl.ndarray((1, 16, 1, 1024), dtype=nl.uint8, buffer=hbm)
    aff = nl.ndarray((128, 1), dtype=nl.bfloat16, buffer=hbm)
    idx = nl.ndarray((128, 1), dtype=nl.int32, buffer=hbm)
    rank = nl.ndarray((1, 1), dtype=nl.int32, buffer=hbm)
    # the weights as TensorViews, as the library's own tests pass them
    gu, dn, gus, dns = (TensorView(t) for t in (gu, dn, gus, dns))
    return moe_tkg(x, gu, dn, aff, idx, is_all_expert=True, rank_id=rank,
                   expert_gate_up_weights_scale=gus,
                   expert_down_weights_scale=dns,
                   expert_affinities_scaling_mode=ExpertAffinityScaleMode.POST_SCALE)
""",
    # one token-generation attention block: B = 1, S_tkg = 4 new tokens, H = 1024, one q head of
    # d_head = 128 (W_qkv holds q, k, v), a 512-token KV cache; no norms, RoPE, cache update
    "attention_block_tkg": """
import nki.language as nl
from {module} import attention_block_tkg, QuantizationType

def launch():
    hbm = nl.shared_hbm
    x = nl.ndarray((1, 4, 1024), dtype=nl.bfloat16, buffer=hbm)
    w_qkv = nl.ndarray((1024, 384), dtype=nl.bfloat16, buffer=hbm)
    k_cache = nl.ndarray((1, 512, 128), dtype=nl.bfloat16, buffer=hbm)
    v_cache = nl.ndarray((1, 512, 128), dtype=nl.bfloat16, buffer=hbm)
    mask = nl.ndarray((512, 1, 1, 4), dtype=nl.bfloat16, buffer=hbm)
    w_out = nl.ndarray((128, 1024), dtype=nl.bfloat16, buffer=hbm)
    none = QuantizationType.NONE
    return attention_block_tkg(
        x, None, False, None, None, w_qkv, None, none, None, None,
        False, 0.0, None, None, None, None, True, False, 0.0, None, None,
        False, None, k_cache, v_cache, mask, None, False, None,
        w_out, None, none, None, None, False, False)
""",
})


# The all-expert MX internals take the config objects init_all_expert_mx_configs builds from
# MLPParameters: the launcher builds those (the same inputs as _all_expert_moe_tkg_mx's launcher)
# and calls the internal with them.
_MX_PRELUDE = """
import nki.isa as nisa
import nki.language as nl
from {module} import (MLPParameters, TensorView, init_all_expert_mx_configs, %(names)s)
from {package}.moe_tkg import ExpertAffinityScaleMode, MLPExpertParameters, QuantizationType

def launch():
    hbm = nl.shared_hbm
    x = nl.ndarray((%(T)d, 1024), dtype=nl.bfloat16, buffer=hbm)
    gu = TensorView(nl.ndarray((1, 128, 2, 2, 512), dtype=nl.float4_e2m1fn_x4, buffer=hbm))
    dn = TensorView(nl.ndarray((1, 128, 1, 1024), dtype=nl.float4_e2m1fn_x4, buffer=hbm))
    gus = TensorView(nl.ndarray((1, 16, 2, 2, 512), dtype=nl.uint8, buffer=hbm))
    dns = TensorView(nl.ndarray((1, 16, 1, 1024), dtype=nl.uint8, buffer=hbm))
    # the affinities on chip, as moe_tkg's masking step leaves them for the static path
    aff_hbm = nl.ndarray((%(T)d, 1), dtype=nl.bfloat16, buffer=hbm)
    aff = nl.ndarray((%(T)d, 1), dtype=nl.bfloat16, buffer=nl.sbuf)
    nisa.dma_copy(dst=aff, src=aff_hbm)
    idx = nl.ndarray((%(T)d, 1), dtype=nl.int32, buffer=hbm)
    out = nl.ndarray((%(T)d, 1024), dtype=nl.bfloat16, buffer=hbm)
    experts = MLPExpertParameters(aff, idx, None, ExpertAffinityScaleMode.POST_SCALE)
    mlp = MLPParameters(hidden_tensor=x, gate_proj_weights_tensor=gu, up_proj_weights_tensor=gu,
                        down_proj_weights_tensor=dn, gate_w_scale=gus, up_w_scale=gus,
                        down_w_scale=dns, quantization_type=QuantizationType.MX,
                        shard_on_h_disabled=False, expert_params=experts)
    tensors, cfg, dims, dyn = init_all_expert_mx_configs(mlp_params=mlp, output=out, %(mode)s)
"""
_STATIC, _DYNAMIC = "is_all_expert_dynamic=False", "is_all_expert_dynamic=True, block_size=128"


def _mx(names: str, mode: str) -> str:
    """The prelude importing ``names``: T = 128 tokens static; dynamic, T = 1024 (its static
    blocks leave tokens for the dynamic ones)."""
    return _MX_PRELUDE % {"names": names, "mode": mode, "T": 128 if mode == _STATIC else 1024}
LAUNCHERS.update({
    "_all_expert_mx_static": _mx("_all_expert_mx_static", _STATIC)
    + "    _all_expert_mx_static(tensors, cfg, dims)\n    return out\n",
    "_load_expert": _mx("_load_expert", _STATIC)
    + "    return _load_expert(tensors, cfg, dims, 0)\n",
    "_layout_adapter_qmx_hbm": _mx("_layout_adapter_qmx_hbm", _STATIC)
    + "    return _layout_adapter_qmx_hbm(tensors.hidden_input, dims)\n",
    "_all_expert_mx_dynamic": _mx("_all_expert_mx_dynamic", _DYNAMIC)
    + "    _all_expert_mx_dynamic(tensors, cfg, dims, dyn)\n    return out\n",
    "_find_expert_routed_tokens": _mx("_find_expert_routed_tokens", _DYNAMIC)
    + "    return _find_expert_routed_tokens(tensors, dims, dyn, 0)\n",    # the internals that take another internal's results get them from that internal
    "_init_dynamic_block_indices_hbm": _mx("_find_expert_routed_tokens, _init_dynamic_block_indices_hbm", _DYNAMIC)
    + "    routed, decision = _find_expert_routed_tokens(tensors, dims, dyn, 0)\n"
    + "    return _init_dynamic_block_indices_hbm(dims, dyn, routed, decision)\n",
    "_compute_block": _mx("_find_expert_routed_tokens, _load_expert, _compute_block", _DYNAMIC)
    + "    arange_4 = nl.ndarray((1, 4), dtype=nl.float32, buffer=nl.sbuf)\n"
    + "    nisa.iota(arange_4, [[1, 4]], offset=0)\n"
    + "    weights = _load_expert(tensors, cfg, dims, 0)\n"
    + "    routed, decision = _find_expert_routed_tokens(tensors, dims, dyn, 0)\n"
    + "    _compute_block(tensors, cfg, dims, dyn, weights, routed, arange_4, 0, 0, False)\n"
    + "    return out\n",
    # the three steps of _compute_block, each fed as _compute_block feeds it (static block 0)
    "_get_block_token_position_to_id": _mx("_find_expert_routed_tokens, _get_block_token_position_to_id",
                                           _DYNAMIC)
    + "    arange_4 = nl.ndarray((1, 4), dtype=nl.float32, buffer=nl.sbuf)\n"
    + "    nisa.iota(arange_4, [[1, 4]], offset=0)\n"
    + "    routed, decision = _find_expert_routed_tokens(tensors, dims, dyn, 0)\n"
    + "    return _get_block_token_position_to_id(dyn, routed, arange_4, 0, False)\n",
    "_load_block_expert_affinities": _mx("_find_expert_routed_tokens, _get_block_token_position_to_id, "
                                         "_load_block_expert_affinities", _DYNAMIC)
    + "    arange_4 = nl.ndarray((1, 4), dtype=nl.float32, buffer=nl.sbuf)\n"
    + "    nisa.iota(arange_4, [[1, 4]], offset=0)\n"
    + "    routed, decision = _find_expert_routed_tokens(tensors, dims, dyn, 0)\n"
    + "    _, pos_T = _get_block_token_position_to_id(dyn, routed, arange_4, 0, False)\n"
    + "    return _load_block_expert_affinities(tensors, dims, dyn, pos_T, 0)\n",
    # as _all_expert_mx_static calls it: the hidden states quantized by _layout_adapter_qmx_hbm
    "_compute_expert_mlp": _mx("_layout_adapter_qmx_hbm, _load_expert, _compute_expert_mlp", _STATIC)
    + "    xq, xs = _layout_adapter_qmx_hbm(tensors.hidden_input, dims)\n"
    + "    weights = _load_expert(tensors, cfg, dims, 0)\n"
    + "    o = nl.ndarray((dims.tile_T, dims.n_tiles_in_T, dims.H), dtype=cfg.activation_compute_dtype,\n"
    + "                   buffer=nl.sbuf)\n"
    + "    _compute_expert_mlp(xq, xs, weights, cfg, tensors.expert_affinities_masked, o, tensors.output,\n"
    + "                        0, True, True, shard_on_I=dims.shard_on_I, shard_on_T=dims.shard_on_T)\n"
    + "    return out\n",
})
# the shard-on-I MX kernel defaults to PRE_SCALE, which its own code refuses ("PRE_SCALE mode
# not implemented", bwmm_shard_on_I_mx.py:915): launched with POST_SCALE and the table's inputs
LAUNCHERS["blockwise_mm_shard_intermediate_mx"] = """
import nki.language as nl
from {module} import blockwise_mm_shard_intermediate_mx, ExpertAffinityScaleMode

def launch():
    hbm = nl.shared_hbm
    mx = nl.float8_e4m3fn_x4
    return blockwise_mm_shard_intermediate_mx(
        nl.ndarray((1025, 1024), dtype=nl.bfloat16, buffer=hbm),
        nl.ndarray((8200, 1), dtype=nl.bfloat16, buffer=hbm),
        nl.ndarray((8, 128, 2, 2, 1024), dtype=mx, buffer=hbm),
        nl.ndarray((8, 128, 2, 1024), dtype=mx, buffer=hbm),
        nl.ndarray((4096,), dtype=nl.int32, buffer=hbm),
        nl.ndarray((8, 1), dtype=nl.int32, buffer=hbm),
        gate_and_up_proj_bias=nl.ndarray((8, 128, 2, 2, 4), dtype=nl.bfloat16, buffer=hbm),
        down_proj_bias=nl.ndarray((8, 1024), dtype=nl.bfloat16, buffer=hbm),
        gate_up_proj_scale=nl.ndarray((8, 16, 2, 2, 1024), dtype=nl.uint8, buffer=hbm),
        down_proj_scale=nl.ndarray((8, 16, 2, 1024), dtype=nl.uint8, buffer=hbm),
        block_size=512, weight_dtype=mx,
        expert_affinities_scaling_mode=ExpertAffinityScaleMode.POST_SCALE)
"""
# launchers whose kernel runs on a grid (the shard-on-I MoE splits blocks between 2 cores)
LAUNCH_GRID: dict[str, tuple[int, ...]] = {"moe_cte": (2,), "blockwise_mm_shard_intermediate_mx": (2,)}
# launchers whose kernel tests a register read at run time (--register-value strings): the
# dynamic all-expert MoE loops `while reg:` over dynamic blocks, the register first read at
# all_expert_mx_impl.py:311 (the first block's decision) and reloaded at :347 (the next one's):
# one dynamic block, its decision 1 and the next 0
LAUNCH_REGISTERS: dict[str, tuple[str, ...]] = {
    "_all_expert_mx_dynamic": ("all_expert_mx_impl.py:311=1", "all_expert_mx_impl.py:347=0")}


# the older nki-samples snapshot's kernels (benchmarks/nki_corpus_samples_2025.py)
sys.path.insert(0, str(Path(__file__).resolve().parent))
from nki_corpus_samples_2025 import LAUNCHERS as _LAUNCH_2025, SHAPES as _SAMPLES_2025  # noqa: E402

SHAPES.update(_SAMPLES_2025)
LAUNCHERS.update(_LAUNCH_2025)


def lookup(table: dict, path: Path, func: str):
    """The entry of ``func`` in ``path``: a ``FILE.py::FUNCTION`` key whose file is a suffix of
    ``path`` first, else ``FUNCTION``; None when neither is there."""
    for key, entry in table.items():
        file, sep, name = key.partition("::")
        if sep and name == func and path.as_posix().endswith("/" + file):
            return entry
    return table.get(func)


def _launcher(path: Path, func: str, scratch: Path):
    """(launcher file, import root) for a kernel in LAUNCHERS, written to ``scratch``."""
    from loopsim.frontends.nki.load import package_of

    root, module = package_of(str(path.resolve()))
    module = module or path.stem
    f = scratch / f"launch_{func}.py"
    f.write_text(lookup(LAUNCHERS, path, func).format(module=module,
                                                      package=module.rpartition(".")[0]))
    return f, root


def kernels_in(path: Path):
    """(function name, decorator text) of each ``@nki.jit``-style function, read without running
    the file."""
    try:
        tree = ast.parse(path.read_text(encoding="utf-8"), filename=str(path))
    except (SyntaxError, UnicodeDecodeError) as e:
        if "jit" in path.read_text(encoding="utf-8", errors="replace"):
            return [f"?  (the file does not parse: {type(e).__name__} line {getattr(e, 'lineno', '?')})"]
        return []
    return [n.name for n in _jit_functions(tree)]


def _jit_functions(tree: ast.Module):
    """The module's top-level functions decorated ``@nki.jit`` (or baremetal, trace)."""
    return [n for n in tree.body if isinstance(n, ast.FunctionDef) and any(
        ast.unparse(d).split("(")[0].split(".")[-1] in ("jit", "baremetal", "trace")
        for d in n.decorator_list)]


def jit_callers(path: Path) -> dict[str, set[str]]:
    """{called name: the ``@nki.jit`` functions of ``path`` calling it}, read without running
    the file (a call ``f(...)`` or ``m.f(...)``)."""
    try:
        tree = ast.parse(path.read_text(encoding="utf-8"), filename=str(path))
    except (SyntaxError, UnicodeDecodeError):
        return {}
    out: dict[str, set[str]] = {}
    for fn in _jit_functions(tree):
        for c in ast.walk(fn):
            if isinstance(c, ast.Call):
                name = getattr(c.func, "id", None) or getattr(c.func, "attr", None)
                if name and name != fn.name:
                    out.setdefault(name, set()).add(fn.name)
    return out


def classify(path: Path, func: str, table: dict) -> tuple[str, str, float]:
    """(status, detail, seconds) of one kernel."""
    from loopsim.base.errors import LoopsimError
    from loopsim.frontends import program
    from loopsim.frontends.nki.load import parse_options, trace_kernel
    from loopsim.model import pipeline
    from loopsim.targets import hardware

    import tempfile

    t0 = time.perf_counter()
    entry = lookup(table, path, func)
    try:
        if lookup(LAUNCHERS, path, func) is not None:
            with tempfile.TemporaryDirectory() as scratch:
                launcher, root = _launcher(path, func, Path(scratch))
                k, rec = trace_kernel(str(launcher), "launch", paths=(root,),
                                      grid=LAUNCH_GRID.get(func, ()),
                                      registers=parse_options(
                                          registers=LAUNCH_REGISTERS.get(func, ()))["registers"])
        else:
            opts = parse_options(entry.get("args", ()), entry.get("kwargs", ()), entry.get("grid"),
                                 paths=[p.format(nkilib=NKILIB) for p in entry.get("paths", ())],
                                 registers=entry.get("registers", ())) if entry else parse_options()
            k, rec = trace_kernel(str(path), func, **opts)
        prog = k if isinstance(k, program.Program) else program.Program.single(k)
        a = pipeline.analyze(prog, hardware.load("trn2-core"))
    except LoopsimError as e:
        why = str(e)
        if entry is None and lookup(LAUNCHERS, path, func) is None:
            why = "(no shapes in the table) " + why
        return "refused", why, time.perf_counter() - t0
    except Exception as e:  # a loopsim bug, shown as such
        return "refused", f"LOOPSIM BUG {type(e).__name__}: {e}", time.perf_counter() - t0
    notes = list(rec.notes) + [f"assumed: {x}" for x in getattr(rec, "work", ()) if x.assumed]
    assumed = [n for n in notes if "ASSUMED" in n or n.startswith("assumed") or "stubbed" in n]
    detail = f"Q={a.counts.Q:,} B  W={a.counts.flops:,}  concrete loops {len(rec.concrete)}"
    if assumed:
        return "assumed", detail + "; " + " | ".join(assumed), time.perf_counter() - t0
    return "traced", detail, time.perf_counter() - t0


NKILIB = ""  # the nki-library's import root for "paths" entries ({nkilib}); set by main


def main(argv=None) -> int:
    global NKILIB
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("dirs", nargs="+", type=Path)
    ap.add_argument("--nkilib", type=Path, default=None,
                    help="the nki-library snapshot (default: nki-library beside the first folder)")
    ap.add_argument("--only", default=None, help="only files or functions containing this")
    ap.add_argument("-v", action="store_true", help="print the notes in full")
    a = ap.parse_args(argv)
    NKILIB = str((a.nkilib or a.dirs[0].resolve().parent / "nki-library") / "src" / "nkilib_src")
    rows = []
    for d in a.dirs:
        files = [f for f in (sorted(d.rglob("*.py")) if d.is_dir() else [d])
                 if "/test" not in str(f.relative_to(d)) and not f.name.startswith("test_")]
        callers: dict[str, set[str]] = {}
        for f in files:
            for name, by in jit_callers(f).items():
                callers.setdefault(name, set()).update(by)
        for f in files:
            for func in kernels_in(f):
                if a.only and a.only not in str(f) and a.only not in func:
                    continue
                if func.startswith("?"):
                    rows.append((f, func, "refused"))
                    print(f"refused  {f.relative_to(d)}::{func}", flush=True)
                    continue
                if func in callers and lookup(SHAPES, f, func) is None and \
                        lookup(LAUNCHERS, f, func) is None:
                    rows.append((f, func, "helper"))
                    print(f"helper   {f.relative_to(d)}::{func}  (called by "
                          f"{', '.join(sorted(callers[func]))})", flush=True)
                    continue
                with contextlib.redirect_stdout(io.StringIO()):  # kernels that print
                    status, detail, dt = classify(f, func, SHAPES)
                rows.append((f, func, status))
                shown = detail if a.v or len(detail) < 400 else detail[:400] + " ..."
                print(f"{status:8} {f.relative_to(d)}::{func}  ({dt:.2f} s)  {shown}", flush=True)
    c = Counter(s for *_, s in rows)
    print(f"\n{len(rows)} kernels: traced {c['traced']}, assumed {c['assumed']}, "
          f"refused {c['refused']}" + (f", helper {c['helper']}" if c["helper"] else ""))
    return 0


if __name__ == "__main__":
    sys.exit(main())
