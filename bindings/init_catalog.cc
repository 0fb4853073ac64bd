// Area: catalog. What can go into a scenario: GPUs, models, routing policies, workloads, and the
// parameters of each (from the same ParamSpec that validates the YAML and feeds `describe`).
#include <pybind11/pybind11.h>
#include <pybind11/stl.h>

#include "bindings/common.h"
#include "models/cost_model.h"
#include "models/engine.h"
#include "models/gpu_catalog.h"
#include "models/llm_catalog.h"
#include "policies/policy.h"
#include "sim/fleet/describe.h"
#include "sim/fleet/workload.h"

namespace fleetsim::py_bindings {
namespace {

template <typename Registry>
py::list entries(const Registry& reg, bool policies) {
  py::list out;
  for (const auto& [name, e] : reg.entries()) {
    py::dict d;
    d["name"] = name;
    d["description"] = e.description;
    d["params"] = spec_to_py(e.spec);
    if (policies) d["python"] = is_python_policy(name);
    out.append(std::move(d));
  }
  return out;
}

}  // namespace

void init_catalog(py::module_& m) {
  m.def(
      "gpus",
      [] {
        py::list out;
        for (const GpuSpec& g : gpu_catalog()) {
          py::dict d;
          d["name"] = g.name;
          d["memory_gib"] = g.memory_gib;
          d["memory_bandwidth_gbs"] = g.memory_bandwidth_gbs;
          d["bf16_tflops"] = g.bf16_tflops;
          d["fp8_tflops"] = g.fp8_tflops;
          d["int8_tops"] = g.int8_tops;
          d["fp4_tflops"] = g.fp4_tflops;
          d["interconnect_gbs"] = g.interconnect_gbs;
          d["host_link_gbs"] = g.host_link_gbs;
          d["compute_capability"] = g.compute_capability;
          d["mig_slices"] = g.mig_slices;
          d["nvlink_gpus"] = g.nvlink_gpus;
          d["bandwidth_efficiency"] = bandwidth_efficiency_for(g);
          d["source"] = g.source;
          out.append(std::move(d));
        }
        return out;
      },
      "The GPU catalog (`fleet.gpu` values) as a list of dicts: name, memory_gib, "
      "memory_bandwidth_gbs, bf16_tflops, fp8_tflops (0 = no FP8 tensor cores), int8_tops, "
      "fp4_tflops (0 = no FP4 tensor cores), interconnect_gbs, host_link_gbs, compute_capability "
      "(0 = unknown), mig_slices (0 = no MIG), nvlink_gpus (how many NVLink connects all to "
      "all; 0 = PCIe only), bandwidth_efficiency (the fraction of the peak "
      "bandwidth the cost model streams weights at: the part's measured one, else 0.82), source. "
      "`pandas.DataFrame(fleetsim.gpus())` makes a table.");
  m.def(
      "models",
      [] {
        py::list out;
        for (const LlmSpec& l : llm_catalog()) {
          py::dict d;
          d["name"] = l.name;
          d["params_b"] = l.params_b;
          d["layers"] = l.layers;
          d["hidden_size"] = l.hidden_size;
          d["num_heads"] = l.num_heads;
          d["num_kv_heads"] = l.num_kv_heads;
          d["head_dim"] = l.head_dim;
          d["intermediate_size"] = l.intermediate_size;
          d["vocab_size"] = l.vocab_size;
          d["num_experts"] = l.num_experts;
          d["experts_per_token"] = l.experts_per_token;
          d["moe_intermediate_size"] = l.moe_intermediate_size;
          d["shared_expert_intermediate_size"] = l.shared_expert_intermediate_size;
          d["dense_layers"] = l.dense_layers;
          d["kv_lora_rank"] = l.kv_lora_rank;
          d["sliding_window"] = l.sliding_window;
          d["sliding_window_layers"] = l.sliding_layers;
          d["max_position_embeddings"] = l.max_position_embeddings;
          d["qk_norm"] = l.qk_norm;
          d["active_params_b"] = l.activated_params() / 1e9;
          d["weight_dtype"] = weight_dtype_name(l.weight_dtype);
          d["bytes_per_weight"] = l.bytes_per_linear_weight();
          d["quantized"] = l.quantized_experts_only ? "experts" : "linear";
          d["weight_gib"] = l.weight_bytes_total() / (1024.0 * 1024 * 1024);
          d["kv_bytes_per_token_bf16"] = l.kv_bytes_per_token(2, 1);
          d["source"] = l.source;
          out.append(std::move(d));
        }
        return out;
      },
      "The LLM catalog (`fleet.model` values) as a list of dicts: name, params_b, layers, "
      "hidden_size, num_heads, num_kv_heads, head_dim, intermediate_size, vocab_size, "
      "num_experts, experts_per_token, moe_intermediate_size, shared_expert_intermediate_size, "
      "dense_layers (0 for dense models), kv_lora_rank (latent attention; 0 = grouped KV "
      "heads), sliding_window and sliding_window_layers (0 = none), max_position_embeddings "
      "(vLLM's default max_model_len; 0 = not known), qk_norm (per-head query and key norms), "
      "active_params_b (a token's "
      "parameters, embedding and lm_head included), weight_dtype (bf16, fp8, int8, int4, fp4, "
      "mxfp4), quantized (which weights weight_dtype covers: linear or experts), "
      "bytes_per_weight, weight_gib, kv_bytes_per_token_bf16 (every layer's), source.");
  m.def(
      "policies", [] { return entries(PolicyRegistry::instance(), true); },
      "Every registered routing policy (built in, or registered from Python) as a list of dicts: "
      "name, description, params (list of {name, type, default, help, min, max, choices}), "
      "python (True when written in Python).");
  m.def(
      "workloads", [] { return entries(WorkloadRegistry::instance(), false); },
      "Every registered workload (`workload.type` values) as a list of dicts: name, "
      "description, params.");
  m.def(
      "server_params", [] { return spec_to_py(server_spec()); },
      "The parameters of a scenario's `fleet.server` section (vLLM settings): a list of "
      "{name, type, default, help, min, max, choices}.");
  m.def(
      "cost_model_params", [] { return spec_to_py(cost_model_spec()); },
      "The parameters of a scenario's `fleet.cost_model` section: a list of "
      "{name, type, default, help, min, max, choices}.");
  m.def(
      "section_params", [](const std::string& name) { return spec_to_py(section_spec(name)); },
      py::arg("section"),
      "The parameters of a scenario section (server, cost_model, gateway, client, slo, "
      "autoscaling, campaign, model, gpu) or of a fault kind (pod_kill, ...): a list of "
      "{name, type, default, help, min, max, choices}. Raises UnknownNameError for any other "
      "name.");
  m.def(
      "describe", [](const std::string& name) { return describe(name); }, py::arg("name"),
      "The text `fleetsim describe NAME` prints: a scenario section's, a fault kind's, a "
      "workload's or a policy's description and parameters. Raises UnknownNameError for a name "
      "that is none of these.");
}

}  // namespace fleetsim::py_bindings
