// fleetsim: the command-line front end. Tables for people, JSON on stdout for tools, logs on
// stderr. Every user error exits non-zero with a message naming what to fix.
#include <fmt/format.h>
#include <spdlog/sinks/stdout_color_sinks.h>
#include <spdlog/spdlog.h>
#include <CLI/CLI.hpp>

#include <algorithm>
#include <cctype>
#include <cmath>
#include <csignal>
#include <filesystem>
#include <iostream>
#include <nlohmann/json.hpp>
#include <sstream>

#include <unistd.h>

#include "cli/campaign_cmd.h"
#include "cli/completion.h"
#include "cli/interrupt.h"
#include "cli/option_checks.h"
#include "cli/plan_cmd.h"
#include "cli/progress.h"
#include "models/calibration.h"
#include "models/cost_model.h"
#include "models/engine.h"
#include "models/gpu_catalog.h"
#include "models/llm_catalog.h"
#include "policies/policy.h"
#include "sim/errors.h"
#include "sim/fleet/arm_metrics.h"
#include "sim/fleet/campaign/campaign.h"
#include "sim/fleet/describe.h"
#include "sim/fleet/figure_fit.h"
#include "sim/fleet/report.h"
#include "sim/fleet/runner.h"
#include "sim/fleet/scenario.h"
#include "sim/fleet/sweep.h"
#include "sim/fleet/validate.h"
#include "sim/fleet/workload.h"
#include "sim/output_files.h"
#include "sim/progress.h"
#include "sim/stop.h"

#ifndef FLEETSIM_VERSION
#define FLEETSIM_VERSION "0.0.0"
#endif

namespace fs = std::filesystem;
using namespace fleetsim;

