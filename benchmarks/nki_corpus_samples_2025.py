"""Shapes for the kernels of the older nki-samples snapshot (2025-12-05): the ``neuronxcc.nki``
reference kernels (flash attention forward and backward, the allocated kernels, vision,
rmsnorm_quant), the tutorials since removed (layernorm, rmsnorm, softmax, SD attention, rotary)
and ``contributed/neuron-team-kernels``. Read by ``nki_corpus.py`` beside its own table.

A key ``FILE.py::FUNCTION`` (a path suffix) is for one file's function where two files share a
name; a plain ``FUNCTION`` is for every file. Shapes are those of the kernels' own tests
(``test/unit/``), ``__main__`` blocks or docstrings, or small legal ones where those are huge.
"""

from __future__ import annotations

_BF = "bfloat16"

SHAPES: dict[str, dict] = {
    # tutorials/layernorm: its __main__ (--nrows 4096, --ncols 8192, fp32), epsilon 1e-5
    **{f"nki_layernorm_kernel_v{v}": {
        "args": ["input_tensor=4096x8192:fp32", "gamma_vector=8192:fp32", "beta_vector=8192:fp32"],
        "kwargs": ["epsilon=1e-5"]} for v in (1, 2)},
    # tutorials/rmsnorm: its __main__ (a 128 x 512 fp32, g of 512)
    "nki_rmsnorm_kernel": {"args": ["a_tensor=128x512:fp32", "g_tensor=512:fp32"]},
    # tutorials/softmax: 256 rows (two row tiles) of 1024
    "nki_softmax_kernel": {"args": ["a_tensor=256x1024:fp32"]},
    # tutorials/rotary: [batch, heads, seq, head_dim], launched on a [batch, heads] grid; cos and
    # sin [batch, seq, head_dim] (the kernel reads cos[batch_id])
    "nki_apply_rotary_embedding": {"args": ["q=1x2x256x128", "k=1x2x256x128", "cos=1x256x128",
                                            "sin=1x256x128"], "grid": "1x2"},
    # tutorials/sd_attention: (seqlen, d_head) = (4096, 64) (test_SD_attention_small_head.py)
    "sd_attention_nki_kernels.py::fused_self_attn_for_SD_small_head_size": {
        "args": ["q_ref=4096x64", "k_ref=4096x64", "v_ref=4096x64"]},
    # reference/attention.py's SD attention: q (bs, d, seqlen), k and v (bs, seqlen, d) (its asserts;
    # test_SD_attention_small_head.py: bs 1, seqlen 4096, d 128)
    "reference/attention.py::fused_self_attn_for_SD_small_head_size": {
        "args": ["q_ref=1x128x4096", "k_ref=1x4096x128", "v_ref=1x4096x128"]},
    # reference/allocated_attention.py: q, k (bs, d, seqlen), v (bs, seqlen, d)
    # (test_allocated_SD_attention_small_head.py: 1, 4096, 128)
    "allocated_fused_self_attn_for_SD_small_head_size": {
        "args": ["q_ref=1x128x4096", "k_ref=1x128x4096", "v_ref=1x4096x128"]},
    # reference/allocated_fused_linear.py (test_rmsnorm_qkv.py: batch 1, dim 1024, d_head 512,
    # bf16; seqlen 256, not its 128: the kernel works on pairs of 128-row tiles, the second masked
    # off at 128, and loopsim counts a masked matmul's whole tile)
    "allocated_fused_rms_norm_qkv": {"args": ["hidden=1x256x1024", "weights=1024x512"]},
    # reference/attention.py flash forward: q, k (bs, heads, d, seq), v (bs, heads, seq, d), seed
    # (1,); seq 4096, d 128, one head (test_flash_attn_fwd.py's accuracy shapes, one head)
    "reference/attention.py::flash_fwd": {
        "args": ["q=1x1x128x4096", "k=1x1x128x4096", "v=1x1x4096x128", "seed=1:int32"],
        "grid": "1x1"},  # its assert: a [batch, heads] grid
    # flash backward: q, k, v, o, dy (bs, heads, d, seq), lse (bs, heads, 128, seq // 128)
    "flash_attn_bwd": {
        "args": [f"{n}=1x1x128x4096" for n in ("q_ref", "k_ref", "v_ref", "o_ref", "dy_ref")]
        + ["lse_ref=1x1x128x32:fp32", "seed_ref=1:int32"], "grid": "1x1"},
    # reference/double_row_matmul.py (test_double_row_matmul.py: M 512, K 16384, N 1024, blocks
    # 2, 2, 16; K here 4096 = 128 x 16 x 2): rhs pre-quantized [K // 2, 2 N], its scale [128, N]
    "quantized_double_row_matmul": {
        "args": ["lhs=512x4096", "rhs_quantized=2048x2048:float8_e4m3", "rhs_scale=128x1024:fp32"],
        "kwargs": ["TILES_IN_BLOCK_M=2", "TILES_IN_BLOCK_N=2", "TILES_IN_BLOCK_K=16"]},
    # reference/tutorial.py: [n, 8, 128, 512] blocks, one per program
    "add_kernel_nx8x128x512": {"args": ["a_ptr=2x8x128x512", "b_ptr=2x8x128x512"],
                               "kwargs": ["n_elements=1048576"], "grid": "2"},
    # reference/vision.py (test_select_and_scatter.py, test_resize_nearest.py,
    # test_adaptive_avg_pool2d.py; batch 1)
    # (batch 2: its assert wants an even batch, two batches sharing the partitions)
    "select_and_scatter_kernel": {"args": ["operand_tensor=2x64x112x112:fp32",
                                           "source_tensor=2x64x56x56:fp32"]},
    "resize_nearest_fixed_dma_kernel": {"args": ["data_tensor=1x30x20x1280:fp32"],
                                        "kwargs": ["out_shape=(1, 59, 38, 1280)"]},
    "adaptive_avg_pool2d_kernel": {"args": ["in_tensor=1x64x56x56:fp32"], "kwargs": ["output_size=7"]},
    # contributed/neuron-team-kernels/attention.py ring attention (docstring layouts): one head,
    # d 128, a 2048-token chunk per rank, a ring of two ranks
    "ring_attention_fwd": {"args": ["q=1x1x128x2048", "k=1x1x128x2048", "v=1x1x128x2048",
                                    "seed=1:int32"],
                           "kwargs": ["src_tgt_pairs=[[0, 1], [1, 0]]"]},
    "ring_attention_bwd": {
        "args": [f"{n}=1x1x128x2048" for n in ("q_ref", "k_ref", "v_ref", "o_ref", "dy_ref")]
        + ["lse_ref=1x1x128x16", "seed_ref=1:int32"],  # lse in the inputs' dtype (its assert)
        "kwargs": ["src_tgt_pairs=[[0, 1], [1, 0]]"]},
    # attention_token_gen.py (its asserts): B 1, 4 new tokens, d_head 128, 2 heads, K cache
    # transposed [B, d, S_ctx], 2048 cached tokens
    "attention_token_gen_kernel": {
        "args": ["Q=1x128x2x4", "K=1x128x4", "V=1x4x128", "K_cache=1x128x2048",
                 "V_cache=1x2048x128", "mask_cache=1x2x4x2048", "mask_active=1x2x4x4",
                 "out=1x2x4x128"]},
    # the llama3 block (its docstring): X [1, 4, 1024], W_qkv [1024, 3 x 128] (one q head), cos and
    # sin [64, 1, 4] (its assert: [d // 2, B, S_tkg]), K cache transposed [1, 128, 512], masks [1, 1, 4, S]
    "llama3_attention_block_token_gen_kernel": {
        "args": ["X=1x4x1024", "W_qkv=1024x384", "W_gamma=1x1024", "cos=64x1x4", "sin=64x1x4",
                 "K_cache=1x128x512", "V_cache=1x512x128", "mask_cache=1x1x4x512",
                 "mask_active=1x1x4x4", "position_ids=1x1:int32"],
        "kwargs": ["rmsnorm_eps=1e-6", "update_cache=True"]},
    # blockwise_mm.py: T 1024 tokens, H 4096 (its assert: 4096 to 8192), 8 experts, I 512, blocks
    # of 512 (8 blocks)
    "blockwise_mm_baseline_allocated": {
        "args": ["hidden_states=1024x4096", "expert_affinities_masked=1024x8",
                 "gate_up_proj_weight=8x4096x2x512", "down_proj_weight=8x512x4096",
                 "token_position_to_id=4096:int32", "block_to_expert=8:int32"],
        "kwargs": ["block_size=512"]},
    "blockwise_mm_baseline_while": {
        "args": ["conditions=9:int32", "hidden_states=1024x4096", "expert_affinities_masked=1024x8",
                 "gate_up_proj_weight=8x4096x2x512", "down_proj_weight=8x512x4096",
                 "token_position_to_id=4096:int32", "block_to_expert=8:int32",
                 "output=1024x4096"],
        "kwargs": ["block_size=512"], "registers": ["8"]},
    # conv.py depthwise path (its asserts): in (C, H, W, N), filter (C, kH, kW, 1), out (N, C, oH,
    # oW); batch 2 (a batch of 1 is its "Unhandled case")
    "conv2d": {"args": ["in_ref=128x16x16x2", "filter_ref=128x3x3x1", "out_ref=2x128x14x14"]},
    # hw_ubench.py: A [t, K, M], B [t, K, N] row-tiled; A [K, M], B [K, N] column-tiled
    "row_tiled_matmul_isa_kernel": {"args": ["A=2x128x128", "B=2x128x512"],
                                    "kwargs": ["n_tile=512", "tiling_factor=2", "use_full_pe=True"]},
    "column_tiled_matmul_isa_kernel": {"args": ["A=128x128", "B=128x512"],
                                       "kwargs": ["n_tile=512", "use_full_pe=True"]},
    # rmsnorm_quant.py: hidden [B, S, H] = [1, 256, 1024], ln_w [H], out [B, S, H + 4] fp8
    **{f: {"args": ["hidden=1x256x1024", "ln_w=1024"]
           + (["out=1x256x1028:float8_e4m3"] if f != "compatible_rmsnorm_quant" else []),
           "kwargs": ["lower_bound=448.0", "kernel_name='RMSNormQuant'"]}
       for f in ("rmsnorm_quant", "shard_rmsnorm_quant", "compatible_rmsnorm_quant")},
    # transpose.py: [I, J, K] = [4, 32, 64] (I J and J K under its free-size limit); the 2-D one
    # with its permutation
    "tiled_dve_transpose_210": {"args": ["img_ref=4x32x64"]},
    "tiled_dve_transpose_10": {"args": ["img_ref=128x256"], "kwargs": ["permutation=[1, 0]"]},
}


