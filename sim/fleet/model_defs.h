// A scenario's own models (`fleet.models`): a model the catalog lacks, described by the fields of
// its Hugging Face config.json, usable as `fleet.model` or a pool's `model` like a catalog name.
#pragma once

#include <vector>

#include "models/llm_catalog.h"
#include "sim/params.h"

namespace YAML {
class Node;
}

namespace fleetsim {

// The fields of one definition, with defaults and help (`fleetsim describe model`).
const ParamSpec& model_def_spec();

// Parses the list. Errors name the file, line and field: a missing shape, a name the catalog or
// an earlier entry already has, expert fields that do not fit together.
std::vector<LlmSpec> parse_model_defs(const YAML::Node& list, const YamlWhere& where);

}  // namespace fleetsim
