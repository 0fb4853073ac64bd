// Area: runs and results. fleetsim.run() runs a scenario with the GIL released and returns a
// Result: the summary with the names of the JSON schema (derived from result_json, so the two
// cannot drift), the exact JSON the CLI prints, and the per-request records as a pandas
// DataFrame built from one numpy array per column.
#include <pybind11/numpy.h>
#include <pybind11/pybind11.h>
#include <pybind11/stl.h>

#include <algorithm>
#include <cmath>
#include <iterator>
#include <limits>
#include <map>
#include <sstream>
#include <vector>

#include "bindings/common.h"
#include "sim/errors.h"
#include "sim/fleet/report.h"
#include "sim/fleet/runner.h"

namespace fleetsim::py_bindings {
namespace {

struct ResultData {
  std::shared_ptr<ScenarioHandle> scenario;
  RunResult run;
  nlohmann::json json;
  py::object requests;  // the DataFrame, built on first use
};
using ResultPtr = std::shared_ptr<ResultData>;

struct ArmHandle {
  ResultPtr data;
  size_t index = 0;
  const ArmResult& arm() const { return data->run.arms[index]; }
  const nlohmann::json& json() const { return data->json["arms"][index]; }
};

// What `timeline` and `timeline_window` of run() ask for, as `fleetsim run --timeline` takes it.
TimelineOptions timeline_options(bool timeline, const py::object& window, std::int64_t max_events) {
  TimelineOptions o;
  o.enabled = timeline;
  if (max_events < 1) throw py::value_error("timeline_max_events must be >= 1");
  o.max_events = max_events;
  if (window.is_none()) return o;
  const auto [from, to] = window.cast<std::pair<double, double>>();
  if (!(from >= 0 && from < to && to <= 1e9)) {
    throw py::value_error(
        "timeline_window: expected (from_s, to_s) with 0 <= from_s < to_s <= 1e9, got (" +
        std::to_string(from) + ", " + std::to_string(to) + ")");
  }
  o.from = sec_to_ns(from);
  o.to = sec_to_ns(to);
  return o;
}

ResultPtr run(const py::object& scenario, int threads, const py::object& overrides, bool timeline,
              const py::object& timeline_window, std::int64_t timeline_max_events) {
  if (threads < 0) throw py::value_error("threads must be >= 0 (0 = one per arm)");
  auto data = std::make_shared<ResultData>();
  data->scenario = load_any(scenario, overrides);
  Scenario s = data->scenario->scenario;
  s.timeline = timeline_options(timeline, timeline_window, timeline_max_events);
  // Python policies take the GIL back for their own calls (init_policies.cc).
  data->run = run_interruptible([&] { return run_scenario(s, threads); });
  data->json = result_json(data->run, s);
  // The hazards the CLI says on stderr, as Python warnings (filterable, testable).
  const py::object warn = py::module_::import("warnings").attr("warn");
  for (const ArmResult& a : data->run.arms) {
    for (const std::string& w : a.warnings)
      warn("arm '" + a.name + "': " + w, py::arg("stacklevel") = 2);
  }
  return data;
}

constexpr double kNaN = std::numeric_limits<double>::quiet_NaN();
double ms_or_nan(TimeNs t) { return t < 0 ? kNaN : ns_to_ms(t); }

template <typename T>
py::array_t<T> column(size_t n) {
  return py::array_t<T>(static_cast<py::ssize_t>(n));
}

// Status name of a record: the outcome, or "unfinished" when the run stopped (horizon) first.
constexpr int kUnfinished = 1000;
int status_code(const RequestRecord& r) {
  return r.done ? static_cast<int>(r.outcome) : kUnfinished;
}
std::string status_name(int code) {
  return code == kUnfinished ? "unfinished" : outcome_name(static_cast<Outcome>(code));
}

// A string field as a categorical column: codes into the sorted distinct values.
template <typename Get>
py::tuple string_column(const RunResult& r, size_t n, Get get) {
  std::map<std::string, std::int16_t> index;
  for (const auto& a : r.arms) {
    for (const auto& q : a.records) {
      if (q.arrival >= 0) index.emplace(get(q), 0);
    }
  }
  py::list categories;
  std::int16_t next = 0;
  for (auto& [value, code] : index) {
    code = next++;
    categories.append(value);
  }
  auto codes = column<std::int16_t>(n);
  auto* p = codes.mutable_data();
  size_t i = 0;
  for (const auto& a : r.arms) {
    for (const auto& q : a.records) {
      if (q.arrival >= 0) p[i++] = index.at(get(q));
    }
  }
  return py::make_tuple(codes, categories);
}

// One numpy array per field of the request records, over every arm (records of ids never used
// are left out, as in requests.csv). Times in ms, NaN where the request never got there.
py::dict request_columns(const RunResult& r) {
  size_t n = 0;
  std::map<int, int> statuses;  // status code -> category index, in enum order
  for (const auto& a : r.arms) {
    for (const auto& q : a.records) {
      if (q.arrival < 0) continue;
      ++n;
      statuses.emplace(status_code(q), 0);
    }
  }
  py::list status_names;
  int next = 0;
  for (auto& [code, idx] : statuses) {
    idx = next++;
    status_names.append(status_name(code));
  }
  auto arm = column<std::int16_t>(n);
  auto id = column<std::int64_t>(n);
  auto conversation = column<std::int64_t>(n);
  auto turn = column<std::int32_t>(n);
  auto pod = column<std::int32_t>(n), prefill_pod = column<std::int32_t>(n);
  auto arrival = column<double>(n), dispatched = column<double>(n);
  auto first_token = column<double>(n), finished = column<double>(n);
  auto ttft = column<double>(n), e2e = column<double>(n), tpot = column<double>(n);
  auto max_itl = column<double>(n);
  auto prompt = column<std::int32_t>(n), cached = column<std::int32_t>(n);
  auto output = column<std::int32_t>(n);
  auto attempts = column<std::int32_t>(n);
  auto measured = column<bool>(n);
  auto status = column<std::int8_t>(n);
  auto* arm_p = arm.mutable_data();
  auto* id_p = id.mutable_data();
  auto* conv_p = conversation.mutable_data();
  auto* turn_p = turn.mutable_data();
  auto* pod_p = pod.mutable_data();
  auto* prefill_pod_p = prefill_pod.mutable_data();
  auto* arr_p = arrival.mutable_data();
  auto* dis_p = dispatched.mutable_data();
  auto* ft_p = first_token.mutable_data();
  auto* fin_p = finished.mutable_data();
  auto* ttft_p = ttft.mutable_data();
  auto* e2e_p = e2e.mutable_data();
  auto* tpot_p = tpot.mutable_data();
  auto* itl_p = max_itl.mutable_data();
  auto* prompt_p = prompt.mutable_data();
  auto* cached_p = cached.mutable_data();
  auto* out_p = output.mutable_data();
  auto* attempts_p = attempts.mutable_data();
  auto* measured_p = measured.mutable_data();
  auto* status_p = status.mutable_data();
  size_t i = 0;
  py::list arm_names;
  for (size_t a = 0; a < r.arms.size(); ++a) {
    arm_names.append(r.arms[a].name);
    for (const auto& q : r.arms[a].records) {
      if (q.arrival < 0) continue;
      arm_p[i] = static_cast<std::int16_t>(a);
      id_p[i] = q.id;
      conv_p[i] = q.conversation;
      turn_p[i] = q.turn;
      pod_p[i] = q.pod;
      prefill_pod_p[i] = q.prefill_pod;
      arr_p[i] = ns_to_ms(q.arrival);
      dis_p[i] = ms_or_nan(q.dispatched);
      ft_p[i] = ms_or_nan(q.first_token);
      fin_p[i] = q.done ? ms_or_nan(q.finished) : kNaN;
      // The same arithmetic as summarize() (sim/fleet/metrics.cc), so percentiles recomputed
      // from these columns equal the summary's.
      const RequestLatencies l = latencies_of(q);
      ttft_p[i] = l.ttft_ms;
      e2e_p[i] = l.e2e_ms;
      tpot_p[i] = l.tpot_ms;
      itl_p[i] = l.max_itl_ms;
      prompt_p[i] = q.prompt_tokens;
      cached_p[i] = q.cached_tokens;
      out_p[i] = q.output_tokens;
      attempts_p[i] = q.attempts;
      measured_p[i] = q.measured;
      status_p[i] = static_cast<std::int8_t>(statuses.at(status_code(q)));
      ++i;
    }
  }
  py::dict d;
  d["arm"] = py::make_tuple(arm, arm_names);  // (codes, categories)
  d["id"] = id;
  d["conversation"] = conversation;
  d["turn"] = turn;
  d["pod"] = pod;
  d["prefill_pod"] = prefill_pod;
  d["arrival_ms"] = arrival;
  d["dispatched_ms"] = dispatched;
  d["first_token_ms"] = first_token;
  d["finished_ms"] = finished;
  d["ttft_ms"] = ttft;
  d["e2e_ms"] = e2e;
  d["tpot_ms"] = tpot;
  d["max_itl_ms"] = max_itl;
  d["prompt_tokens"] = prompt;
  d["cached_tokens"] = cached;
  d["output_tokens"] = output;
  d["attempts"] = attempts;
  d["measured"] = measured;
  d["tier"] = string_column(r, n, [](const RequestRecord& q) { return q.tier; });
  d["slo_class"] = string_column(r, n, [](const RequestRecord& q) { return q.slo_class; });
  d["status"] = py::make_tuple(status, status_names);  // (codes, categories)
  return d;
}

// The DataFrame of every arm's requests, built on first use and kept (not to hand out: callers
// that return it give a copy or a new frame).
const py::object& cached_requests(ResultData& d) {
  if (!d.requests) {
    const py::module_ pd = py::module_::import("pandas");
    py::dict columns;
    for (const auto& [name, value] : request_columns(d.run)) {
      if (py::isinstance<py::tuple>(value)) {
        const auto t = value.cast<py::tuple>();
        columns[name] = pd.attr("Categorical").attr("from_codes")(t[0], t[1]);
      } else {
        columns[name] = value;
      }
    }
    d.requests = pd.attr("DataFrame")(columns);
  }
  return d.requests;
}

// A copy each time: a caller that edits its frame in place must not change what the next caller
// (goodput, plots, another cell of the notebook) reads.
py::object requests_frame(ResultData& d) { return cached_requests(d).attr("copy")(); }

// Every scalar of a JSON object into `row`, nested objects' keys joined with '_' (ttft_ms ->
// ttft_ms_p50); lists (per_pod, faults) are left out.
void flatten_into(py::dict& row, const std::string& prefix, const nlohmann::json& obj) {
  for (const auto& [key, value] : obj.items()) {
    if (value.is_object()) {
      flatten_into(row, prefix + key + "_", value);
    } else if (value.is_primitive()) {
      row[py::str(prefix + key)] = json_to_py(value);
    }
  }
}

// One row per arm: arm, policy and every scalar of the arm's JSON summary, with the percentile
// objects flattened (ttft_ms -> ttft_ms_mean, ttft_ms_p50, ...), then the failures section's
// scalars prefixed failures_ when the scenario has faults or health probes. Names come from
// result_json, so they follow the schema.
py::list summary_rows(const nlohmann::json& result) {
  py::list rows;
  for (const auto& arm : result["arms"]) {
    py::dict row;
    row["arm"] = arm["name"].get<std::string>();
    row["policy"] = arm["policy"].get<std::string>();
    flatten_into(row, "", arm["summary"]);
    if (arm.contains("failures")) flatten_into(row, "failures_", arm["failures"]);
    rows.append(std::move(row));
  }
  return rows;
}

ArmHandle find_arm(const ResultPtr& d, const std::string& name) {
  std::vector<std::string> names;
  for (size_t i = 0; i < d->run.arms.size(); ++i) {
    if (d->run.arms[i].name == name) return {d, i};
    names.push_back(d->run.arms[i].name);
  }
  throw UnknownNameError("arm", name, names);
}

}  // namespace

void init_results(py::module_& m) {
  py::class_<ArmHandle>(m, "Arm", "The results of one arm of a run.")
      .def_property_readonly(
          "name", [](const ArmHandle& a) { return a.arm().name; }, "The arm's name.")
      .def_property_readonly(
          "policy", [](const ArmHandle& a) { return a.arm().policy; }, "The arm's policy.")
      .def_property_readonly(
          "summary", [](const ArmHandle& a) { return json_to_py(a.json()["summary"]); },
          "The arm's summary as a dict, with the names of the JSON schema (docs/scenarios.md).")
      .def_property_readonly(
          "measured",
          [](const ArmHandle& a) -> py::object {
            return a.json().contains("measured") ? json_to_py(a.json()["measured"])
                                                 : py::object(py::none());
          },
          "The scenario's measured figures for this arm ({metric: value}), or None.")
      .def_property_readonly(
          "failures",
          [](const ArmHandle& a) -> py::object {
            return a.json().contains("failures") ? json_to_py(a.json()["failures"])
                                                 : py::object(py::none());
          },
          "The arm's failures section (errors by class, failure window, detection and recovery "
          "of each fault, requests lost, retries), or None when the scenario has no faults or "
          "health probes.")
      .def_property_readonly(
          "warnings", [](const ArmHandle& a) { return a.arm().warnings; },
          "Hazards the figures alone hide (a faulted pod that fails fast drawing traffic), one "
          "sentence each; also raised as Python warnings by run().")
      .def_property_readonly(
          "autoscaling",
          [](const ArmHandle& a) -> py::object {
            const nlohmann::json& summary = a.json()["summary"];
            if (!summary.contains("autoscaling")) return py::none();
            const char* const keys[] = {"t_s",     "metric", "recommended",
                                        "desired", "ready",  "provisioned"};
            py::list pool_column;
            std::vector<py::list> columns(std::size(keys));
            for (const auto& pool : summary["autoscaling"]["pools"]) {
              for (const auto& point : pool["timeline"]) {
                pool_column.append(pool["pool"].get<std::string>());
                for (size_t k = 0; k < std::size(keys); ++k) {
                  columns[k].append(json_to_py(point[keys[k]]));
                }
              }
            }
            py::dict frame;
            frame["pool"] = pool_column;
            for (size_t k = 0; k < std::size(keys); ++k) frame[keys[k]] = columns[k];
            return py::module_::import("pandas").attr("DataFrame")(frame);
          },
          "The HPAs' timelines as a pandas DataFrame, one row per sync of each (pool: the pool "
          "its HPA scales, 'default' without fleet.pools; t_s; metric: the average over the "
          "pool's ready pods; recommended, desired, ready, provisioned pods); empty for a "
          "static arm beside autoscaled ones, None when no arm of the scenario autoscales. "
          "summary['autoscaling'] holds the fleet's totals (pod_hours, mean_pods, peak_pods) "
          "and, under pools, each pool's.")
      .def_property_readonly(
          "events", [](const ArmHandle& a) { return a.arm().events; },
          "Events the arm's simulation ran.")
      .def_property_readonly(
          "requests",
          [](const ArmHandle& a) {
            // .loc with a mask builds a new frame: the cache is not handed out, and not copied
            // twice.
            const py::object& df = cached_requests(*a.data);
            const py::object mask = df.attr("__getitem__")("arm").attr("__eq__")(a.arm().name);
            return df.attr("loc").attr("__getitem__")(mask).attr("reset_index")(py::arg("drop") =
                                                                                    true);
          },
          "This arm's rows of Result.requests.")
      .def("__repr__", [](const ArmHandle& a) {
        return "<fleetsim.Arm '" + a.arm().name + "' (" + a.arm().policy + "), " +
               std::to_string(a.arm().summary.requests) + " requests>";
      });
  refuse_bare_new(m.attr("Arm"), "Result.arms and Result.arm(name) give them.");

  py::class_<ResultData, ResultPtr>(m, "Result", "The results of fleetsim.run().")
      .def_property_readonly(
          "scenario", [](const ResultData& d) { return d.scenario; }, "The Scenario that ran.")
      .def_property_readonly(
          "json", [](const ResultData& d) { return d.json.dump(2) + "\n"; },
          "The result as the exact JSON text `fleetsim run --format json` prints.")
      .def_property_readonly(
          "summary", [](const ResultData& d) { return json_to_py(d.json); },
          "The whole result as a dict with the names of the JSON schema: scenario, seed, fleet, "
          "arms[{name, policy, summary, measured}] (docs/scenarios.md).")
      .def_property_readonly(
          "arms",
          [](const ResultPtr& d) {
            std::vector<ArmHandle> out;
            for (size_t i = 0; i < d->run.arms.size(); ++i) out.push_back({d, i});
            return out;
          },
          "The arms, in the scenario's order, as a list of Arm.")
      .def(
          "arm", [](const ResultPtr& d, const std::string& name) { return find_arm(d, name); },
          py::arg("name"), "The arm named `name`; UnknownNameError lists the valid names.")
      .def_property_readonly(
          "requests", [](ResultData& d) { return requests_frame(d); },
          "One row per request of every arm, as a pandas DataFrame built from numpy arrays (a "
          "copy on every access: edit it freely): "
          "arm (categorical), id, conversation, turn, pod (-1: never dispatched), prefill_pod "
          "(P/D: the pod that computed the prompt, -1: none), arrival_ms, "
          "dispatched_ms, first_token_ms, finished_ms (NaN where the request never got "
          "there), ttft_ms, e2e_ms, tpot_ms (for completed requests, computed as the summary "
          "computes them; NaN otherwise), prompt_tokens, cached_tokens, output_tokens, status "
          "(categorical: 'ok' or the error class a client sees; 'unfinished' when the horizon "
          "cut the run), attempts (1 + retries), measured (False for warm-up requests, which "
          "summaries leave out), tier and slo_class (categorical; '' when the workload sets "
          "none).")
      .def(
          "request_columns", [](const ResultData& d) { return request_columns(d.run); },
          "The columns behind Result.requests as a dict of numpy arrays, without pandas "
          "(categorical columns as (codes, categories) tuples).")
      .def(
          "summary_rows", [](const ResultData& d) { return summary_rows(d.json); },
          "One dict per arm: arm, policy and every scalar of the summary, percentiles flattened "
          "(ttft_ms_p50, ...), then the failures section's scalars as failures_* when there is "
          "one. "
          "The rows fleetsim.sweep() collects.")
      .def(
          "timeline_json",
          [](const ResultData& d) {
            if (std::none_of(d.run.arms.begin(), d.run.arms.end(),
                             [](const ArmResult& a) { return a.timeline != nullptr; })) {
              throw py::value_error("this run recorded no timeline: run(..., timeline=True)");
            }
            std::ostringstream os;
            write_timeline_json(os, d.run);
            return os.str();
          },
          "The trace `fleetsim run --timeline` writes (Chrome/Perfetto trace-event JSON), of a "
          "run(..., timeline=True); write it to a file and open it in ui.perfetto.dev.")
      .def(
          "table",
          [](const ResultData& d) {
            std::ostringstream os;
            write_table(os, d.run, d.scenario->scenario);
            return os.str();
          },
          "The table `fleetsim run` prints, simulated beside measured.")
      .def("__repr__", [](const ResultData& d) {
        return "<fleetsim.Result '" + d.run.scenario + "' seed " + std::to_string(d.run.seed) +
               ", " + std::to_string(d.run.arms.size()) + " arms>";
      });

  refuse_bare_new(m.attr("Result"), "fleetsim.run() returns one.");

  m.def("run", &run, py::arg("scenario"), py::arg("threads") = 0, py::arg("overrides") = py::none(),
        py::arg("timeline") = false, py::arg("timeline_window") = py::none(),
        py::arg("timeline_max_events") = TimelineOptions{}.max_events,
        "Runs a scenario and returns its Result.\n\n"
        "scenario: a Scenario, or anything fleetsim.load() accepts (path, YAML text, dict).\n"
        "threads: threads for the arms (0 = one per arm); results do not depend on it.\n"
        "overrides: {dotted.path: value} applied first (as `--set`).\n"
        "timeline: also record the Perfetto trace of `fleetsim run --timeline` "
        "(Result.timeline_json(), docs/timeline.md); timeline_window: (from_s, to_s) of "
        "simulated time it keeps; timeline_max_events: where it stops recording.\n"
        "The GIL is released while the simulation runs; Python routing policies take it back "
        "for their own calls.");
}

}  // namespace fleetsim::py_bindings