namespace {

struct RunOptions {
  std::string scenario;
  std::string format = "table";
  std::string out_dir;
  std::vector<std::string> sets;
  std::string seed;  // empty: the scenario's
  int threads = 0;
  std::string timeline;  // empty: none
  std::string timeline_window = ":";
  std::int64_t timeline_max_events = TimelineOptions{}.max_events;
};

int cmd_run(const RunOptions& o) {
  std::vector<std::string> sets = o.sets;
  if (!o.seed.empty()) sets.push_back("seed=" + o.seed);
  Scenario s = load_scenario(o.scenario, sets);
  if (!o.timeline.empty()) {
    const auto [from, to] = cli::window_bounds(o.timeline_window);
    s.timeline.enabled = true;
    s.timeline.from = sec_to_ns(from);
    s.timeline.to = std::isinf(to) ? INT64_MAX : sec_to_ns(to);
    s.timeline.max_events = o.timeline_max_events;
  }
  spdlog::info("running {} ({} arms, {} x {} with {})", s.name, s.arms.size(), s.fleet.pods,
               s.fleet.gpu, s.fleet.model);
  const RunResult r = run_scenario(s, o.threads);
  for (const auto& a : r.arms) {
    spdlog::info("arm {}: {} requests, {} events", a.name, a.summary.requests, a.events);
  }
  const std::string json = result_json(r, s).dump(2) + "\n";
  if (o.format == "json") {
    std::cout << json;
  } else if (o.format == "csv") {
    write_summary_csv(std::cout, r);
  } else {
    write_table(std::cout, r, s);
  }
  if (!o.out_dir.empty()) {
    std::ostringstream summary, requests;
    write_summary_csv(summary, r);
    write_requests_csv(requests, r);
    OutputFiles files;  // the previous set stays until the whole new one is written
    files.stage(fs::path(o.out_dir) / "result.json", json);
    files.stage(fs::path(o.out_dir) / "summary.csv", summary.str());
    files.stage(fs::path(o.out_dir) / "requests.csv", requests.str());
    files.commit();
    spdlog::info("wrote result.json, summary.csv, requests.csv to {}", o.out_dir);
  }
  if (!o.timeline.empty()) {
    std::ostringstream trace;
    write_timeline_json(trace, r);
    write_output_file(o.timeline, trace.str());
    spdlog::info("wrote the timeline to {} (open it in ui.perfetto.dev)", o.timeline);
  }
  return 0;
}

struct SweepOptions {
  std::string scenario;
  std::string format = "table";
  std::string out_dir;
  std::vector<std::string> vary;
  std::vector<std::string> sets;
  std::string seed;  // empty: the scenario's
  int threads = 0;
};

int cmd_sweep(const SweepOptions& o) {
  std::vector<SweepAxis> axes;
  for (const auto& v : o.vary) axes.push_back(parse_vary(v));
  std::vector<std::string> sets = o.sets;
  if (!o.seed.empty()) sets.push_back("seed=" + o.seed);
  const SweepResult r = run_sweep(o.scenario, sets, axes, o.threads, /*keep_infeasible=*/true);
  const std::string json = sweep_json(r).dump(2) + "\n";
  if (o.format == "json") {
    std::cout << json;
  } else if (o.format == "csv") {
    write_sweep_csv(std::cout, r);
  } else {
    write_sweep_table(std::cout, r);
  }
  if (!o.out_dir.empty()) {
    std::ostringstream csv;
    write_sweep_csv(csv, r);
    OutputFiles files;
    files.stage(fs::path(o.out_dir) / "sweep.json", json);
    files.stage(fs::path(o.out_dir) / "sweep.csv", csv.str());
    files.commit();
  }
  return 0;
}

struct ValidateOptions {
  std::vector<std::string> files;
  std::string format = "table";
  std::string out_dir;
  int threads = 0;
  int seeds = 1;
  std::vector<std::string> sets;
};

int cmd_validate(ValidateOptions o) {
  if (o.files.empty()) {
    o.files = default_validation_files();
    if (o.files.empty()) throw Error("no validation files given and none in ./validation");
  }
  const ValidationReport r = validate(o.files, o.threads, o.seeds, o.sets);
  std::string command = "fleetsim validate";
  if (o.seeds > 1) command += " --seeds " + std::to_string(o.seeds);
  for (const auto& s : o.sets) command += " --set '" + s + "'";
  for (const auto& f : o.files) command += " " + f;
  if (o.format == "json") {
    std::cout << validation_json(r).dump(2) << "\n";
  } else if (o.format == "markdown") {
    write_validation_markdown(std::cout, r, command);
  } else {
    write_validation_table(std::cout, r);
  }
  if (!o.out_dir.empty()) {
    std::ostringstream md;
    write_validation_markdown(md, r, command);
    OutputFiles files;
    files.stage(fs::path(o.out_dir) / "validation.json", validation_json(r).dump(2) + "\n");
    files.stage(fs::path(o.out_dir) / "fidelity.md", md.str());
    files.commit();
  }
  return r.all_ok() ? 0 : 1;
}

struct CalibrateOptions {
  std::string measurements;
  std::string form;
  std::string gpu;
  std::string model;
  int tp = 1;
  int kv_dtype_bytes = 2;
  double allreduce_bandwidth_gbs = 0;
  double dequant_gemm_factor = kDefaultDequantGemmFactor;
  double moe_gemm_factor = kDefaultMoeGemmFactor;
  double moe_routing_us = kDefaultMoeRoutingUs;
  bool expert_parallel = false;
  double unoverlapped_fraction = kDefaultUnoverlappedFraction;
  double kernel_floor_us = kDefaultKernelFloorUs;
  double elementwise_efficiency = kDefaultElementwiseEfficiency;
  std::string allreduce_path = "p2p";
  std::vector<std::string> fix;
  std::string out;
  std::string format = "table";
  // --against: fit to measured figures by simulating them (sim/fleet/figure_fit.h).
  std::vector<std::string> against;
  std::vector<std::string> fit;
  std::vector<std::string> sets;
  int seeds = 1;
  int threads = 0;
  int max_evaluations = 100;
  // Options given that belong to the other mode, by name, to refuse them.
  std::vector<std::string> csv_only_given;
  std::vector<std::string> against_only_given;
};

// Writes the calibration file when asked, and prints what --format says: the JSON, the file, or
// the table (`table` ends where the file's note begins) and where the file went.
int print_calibration(const CalibrateOptions& o, const nlohmann::json& json,
                      const std::string& yaml, const std::string& table) {
  if (!o.out.empty()) write_output_file(o.out, yaml);
  if (o.format == "json") {
    std::cout << json.dump(2) << "\n";
  } else if (o.format == "yaml") {
    std::cout << yaml;
  } else {
    std::cout << table
              << (o.out.empty() ? "calibration file not written: pass --out FILE (or --format yaml)"
                                : "wrote " + o.out +
                                      "; reference it from a scenario as "
                                      "fleet.cost_model.calibration")
              << "\n";
  }
  return 0;
}

int cmd_calibrate_against(const CalibrateOptions& o) {
  if (!o.measurements.empty()) {
    throw Error("calibrate: give a CSV of timings or --against FILE of measured figures, not both");
  }
  if (!o.csv_only_given.empty()) {
    throw Error(o.csv_only_given.front() +
                " applies to a CSV of timings; with --against the checks' scenarios say the GPU, "
                "model and server, and --fit names the constants to fit");
  }
  FigureFitOptions f;
  f.files = o.against;
  f.fit = o.fit;
  f.sets = o.sets;
  f.seeds = o.seeds;
  f.threads = o.threads;
  f.max_evaluations = o.max_evaluations;
  const FigureFitResult r = fit_to_figures(f);
  return print_calibration(o, figure_fit_json(r), figure_fit_yaml(r), figure_fit_table(r));
}

int cmd_calibrate(const CalibrateOptions& o) {
  if (!o.against.empty()) return cmd_calibrate_against(o);
  if (o.measurements.empty()) {
    throw Error(
        "calibrate: give a CSV of timings (docs/calibration.md) or --against FILE of "
        "measured figures");
  }
  if (!o.against_only_given.empty()) {
    throw Error(o.against_only_given.front() + " applies to --against FILE of measured figures");
  }
  if (o.form.empty()) throw Error("calibrate: a CSV of timings needs --form roofline or fitted");
  const Measurements m = read_measurements(o.measurements);
  if (!m.ignored_columns.empty()) {
    spdlog::info("{}: ignored columns {}", o.measurements, join(m.ignored_columns, ", "));
  }
  CalibrationOptions c;
  c.form = o.form;
  c.target = {o.gpu,
              o.model,
              o.tp,
              o.kv_dtype_bytes,
              o.allreduce_bandwidth_gbs,
              o.dequant_gemm_factor,
              o.unoverlapped_fraction,
              o.kernel_floor_us,
              o.elementwise_efficiency,
              o.allreduce_path,
              o.moe_gemm_factor,
              o.moe_routing_us,
              o.expert_parallel};
  for (const auto& f : o.fix) {
    const auto eq = f.find('=');
    double v = 0;
    std::istringstream value(eq == std::string::npos ? "" : f.substr(eq + 1));
    if (eq == std::string::npos || eq == 0 || !(value >> v) || !value.eof()) {
      throw Error("--fix " + f + ": expected NAME=VALUE, e.g. decode_c_ms_per_seq=0.02");
    }
    if (!c.fixed.emplace(f.substr(0, eq), v).second) {
      throw Error("--fix " + f.substr(0, eq) + ": given twice; fix each parameter once");
    }
  }
  const CalibrationResult r = calibrate(m.steps, c, o.measurements);
  return print_calibration(o, calibration_json(r), calibration_yaml(r),
                           calibration_table(r) + "\n");
}

int cmd_list(const std::string& what) {
  if (what.empty()) {
    std::cerr << "error: say what to list: policies, workloads, gpus, models or metrics\n";
    return 2;
  }
  if (what == "policies") {
    for (const auto& [name, e] : PolicyRegistry::instance().entries()) {
      std::cout << std::left << std::setw(20) << name << e.description << "\n";
    }
  } else if (what == "workloads") {
    for (const auto& [name, e] : WorkloadRegistry::instance().entries()) {
      std::cout << std::left << std::setw(20) << name << e.description << "\n";
    }
  } else if (what == "gpus") {
    for (const auto& g : gpu_catalog()) {
      std::cout << std::left << std::setw(16) << g.name << std::right << std::setw(7)
                << g.memory_gib << " GiB " << std::setw(7) << g.memory_bandwidth_gbs << " GB/s "
                << std::setw(7) << g.bf16_tflops << " BF16 TFLOP/s " << std::setw(7) << g.fp8_tflops
                << " FP8 TFLOP/s " << std::setw(7) << g.fp4_tflops << " FP4 TFLOP/s  sm_"
                << std::lround(g.compute_capability * 10)
                << (g.mig_slices > 0 ? "  MIG " + std::to_string(g.mig_slices) + " slices" : "")
                << (g.nvlink_gpus > 0 ? "  NVLink x" + std::to_string(g.nvlink_gpus) : "  PCIe")
                << (g.bandwidth_efficiency > 0
                        ? "  weights stream at " + fmt::format("{:.2f}", g.bandwidth_efficiency) +
                              " of peak"
                        : "")
                << "\n";
    }
  } else if (what == "metrics") {
    for (const auto& m : arm_metrics()) {
      std::cout << std::left << std::setw(32) << m.name << m.help << "\n";
    }
  } else if (what == "models") {
    std::size_t width = 0;  // the longest name and two spaces, so no name runs into its figures
    for (const auto& name : model_names()) width = std::max(width, name.size() + 2);
    for (const auto& name : model_names()) {
      const LlmSpec& m = find_model(name);
      std::ostringstream sizes;  // what a capacity planner asks first: weight, and per token
      sizes << std::fixed << std::setprecision(1) << m.weight_bytes_total() / (1 << 30) << " GiB "
            << weight_dtype_name(m.weight_dtype) << (m.quantized_experts_only ? " experts" : "")
            << ", " << m.activated_params() / 1e9 << "B active  ";
      std::cout << std::left << std::setw(static_cast<int>(width)) << name << std::right
                << std::setw(7) << m.params_b << "B params  " << std::left << std::setw(38)
                << sizes.str() << std::right << std::setw(3) << m.layers << " layers  "
                << (m.is_mla() ? "latent attention" : std::to_string(m.num_kv_heads) + " KV heads")
                << "  " << m.kv_bytes_per_token(2, 1) << " KV bytes/token (bf16)"
                << (m.sliding_window > 0
                        ? ", " + std::to_string(m.sliding_layers) + " layers within " +
                              std::to_string(m.sliding_window) + " tokens"
                        : "")
                << (m.max_position_embeddings > 0
                        ? "  context " + std::to_string(m.max_position_embeddings) + " tokens"
                        : "")
                << "\n";
    }
  }
  return 0;
}

int cmd_describe(const std::string& name) {
  if (name.empty()) {
    std::cerr << "error: say what to describe; valid names: " << join(describable_names(), ", ")
              << "\n";
    return 2;
  }
  std::cout << describe(name);
  return 0;
}

}  // namespace