# Kernels that take a configuration object: launchers as in nki_corpus.LAUNCHERS ({module} the
# kernel's module, {package} its package)
LAUNCHERS: dict[str, str] = {
    # reference/rmsnorm_quant (a folder without __init__.py importing ..util): hidden [B, S, H] =
    # [1, 128, 1024], ln_w [1, H], the arguments' lower bound 448 (fp8_e4m3's largest value)
    "reference/rmsnorm_quant/rmsnorm_quant.py::rmsnorm_quant_kernel": """
import nki.language as nl
from {module} import rmsnorm_quant_kernel, RmsNormQuantKernelArgs

def launch():
    hidden = nl.ndarray((1, 128, 1024), dtype=nl.bfloat16, buffer=nl.shared_hbm)
    ln_w = nl.ndarray((1, 1024), dtype=nl.bfloat16, buffer=nl.shared_hbm)
    return rmsnorm_quant_kernel(hidden, ln_w, RmsNormQuantKernelArgs(lower_bound=448.0))
""",
    # ring attention forward: its assert wants FlashConfig(should_transpose_v=True), v then
    # (b, kv_heads, d, seq); one head, d 128, a 2048-token chunk, a ring of two ranks
    "neuron-team-kernels/attention.py::ring_attention_fwd": """
import nki.language as nl
from {module} import ring_attention_fwd
from attention_build_blocks import FlashConfig

def launch():
    hbm = nl.shared_hbm
    q, k, v = (nl.ndarray((1, 1, 128, 2048), dtype=nl.bfloat16, buffer=hbm) for _ in range(3))
    seed = nl.ndarray((1,), dtype=nl.int32, buffer=hbm)
    return ring_attention_fwd(q, k, v, seed, src_tgt_pairs=[[0, 1], [1, 0]],
                              config=FlashConfig(should_transpose_v=True))
""",
}
