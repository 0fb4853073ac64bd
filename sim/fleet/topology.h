// The fleet's topology as a graph (Boost.Graph): gateway -> picker, gateway -> nodes -> GPUs ->
// pods. Failure domains are walks in this graph: losing a node loses every pod reachable from it.
#pragma once

// GCC 12 with sanitizers reports a false -Wuninitialized inside Boost.Graph's named-graph
// lookup (an empty boost::optional); the warning is in the library, not in our use of it.
#pragma GCC diagnostic push
#pragma GCC diagnostic ignored "-Wuninitialized"
#pragma GCC diagnostic ignored "-Wmaybe-uninitialized"
#include <boost/graph/adjacency_list.hpp>
#pragma GCC diagnostic pop
#include <string>
#include <vector>

namespace fleetsim {

enum class Component { kGateway, kPicker, kNode, kGpu, kPod };

struct TopologyVertex {
  Component kind = Component::kPod;
  std::string name;
  int index = -1;  // pod, GPU or node index; -1 for the gateway and the picker
};

// One pool's layout: its pods, how many of them share a GPU, and how many GPUs each spans
// (tensor parallelism). `pods_per_gpu` pods of `gpus_per_pod` GPUs each share those GPUs.
struct PoolLayout {
  int pods = 1;
  int pods_per_gpu = 1;
  int gpus_per_pod = 1;
};

class Topology {
 public:
  // `pods` pods, `pods_per_gpu` of them sharing each GPU, `gpus_per_node` GPUs on each node.
  Topology(int pods, int pods_per_gpu, int gpus_per_node);
  // Several pools, numbered pool by pool: each pool starts on a GPU and a node of its own
  // (pools differ in GPU type, so they never share one), `gpus_per_node` GPUs on each node. A
  // pod of several GPUs hangs off each of them, so losing any of its GPUs' nodes loses it.
  Topology(const std::vector<PoolLayout>& pools, int gpus_per_node);

  int num_pods() const { return num_pods_; }
  int num_gpus() const { return num_gpus_; }
  int num_nodes() const { return num_nodes_; }
  // The first of a pod's GPUs.
  int gpu_of_pod(int pod) const { return gpu_of_pod_.at(static_cast<size_t>(pod)); }
  int node_of_pod(int pod) const { return node_of_gpu_.at(static_cast<size_t>(gpu_of_pod(pod))); }
  static std::string pod_name(int i) { return "pod-" + std::to_string(i); }
  static std::string node_name(int i) { return "node-" + std::to_string(i); }
  static std::string gpu_name(int i) { return "gpu-" + std::to_string(i); }

  // Every pod reachable from the named component (a node, a GPU or a pod), in index order.
  // Throws ScenarioError naming the valid components when the name is unknown.
  std::vector<int> pods_under(const std::string& component) const;
  // Pods that share a GPU with `pod` (itself included).
  std::vector<int> pods_on_gpu_of(int pod) const;

 private:
  using Graph = boost::adjacency_list<boost::vecS, boost::vecS, boost::directedS, TopologyVertex>;
  using Vertex = Graph::vertex_descriptor;
  Vertex find(const std::string& name) const;

  Graph graph_;
  int num_pods_ = 0, num_gpus_ = 0, num_nodes_ = 0;
  std::vector<int> gpu_of_pod_, gpus_of_pod_, node_of_gpu_;
};

}  // namespace fleetsim
