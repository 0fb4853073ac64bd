// A Hugging Face config.json read as the fields of a model definition (fleet.models), so a user
// can point `hf_config:` at the file that ships with their checkpoint instead of copying shapes.
#pragma once

#include <string>

namespace YAML {
class Node;
}

namespace fleetsim {

// The model_def_spec() fields the file gives, as a YAML map: the shapes, the experts (Qwen's
// num_experts, Mixtral's num_local_experts), tie_word_embeddings and, from quantization_config,
// weight_dtype. A multimodal config's text_config is the decoder's. Throws ScenarioError, naming
// the file and the field, for a file that cannot be read or parsed and for what the pod model
// does not model: multi-head latent attention, sliding-window or other non-full attention
// layers, state-space or linear-attention layers, shared experts, dense layers among MoE ones,
// and (unless `weight_dtype_given`) a quantization it does not know.
YAML::Node hf_config_fields(const std::string& path, bool weight_dtype_given);

}  // namespace fleetsim
