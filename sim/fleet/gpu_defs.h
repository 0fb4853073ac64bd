// A scenario's own GPUs (`fleet.gpus`): a part the catalog lacks, described by its datasheet
// figures, usable as `fleet.gpu` or a pool's `gpu` like a catalog name.
#pragma once

#include <vector>

#include "models/gpu_catalog.h"
#include "sim/params.h"

namespace YAML {
class Node;
}

namespace fleetsim {

// The fields of one definition, with defaults and help (`fleetsim describe gpu`).
const ParamSpec& gpu_def_spec();

// Parses the list. Errors name the file, line and field: a missing figure, a name the catalog or
// an earlier entry already has.
std::vector<GpuSpec> parse_gpu_defs(const YAML::Node& list, const YamlWhere& where);

}  // namespace fleetsim
