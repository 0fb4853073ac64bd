#include "sim/fleet/topology.h"

#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "sim/errors.h"

namespace fleetsim {
namespace {

using Pods = std::vector<int>;

TEST(Topology, PodsSitOnGpusAndGpusOnNodes) {
  // 6 pods, 2 a GPU, 2 GPUs a node: gpu-0 {0, 1}, gpu-1 {2, 3} on node-0; gpu-2 {4, 5} on node-1.
  const Topology t(6, 2, 2);
  EXPECT_EQ(t.num_gpus(), 3);
  EXPECT_EQ(t.num_nodes(), 2);
  EXPECT_EQ(t.pods_under("node-0"), (Pods{0, 1, 2, 3}));
  EXPECT_EQ(t.pods_under("gpu-2"), (Pods{4, 5}));
  EXPECT_EQ(t.pods_on_gpu_of(3), (Pods{2, 3}));
  EXPECT_EQ(t.node_of_pod(5), 1);
}

TEST(Topology, ATensorParallelPodTakesItsGpusOnItsNodes) {
  // 3 pods of TP 4 on nodes of 8 GPUs: two pods fill node-0, the third half of node-1.
  const Topology t({{3, 1, 4}}, 8);
  EXPECT_EQ(t.num_gpus(), 12);
  EXPECT_EQ(t.num_nodes(), 2);
  EXPECT_EQ(t.pods_under("node-0"), (Pods{0, 1}));
  EXPECT_EQ(t.pods_under("node-1"), (Pods{2}));
  EXPECT_EQ(t.pods_under("gpu-5"), (Pods{1}));  // any of its GPUs
  EXPECT_EQ(t.gpu_of_pod(2), 8);
}

TEST(Topology, APodAcrossNodesIsLostWithEitherNode) {
  // TP 4 on nodes of 2 GPUs: each pod spans two nodes.
  const Topology t({{2, 1, 4}}, 2);
  EXPECT_EQ(t.num_nodes(), 4);
  EXPECT_EQ(t.pods_under("node-0"), (Pods{0}));
  EXPECT_EQ(t.pods_under("node-1"), (Pods{0}));
  EXPECT_EQ(t.pods_under("node-3"), (Pods{1}));
}

TEST(Topology, CoLocatedTensorParallelPodsShareTheirGpus) {
  // 4 pods of TP 2, 2 a GPU: pods 0 and 1 share gpu-0 and gpu-1, pods 2 and 3 gpu-2 and gpu-3.
  const Topology t({{4, 2, 2}}, 8);
  EXPECT_EQ(t.num_gpus(), 4);
  EXPECT_EQ(t.pods_under("gpu-1"), (Pods{0, 1}));
  EXPECT_EQ(t.pods_on_gpu_of(3), (Pods{2, 3}));
}

TEST(Topology, PoolsStartOnGpusAndNodesOfTheirOwn) {
  const Topology t({{3, 1, 1}, {1, 1, 2}}, 4);
  EXPECT_EQ(t.num_gpus(), 5);
  EXPECT_EQ(t.num_nodes(), 2);
  EXPECT_EQ(t.pods_under("node-1"), (Pods{3}));
}

TEST(Topology, AnUnknownComponentListsTheValidOnes) {
  const Topology t({{2, 1, 2}}, 8);
  try {
    t.pods_under("gpu-9");
    ADD_FAILURE() << "accepted";
  } catch (const ScenarioError& e) {
    EXPECT_EQ(std::string(e.what()),
              "unknown component 'gpu-9'; valid: node-0..node-0, gpu-0..gpu-3, pod-0..pod-1");
  }
}

}  // namespace
}  // namespace fleetsim
