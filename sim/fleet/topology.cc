#include "sim/fleet/topology.h"

#include <algorithm>
#include <boost/graph/breadth_first_search.hpp>

#include "sim/errors.h"

namespace fleetsim {

Topology::Topology(int pods, int pods_per_gpu, int gpus_per_node)
    : Topology(std::vector<PoolLayout>{{pods, pods_per_gpu}}, gpus_per_node) {}

Topology::Topology(const std::vector<PoolLayout>& pools, int gpus_per_node) {
  if (pools.empty() || gpus_per_node < 1) {
    throw ScenarioError("topology: pods, pods_per_gpu and gpus_per_node must be >= 1");
  }
  for (const auto& pool : pools) {
    if (pool.pods < 1 || pool.pods_per_gpu < 1 || pool.gpus_per_pod < 1) {
      throw ScenarioError("topology: pods, pods_per_gpu and gpus_per_node must be >= 1");
    }
    const int groups = (pool.pods + pool.pods_per_gpu - 1) / pool.pods_per_gpu;
    const int gpus = groups * pool.gpus_per_pod;
    for (int p = 0; p < pool.pods; ++p) {
      gpu_of_pod_.push_back(num_gpus_ + p / pool.pods_per_gpu * pool.gpus_per_pod);
      gpus_of_pod_.push_back(pool.gpus_per_pod);
    }
    for (int g = 0; g < gpus; ++g) node_of_gpu_.push_back(num_nodes_ + g / gpus_per_node);
    num_pods_ += pool.pods;
    num_gpus_ += gpus;
    num_nodes_ += (gpus + gpus_per_node - 1) / gpus_per_node;
  }
  const Vertex gateway = boost::add_vertex({Component::kGateway, "gateway", -1}, graph_);
  const Vertex picker = boost::add_vertex({Component::kPicker, "picker", -1}, graph_);
  boost::add_edge(gateway, picker, graph_);
  std::vector<Vertex> nodes, gpus;
  for (int n = 0; n < num_nodes_; ++n) {
    nodes.push_back(boost::add_vertex({Component::kNode, node_name(n), n}, graph_));
    boost::add_edge(gateway, nodes.back(), graph_);
  }
  for (int g = 0; g < num_gpus_; ++g) {
    gpus.push_back(boost::add_vertex({Component::kGpu, gpu_name(g), g}, graph_));
    boost::add_edge(nodes[static_cast<size_t>(node_of_gpu_[static_cast<size_t>(g)])], gpus.back(),
                    graph_);
  }
  for (int p = 0; p < num_pods_; ++p) {
    const Vertex v = boost::add_vertex({Component::kPod, pod_name(p), p}, graph_);
    for (int g = 0; g < gpus_of_pod_[static_cast<size_t>(p)]; ++g) {
      boost::add_edge(gpus[static_cast<size_t>(gpu_of_pod(p) + g)], v, graph_);
    }
  }
}

Topology::Vertex Topology::find(const std::string& name) const {
  for (auto [it, end] = boost::vertices(graph_); it != end; ++it) {
    if (graph_[*it].name == name) return *it;
  }
  throw ScenarioError("unknown component '" + name + "'; valid: node-0.." +
                      node_name(num_nodes_ - 1) + ", gpu-0.." + gpu_name(num_gpus_ - 1) +
                      ", pod-0.." + pod_name(num_pods_ - 1));
}

std::vector<int> Topology::pods_under(const std::string& component) const {
  std::vector<int> pods;
  // Record every pod the breadth-first walk from the component discovers.
  struct Collect : boost::default_bfs_visitor {
    std::vector<int>* out;
    void discover_vertex(Vertex v, const Graph& g) const {
      if (g[v].kind == Component::kPod) out->push_back(g[v].index);
    }
  } visitor;
  visitor.out = &pods;
  boost::breadth_first_search(graph_, find(component), boost::visitor(visitor));
  std::sort(pods.begin(), pods.end());
  return pods;
}

std::vector<int> Topology::pods_on_gpu_of(int pod) const {
  return pods_under(gpu_name(gpu_of_pod(pod)));
}

}  // namespace fleetsim
