#include "sim/fleet/faults.h"

#include <yaml-cpp/yaml.h>

#include "sim/errors.h"
#include "sim/event_loop.h"
#include "sim/fleet/failures.h"
#include "sim/fleet/gateway.h"
#include "sim/fleet/pod.h"
#include "sim/fleet/topology.h"

namespace fleetsim {
namespace {

ParamSpec base(const std::string& target_help) {
  ParamSpec s;
  s.real("at_s", 0, "when the fault happens, seconds from the start", 0);
  if (!target_help.empty()) s.text("target", "pod-0", target_help);
  return s;
}

ParamSpec with_restart(ParamSpec s) {
  return s
      .real("restart_after_s", 0, "the process comes back this long after the fault (0 = never)", 0)
      .real("load_time_s", 60,
            "model-load time of a restarted process before it answers (weights from disk, "
            "CUDA graphs)",
            0);
}

PodHealth mode_of(const Params& p) {
  return p.get_string("mode") == "black_hole" ? PodHealth::kBlackHole : PodHealth::kRefusing;
}

}  // namespace

const std::map<std::string, ParamSpec>& fault_specs() {
  static const std::map<std::string, ParamSpec> kSpecs = {
      {"pod_kill", with_restart(base("pod, GPU or node whose pods die (pod-N, gpu-N, node-N)")
                                    .text("mode", "refused",
                                          "how the dead pod answers: refused (HTTP 502 at once) or "
                                          "black_hole (requests wait for the gateway's timeout)",
                                          {"refused", "black_hole"}))},
      {"node_loss", with_restart(base("the node lost with every pod on it (node-N)"))},
      {"pod_delete",
       base("the pod force-deleted (pod-N)")
           .real("kill_delay_s", 1.0,
                 "the process keeps serving this long before the kubelet kills it; the "
                 "endpoint leaves the picker after the gateway's endpoint_watch_delay_ms",
                 0)
           .real("recreate_after_s", 0,
                 "the Deployment's replacement pod starts this long after the delete (0 = none); "
                 "it joins the picker's endpoints once Ready, after the watch delay",
                 0)
           .real("load_time_s", 60, "model-load time of the replacement pod", 0)},
      {"pod_restart", base("pod, GPU or node whose pods restart")
                          .real("load_time_s", 60, "model-load time before it answers", 0)},
      {"picker_outage",
       base("").real("duration_s", 0, "how long the picker is down (0 = until the end)", 0)},
      {"slow_pod", base("pod, GPU or node whose pods slow down")
                       .real("factor", 2.0, "engine steps take this many times longer", 1e-3, 1e6)
                       .real("duration_s", 0, "how long (0 = until the end)", 0)},
      {"kv_transfer_failure",
       base("pod, GPU or node whose KV-transfer network is down: a prompt's KV read from or by "
            "its pods fails (prefill/decode disaggregation)")
           .real("duration_s", 0, "how long (0 = until the end)", 0)},
      {"kv_transfer_slow",
       base("pod, GPU or node whose KV-transfer network slows down: a prompt's KV read from or "
            "by its pods takes longer (prefill/decode disaggregation)")
           .real("factor", 4.0, "reads take this many times longer (a degraded link)", 1, 1e6)
           .real("duration_s", 0, "how long (0 = until the end)", 0)},
      {"network_delay", base("pod, GPU or node whose link to the gateway is delayed")
                            .real("extra_ms", 50, "extra one-way latency", 0)
                            .real("duration_s", 0, "how long (0 = until the end)", 0)},
  };
  return kSpecs;
}

std::vector<FaultSpec> parse_faults(const YAML::Node& node, const YamlWhere& where) {
  std::vector<FaultSpec> out;
  if (!node.IsDefined() || node.IsNull()) return out;
  if (!node.IsSequence()) throw ScenarioError(where.at(node) + ": expected a list of faults");
  std::vector<std::string> kinds;
  for (const auto& [k, v] : fault_specs()) kinds.push_back(k);
  for (size_t i = 0; i < node.size(); ++i) {
    const YamlWhere w = where.child(std::to_string(i));
    const YAML::Node f = node[i];
    if (!f.IsMap() || !f["kind"].IsDefined()) {
      throw ScenarioError(w.at(f) + ": expected a map with 'kind', one of: " + join(kinds, ", "));
    }
    const std::string kind = f["kind"].Scalar();
    auto it = fault_specs().find(kind);
    if (it == fault_specs().end()) {
      throw ScenarioError(w.child("kind").at(f["kind"]) + ": unknown fault '" + kind +
                          "'; valid faults: " + join(kinds, ", "));
    }
    ParamSpec spec = it->second;
    spec.text("kind", kind, "fault kind");
    out.push_back({kind, spec.resolve(f, w), w.child("target").at(f["target"]),
                   w.child("at_s").at(f["at_s"].IsDefined() ? f["at_s"] : f)});
  }
  return out;
}

void schedule_faults(const std::vector<FaultSpec>& faults, EventLoop& loop,
                     std::vector<std::unique_ptr<Pod>>& pods, Gateway& gateway,
                     const Topology& topology, FailureTracker& tracker) {
  for (size_t n = 0; n < faults.size(); ++n) {
    const FaultSpec& f = faults[n];
    const Params& p = f.params;
    const TimeNs at = sec_to_ns(p.get_double("at_s"));
    const std::string target = f.kind == "picker_outage" ? "picker" : p.get_string("target");
    std::vector<int> victims;
    if (f.kind != "picker_outage") {
      try {
        victims = topology.pods_under(target);
      } catch (const ScenarioError& e) {
        throw ScenarioError(f.target_where + ": " + e.what());
      }
    }
    const int id = tracker.add_fault(f.kind, target, at, victims);
    auto restart_later = [&, victims, id](TimeNs after, TimeNs load) {
      if (after <= 0) return;
      loop.schedule_background_at(at + after, [&, victims, id, load] {
        tracker.restarted(id, loop.now() + load);
        for (int v : victims) pods[static_cast<size_t>(v)]->restart(load);
      });
    };
    if (f.kind == "pod_kill" || f.kind == "node_loss") {
      const PodHealth after = f.kind == "node_loss" ? PodHealth::kBlackHole : mode_of(p);
      loop.schedule_background_at(at, [&, victims, after] {
        for (int v : victims) pods[static_cast<size_t>(v)]->crash(after);
      });
      restart_later(sec_to_ns(p.get_double("restart_after_s")),
                    sec_to_ns(p.get_double("load_time_s")));
    } else if (f.kind == "pod_delete") {
      loop.schedule_background_at(at, [&, victims] {
        for (int v : victims) gateway.remove_endpoint(v);
      });
      loop.schedule_background_at(at + sec_to_ns(p.get_double("kill_delay_s")), [&, victims] {
        for (int v : victims) pods[static_cast<size_t>(v)]->crash(PodHealth::kRefusing);
      });
      const TimeNs recreate = sec_to_ns(p.get_double("recreate_after_s"));
      if (recreate > 0) {
        const TimeNs load = sec_to_ns(p.get_double("load_time_s"));
        loop.schedule_background_at(at + recreate, [&, victims, id, load] {
          tracker.restarted(id, loop.now() + load);
          for (int v : victims) pods[static_cast<size_t>(v)]->restart(load);
        });
        // Ready: the endpoint controller adds it, and the picker's watch sees it after the delay.
        loop.schedule_background_at(at + recreate + load, [&, victims] {
          for (int v : victims) gateway.add_endpoint(v);
        });
      }
    } else if (f.kind == "pod_restart") {
      const TimeNs load = sec_to_ns(p.get_double("load_time_s"));
      loop.schedule_background_at(at, [&, victims, id, load] {
        tracker.restarted(id, loop.now() + load);
        for (int v : victims) pods[static_cast<size_t>(v)]->restart(load);
      });
    } else if (f.kind == "picker_outage") {
      loop.schedule_background_at(at, [&] { gateway.set_picker_up(false); });
      const TimeNs d = sec_to_ns(p.get_double("duration_s"));
      if (d > 0) {
        loop.schedule_background_at(at + d, [&, id] {
          gateway.set_picker_up(true);
          tracker.restarted(id, loop.now());
        });
      }
    } else if (f.kind == "slow_pod" || f.kind == "network_delay" ||
               f.kind == "kv_transfer_failure" || f.kind == "kv_transfer_slow") {
      // The degradations that last a window.
      const std::string kind = f.kind;
      const bool has_factor = kind == "slow_pod" || kind == "kv_transfer_slow";
      const double factor = has_factor ? p.get_double("factor") : 1.0;
      const TimeNs extra = kind == "network_delay" ? ms_to_ns(p.get_double("extra_ms")) : 0;
      auto apply = [&, victims, kind, factor, extra](bool on) {
        for (int v : victims) {
          Pod& pod = *pods[static_cast<size_t>(v)];
          if (kind == "slow_pod") {
            pod.set_slowdown(on ? factor : 1.0);
          } else if (kind == "network_delay") {
            gateway.set_extra_latency(v, on ? extra : 0);
          } else if (kind == "kv_transfer_failure") {
            pod.set_kv_link_down(on);
          } else {
            pod.set_kv_link_slowdown(on ? factor : 1.0);
          }
        }
      };
      loop.schedule_background_at(at, [apply] { apply(true); });
      const TimeNs d = sec_to_ns(p.get_double("duration_s"));
      if (d > 0) {
        loop.schedule_background_at(at + d, [apply, &tracker, &loop, id] {
          apply(false);
          tracker.restarted(id, loop.now());
        });
      }
    } else {
      throw InternalError("fault kind " + f.kind + " has no schedule");
    }
  }
}

}  // namespace fleetsim