int main(int argc, char** argv) {
  auto logger = spdlog::stderr_color_mt("fleetsim");
  spdlog::set_default_logger(logger);
  spdlog::set_pattern("[%l] %v");

  CLI::App app{"fleetsim: a discrete-event simulator of LLM inference fleets"};
  app.set_version_flag("--version", std::string("fleetsim ") + FLEETSIM_VERSION);
  app.require_subcommand(1);
  app.option_defaults()->always_capture_default();  // --help shows every default
  std::string log_level = "warn";
  app.add_option("--log-level", log_level, "log level on stderr")
      ->check(CLI::IsMember({"trace", "debug", "info", "warn", "error", "off"}));
  std::string progress = "auto";
  app.add_option("--progress", progress,
                 "how many of a batch's simulations (sweep points, replicates, arms) have "
                 "finished, on stderr: auto = when stderr is a terminal, always, never")
      ->check(CLI::IsMember({"auto", "always", "never"}));

  RunOptions run;
  CLI::App* run_cmd = app.add_subcommand("run", "run a scenario and print its results");
  run_cmd->add_option("scenario", run.scenario, "scenario YAML file")->required();
  run_cmd->add_option("--format", run.format, "output format")
      ->check(CLI::IsMember({"table", "json", "csv"}));
  run_cmd->add_option("--out", run.out_dir,
                      "also write result.json, summary.csv, requests.csv here");
  // Checked as text: CLI11 would saturate an out-of-range integer instead of refusing it.
  const CLI::Validator seed_check(
      [](const std::string& text) -> std::string {
        const bool digits =
            !text.empty() && text.size() <= 20 && std::all_of(text.begin(), text.end(), ::isdigit);
        if (digits && (text.size() < 20 || text <= "18446744073709551615")) return "";
        return "expected an integer in [0, 18446744073709551615], got '" + text + "'";
      },
      "SEED");
  run_cmd->add_option("--seed", run.seed, "override the scenario's seed (0 to 2^64 - 1)")
      ->check(seed_check);
  run_cmd->add_option("--set", run.sets,
                      "override a field by dotted path: PATH=VALUE (repeatable)");
  run_cmd->add_option("--threads", run.threads, "threads for arms (0 = one per arm)")
      ->check(cli::threads_check());
  run_cmd->add_option("--timeline", run.timeline,
                      "also write a trace of every pod's engine steps and every request's life "
                      "to this file (Chrome/Perfetto trace-event JSON)");
  run_cmd
      ->add_option("--timeline-window", run.timeline_window,
                   "the part of the run the timeline keeps, in simulated seconds FROM:TO")
      ->check(cli::window_check());
  run_cmd
      ->add_option("--timeline-max-events", run.timeline_max_events,
                   "trace events the timeline keeps at most; recording stops there, with a "
                   "warning")
      ->check(cli::integer_in(1, 100'000'000));

  SweepOptions sweep;
  CLI::App* sweep_cmd =
      app.add_subcommand("sweep", "run every point of a grid of overrides (in parallel threads)");
  sweep_cmd->add_option("scenario", sweep.scenario, "scenario YAML file")->required();
  sweep_cmd->add_option("--vary", sweep.vary,
                        "PATH=V1,V2,... or PATH=[V1, V2] (repeatable; default: the scenario's "
                        "sweep: section)");
  sweep_cmd->add_option("--set", sweep.sets, "override a field for every point: PATH=VALUE");
  sweep_cmd->add_option("--seed", sweep.seed, "override the scenario's seed for every point")
      ->check(seed_check);
  sweep_cmd->add_option("--format", sweep.format, "output format")
      ->check(CLI::IsMember({"table", "json", "csv"}));
  sweep_cmd->add_option("--out", sweep.out_dir, "also write sweep.json and sweep.csv here");
  sweep_cmd
      ->add_option("--threads", sweep.threads,
                   "threads (0 = all cores); results do not depend on it")
      ->check(cli::threads_check());

  cli::CampaignCommand campaign;
  cli::add_campaign_command(app, campaign);
  cli::PlanCommand plan;
  cli::add_plan_command(app, plan);

  ValidateOptions val;
  CLI::App* validate_cmd = app.add_subcommand(
      "validate",
      "run the validation scenarios and compare every figure with its measurement; "
      "exit 1 when a tolerance is broken");
  validate_cmd->add_option("files", val.files, "validation files (default: validation/*.yaml)");
  validate_cmd->add_option("--format", val.format, "output format")
      ->check(CLI::IsMember({"table", "json", "markdown"}));
  validate_cmd->add_option("--out", val.out_dir, "also write validation.json and fidelity.md here");
  validate_cmd
      ->add_option("--seeds", val.seeds,
                   "run every check with this many seeds (the scenario's, then the next ones) and "
                   "judge the mean; the report adds how many seeds pass on their own, and the "
                   "range")
      ->check(cli::integer_in(1, 1000));
  validate_cmd->add_option("--threads", val.threads, "threads (0 = all cores)")
      ->check(cli::threads_check());
  validate_cmd->add_option("--set", val.sets,
                           "override PATH=VALUE in every check's scenario, after the check's own "
                           "set: (repeatable), e.g. fleet.cost_model.compute_efficiency=0.6 to see "
                           "what a constant does to every record");

  CalibrateOptions cal;
  CLI::App* calibrate_cmd = app.add_subcommand(
      "calibrate",
      "fit the cost model to your own step or request timings, or to measured figures of a "
      "loaded benchmark by simulating them (--against), and write a calibration file a "
      "scenario references (docs/calibration.md)");
  calibrate_cmd->add_option("measurements", cal.measurements,
                            "CSV of step timings (step_ms,batch) or single-stream request timings "
                            "(prompt_tokens,cached_tokens,ttft_ms,tpot_ms,output_tokens)");
  calibrate_cmd
      ->add_option("--form", cal.form,
                   "with a CSV: roofline (efficiencies and step overhead for --gpu and --model) "
                   "or fitted (the six coefficients of the fitted cost model)")
      ->check(CLI::IsMember({"roofline", "fitted"}));
  calibrate_cmd
      ->add_option("--against", cal.against,
                   "instead of a CSV: files of measured figures in the validation format "
                   "(scenario, set, figures with tolerances; docs/calibration.md), fitted by "
                   "simulating every check (repeatable)")
      ->check(CLI::ExistingFile);
  calibrate_cmd->add_option(
      "--fit", cal.fit,
      "with --against: a roofline constant of fleet.cost_model to fit (repeatable; default "
      "compute_efficiency and bandwidth_efficiency; " +
          join(fittable_cost_model_params(), ", ") + ")");
  calibrate_cmd->add_option("--set", cal.sets,
                            "with --against: PATH=VALUE on every check (repeatable); "
                            "fleet.cost_model.NAME=V of a fitted NAME is where it starts");
  calibrate_cmd
      ->add_option("--seeds", cal.seeds,
                   "with --against: seeds per check, the figures' mean fitted")
      ->check(cli::integer_in(1, 100));
  calibrate_cmd->add_option("--threads", cal.threads, "with --against: threads (0 = all cores)")
      ->check(cli::threads_check());
  calibrate_cmd
      ->add_option("--max-evaluations", cal.max_evaluations,
                   "with --against: simulations of every check the fit may run")
      ->check(cli::integer_in(1, 100000));
  calibrate_cmd->add_option("--gpu", cal.gpu, "GPU the timings come from (fleetsim list gpus)");
  calibrate_cmd->add_option("--model", cal.model,
                            "model the timings come from (fleetsim list models)");
  calibrate_cmd->add_option("--tp", cal.tp, "tensor parallel size of the measured server")
      ->check(cli::integer_in(1, 64));
  calibrate_cmd
      ->add_option("--kv-dtype-bytes", cal.kv_dtype_bytes,
                   "bytes per KV element of the measured server (2 = bf16/fp16, 1 = fp8)")
      ->check(cli::integer_in(1, 4));
  calibrate_cmd
      ->add_option("--allreduce-bandwidth-gbs", cal.allreduce_bandwidth_gbs,
                   "per-direction GPU link bandwidth for tp > 1, GB/s (0 = the GPU catalog's)")
      ->check(cli::number_in(0.0, 1e6));
  calibrate_cmd
      ->add_option("--allreduce-path", cal.allreduce_path,
                   "how the measured server's GPUs reach each other: p2p (NVLink or PCIe peer to "
                   "peer) or host (no peer to peer: NCCL through host memory); written into the "
                   "file as the cost model's allreduce_path")
      ->check(CLI::IsMember(allreduce_path_names()));
  calibrate_cmd->add_flag("--expert-parallel", cal.expert_parallel,
                          "the measured server spread a mixture of experts' experts whole over "
                          "its tensor-parallel GPUs (vLLM --enable-expert-parallel); a scenario "
                          "using the file says server.enable_expert_parallel: true");
  calibrate_cmd
      ->add_option("--dequant-gemm-factor", cal.dequant_gemm_factor,
                   "held, not fitted: speed of GEMMs that dequantize FP8 weights on a GPU without "
                   "FP8 tensor cores, relative to BF16 GEMMs (the cost model's default)")
      ->check(cli::number_in(0.01, 1.0));
  calibrate_cmd
      ->add_option("--moe-gemm-factor", cal.moe_gemm_factor,
                   "held, not fitted: speed of a mixture of experts' fused grouped GEMMs relative "
                   "to dense GEMMs (the cost model's default)")
      ->check(cli::number_in(0.01, 1.0));
  calibrate_cmd
      ->add_option("--moe-routing-us", cal.moe_routing_us,
                   "held, not fitted: fixed time of a mixture-of-experts layer's routing kernels, "
                   "us (the cost model's default)")
      ->check(cli::number_in(0.0, 10000.0));
  calibrate_cmd
      ->add_option("--unoverlapped-fraction", cal.unoverlapped_fraction,
                   "held, not fitted: fraction of min(compute, memory) a step does not overlap "
                   "(the cost model's default)")
      ->check(cli::number_in(0.0, 1.0));
  calibrate_cmd
      ->add_option("--kernel-floor-us", cal.kernel_floor_us,
                   "held, not fitted: fixed time of each linear-layer kernel, us (the cost "
                   "model's default)")
      ->check(cli::number_in(0.0, 1000.0));
  calibrate_cmd
      ->add_option("--elementwise-efficiency", cal.elementwise_efficiency,
                   "held, not fitted: fraction of peak bandwidth the element-wise kernels between "
                   "the GEMMs reach (the cost model's default); their time is taken off each step "
                   "before the fit")
      ->check(cli::number_in(0.01, 1.0));
  calibrate_cmd->add_option("--fix", cal.fix,
                            "hold a parameter at a value instead of fitting it: NAME=VALUE "
                            "(repeatable)");
  calibrate_cmd->add_option("--out", cal.out, "write the calibration file (YAML) here");
  calibrate_cmd->add_option("--format", cal.format, "what to print")
      ->check(CLI::IsMember({"table", "yaml", "json"}));

  std::string list_what;
  CLI::App* list_cmd =
      app.add_subcommand("list", "list policies, workloads, GPUs, models or the metrics of an arm");
  list_cmd->add_option("what", list_what, "policies | workloads | gpus | models | metrics")
      ->check(CLI::IsMember({"policies", "workloads", "gpus", "models", "metrics"}));

  std::string describe_name;
  CLI::App* describe_cmd = app.add_subcommand(
      "describe",
      "show the parameters of a policy, a workload, a fault kind, or the server / cost_model / "
      "slo / model / gpu / campaign / autoscaling / faults sections");
  describe_cmd->add_option(
      "name", describe_name,
      "policy, workload, fault kind, server, cost_model, slo, model, gpu, campaign, "
      "autoscaling or faults");

  std::string shell;
  CLI::App* completion_cmd = app.add_subcommand(
      "completion", "print a shell completion script (cmake --install installs bash's)");
  completion_cmd->add_option("shell", shell, "the shell")
      ->required()
      ->check(CLI::IsMember({"bash"}));

  try {
    app.parse(argc, argv);
  } catch (const CLI::Success& e) {
    return app.exit(e);  // --help, --version
  } catch (const CLI::ParseError& e) {
    if (app.get_subcommands().empty()) {
      // No command was recognised: name the word taken for one, and the valid ones.
      std::vector<std::string> names;
      for (const CLI::App* sub : app.get_subcommands([](CLI::App*) { return true; })) {
        names.push_back(sub->get_name());
      }
      const std::string valid = join(names, ", ");
      for (int i = 1; i < argc; ++i) {
        const std::string arg = argv[i];
        if (arg == "--log-level" || arg == "--progress") {
          ++i;  // its value
          continue;
        }
        if (arg.empty() || arg[0] == '-') continue;
        std::cerr << "error: unknown command '" << arg << "'; valid commands: " << valid << "\n";
        return 2;
      }
      std::cerr << "error: " << e.what() << "; valid commands: " << valid << "\n";
      return 2;
    }
    app.exit(e);  // CLI11's message and its pointer to --help
    return 2;
  }
  for (const CLI::App* command : app.get_subcommands()) {
    const CLI::Option* sets = command->get_option_no_throw("--set");
    if (sets == nullptr) continue;
    if (const auto twice = cli::path_given_twice(sets->results())) {
      std::cerr << "error: " << *twice << "\n";
      return 2;
    }
  }
  spdlog::set_level(spdlog::level::from_str(log_level));
  const bool terminal = isatty(STDERR_FILENO) == 1;
  cli::StderrProgress progress_line(std::cerr, terminal);
  const bool show_progress = progress == "always" || (progress == "auto" && terminal);
  const ScopedProgressObserver progress_shown(show_progress ? &progress_line : nullptr);
  cli::stop_on_interrupt();
  int code = 0;
  try {
    if (*run_cmd) code = cmd_run(run);
    if (*sweep_cmd) code = cmd_sweep(sweep);
    if (*campaign.app) code = cli::run_campaign_command(campaign);
    if (*plan.app) code = cli::run_plan_command(plan);
    if (*validate_cmd) code = cmd_validate(val);
    if (*calibrate_cmd) {
      for (const char* name :
           {"--form", "--gpu", "--model", "--tp", "--kv-dtype-bytes", "--allreduce-bandwidth-gbs",
            "--allreduce-path", "--expert-parallel", "--dequant-gemm-factor", "--moe-gemm-factor",
            "--moe-routing-us", "--unoverlapped-fraction", "--kernel-floor-us",
            "--elementwise-efficiency", "--fix"}) {
        if (calibrate_cmd->count(name) > 0) cal.csv_only_given.emplace_back(name);
      }
      for (const char* name : {"--fit", "--set", "--seeds", "--threads", "--max-evaluations"}) {
        if (calibrate_cmd->count(name) > 0) cal.against_only_given.emplace_back(name);
      }
      code = cmd_calibrate(cal);
    }
    if (*list_cmd) code = cmd_list(list_what);
    if (*describe_cmd) code = cmd_describe(describe_name);
    if (*completion_cmd) std::cout << cli::bash_completion(app);
  } catch (const StoppedError& e) {
    if (const int signal = cli::interrupting_signal(); signal != 0) {
      std::cerr << "interrupted (" << (signal == SIGINT ? "SIGINT" : "SIGTERM")
                << "): the simulations stopped before their end; no result was written\n";
      return 128 + signal;
    }
    std::cerr << "error: " << e.what() << "\n";
    return 2;
  } catch (const InternalError& e) {
    std::cerr << "internal error (a bug, please report): " << e.what() << "\n";
    return 3;
  } catch (const Error& e) {
    std::cerr << "error: " << e.what() << "\n";
    return 2;
  } catch (const std::exception& e) {
    std::cerr << "error: " << e.what() << "\n";
    return 2;
  }
  // A result printed to a full disk or a closed pipe is a failed run, not an empty success.
  std::cout.flush();
  if (!std::cout) {
    std::cerr << "error: cannot write the output to standard output\n";
    return 2;
  }
  return code;
}
