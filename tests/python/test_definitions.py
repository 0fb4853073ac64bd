"""Hardware and models of one's own from Python: a GPU from its datasheet, a model from its
checkpoint's config.json, KV offloading to host memory; their errors are Python exceptions."""

from __future__ import annotations

import json

import pytest

import fleetsim

# Qwen2.5-7B-Instruct's config.json, quantized as AWQ 4-bit.
CONFIG = {
    "hidden_size": 3584, "intermediate_size": 18944, "num_attention_heads": 28,
    "num_hidden_layers": 28, "num_key_value_heads": 4, "vocab_size": 152064,
    "max_position_embeddings": 32768, "sliding_window": 131072, "use_sliding_window": False,
    "quantization_config": {"quant_method": "awq", "bits": 4, "group_size": 128},
}


def scenario(tmp_path, small_yaml, extra: str = "") -> str:
    (tmp_path / "config.json").write_text(json.dumps(CONFIG))
    text = small_yaml.replace(
        "  gpu: L40S\n  model: Qwen2.5-7B-Instruct\n",
        "  gpu: my-gpu\n  model: qwen-awq\n"
        "  gpus: [{name: my-gpu, memory_gib: 44.4, memory_bandwidth_gbs: 864, bf16_tflops: 362,"
        " host_link_gbs: 32}]\n"
        "  models: [{name: qwen-awq, hf_config: config.json}]\n" + extra)
    path = tmp_path / "mine.yaml"
    path.write_text(text)
    return str(path)


def test_a_gpu_and_a_quantized_model_of_ones_own_run(tmp_path, small_yaml):
    result = fleetsim.run(scenario(tmp_path, small_yaml))
    assert result.summary["fleet"]["gpu"] == "my-gpu"
    assert result.summary["fleet"]["model"] == "qwen-awq"
    # A quarter of the weights' bytes: its decode steps are shorter than the BF16 model's.
    bf16 = fleetsim.run(scenario(tmp_path, small_yaml), overrides={
        "fleet.models.qwen-awq.weight_dtype": "bf16"})
    assert result.arms[0].summary["tpot_ms"]["p50"] < bf16.arms[0].summary["tpot_ms"]["p50"]


def test_kv_offloading_reports_the_host_tier(tmp_path, small_yaml):
    result = fleetsim.run(scenario(tmp_path, small_yaml), overrides={
        "fleet.server.num_gpu_blocks_override": 120, "fleet.server.kv_offloading_size_gib": 4})
    host = result.arms[0].summary["kv_offload"]
    assert host["external_prefix_cache_hits"] > 0
    assert host["combined_reuse"] > result.arms[0].summary["prefix_cache_reuse"]


def test_what_is_not_modelled_is_a_scenario_error(tmp_path, small_yaml):
    CONFIG["mamba_d_state"] = 128
    try:
        with pytest.raises(fleetsim.ScenarioError, match="state-space or linear-attention"):
            fleetsim.run(scenario(tmp_path, small_yaml))
    finally:
        del CONFIG["mamba_d_state"]
    CONFIG["kv_lora_rank"] = 512  # latent attention needs its other widths too
    try:
        with pytest.raises(fleetsim.ScenarioError, match="without an integer 'qk_nope_head_dim'"):
            fleetsim.run(scenario(tmp_path, small_yaml))
    finally:
        del CONFIG["kv_lora_rank"]
    with pytest.raises(fleetsim.ScenarioError, match="has no host_link_gbs"):
        fleetsim.run(scenario(tmp_path, small_yaml), overrides={
            "fleet.gpus.my-gpu.host_link_gbs": 0, "fleet.server.kv_offloading_size_gib": 4})


# deepseek-ai/DeepSeek-V2-Lite-Chat's config.json: latent attention without a query bottleneck,
# 64 routed experts (6 a token), 2 shared, the first layer dense.
V2_LITE = {
    "model_type": "deepseek_v2", "hidden_size": 2048, "num_hidden_layers": 27,
    "num_attention_heads": 16, "num_key_value_heads": 16, "q_lora_rank": None,
    "kv_lora_rank": 512, "qk_nope_head_dim": 128, "qk_rope_head_dim": 64, "v_head_dim": 128,
    "intermediate_size": 10944, "moe_intermediate_size": 1408, "n_routed_experts": 64,
    "n_shared_experts": 2, "num_experts_per_tok": 6, "first_k_dense_replace": 1,
    "vocab_size": 102400, "tie_word_embeddings": False,
}


def test_a_latent_attention_model_from_its_config_runs_in_flashmlas_blocks(tmp_path, small_yaml):
    (tmp_path / "config.json").write_text(json.dumps(V2_LITE))
    text = small_yaml.replace(
        "  gpu: L40S\n  model: Qwen2.5-7B-Instruct\n",
        "  gpu: H100-SXM\n  model: v2-lite\n"
        "  models: [{name: v2-lite, hf_config: config.json}]\n")
    path = tmp_path / "lite.yaml"
    path.write_text(text)
    result = fleetsim.run(str(path))
    assert result.summary["fleet"]["kv_block_size"] == 64  # FlashMLA on Hopper
    assert result.arms[0].summary["prefix_cache_reuse"] > 0.3
    lite = [m for m in fleetsim.models() if m["name"] == "v2-lite"]
    assert not lite  # a scenario's own model is not added to the catalog
    (tmp_path / "config.json").write_text(json.dumps({**V2_LITE, "index_topk": 2048}))
    with pytest.raises(fleetsim.ScenarioError, match="sparse attention over selected tokens"):
        fleetsim.run(str(path))
