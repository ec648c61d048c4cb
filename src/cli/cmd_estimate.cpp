// cli/cmd_estimate: `strata estimate` (time and memory of one strategy on one cluster) and `strata validate`
// (the cost model against the embedded calibration measurements).
#include <fmt/format.h>

#include <algorithm>

#include <cstdio>
#include <memory>
#include <optional>
#include <string>

#include "commands.hpp"
#include "engine_flag.hpp"
#include "export_hooks.hpp"
#include "io.hpp"
#include "plan_source.hpp"
#include "strata/core/json.hpp"
#include "strata/core/error.hpp"
#include "strata/core/text.hpp"
#include "strata/cost/constants.hpp"
#include "strata/cost/estimate.hpp"
#include "strata/cost/memory.hpp"
#include "strata/cost/profile.hpp"
#include "strata/cost/strategy.hpp"
#include "strata/cost/strategy_keys.hpp"
#include "strata/cost/validate.hpp"
#include "strata/hw/cluster.hpp"
#include "strata/model/model.hpp"

namespace strata::cli {
namespace {

struct EstimateArgs {
  std::string model, cluster, strategy, strategy_file, profile, memory_headroom;
  bool memory_headroom_given = false;  // set even for an empty value (rejected)
  std::optional<std::int64_t> seq;
  bool json = false;
  std::vector<std::string> from;  // --from ENGINE "CONFIG" (cmd_export.cpp)
  std::string from_file;
  std::string engine;  // --engine (engine_flag.cpp)
};

std::string pct(double x) { return fmt::format("{:.1f}%", 100.0 * x); }

void print_estimate(const model::Model& m, const hw::Cluster& c, const cost::Strategy& s, const cost::Estimate& e) {
  fmt::print("model {} (seq {}) on {} ({} devices)\n", m.name, m.seq, c.name, c.num_devices());
  fmt::print("strategy {}\n\n", cost::to_cli_string(s));
  fmt::print("iteration time   {}\n", core::format_seconds(e.iteration_time_s));
  if (e.host.node >= 0)
    fmt::print("  host CPU bound {} on node {} ({} ranks share {} cores: {} compute / {} + {} waiting in collectives); "
               "schedule alone {}{}\n",
               core::format_seconds(e.host.bound_s), e.host.node, e.host.ranks, e.host.cores,
               core::format_seconds(e.host.busy_s), e.host.cores, core::format_seconds(e.host.blocking_s),
               core::format_seconds(e.pipeline_time_s), e.host.bound_s > e.pipeline_time_s ? " (the bound binds)" : "");
  fmt::print("throughput       {:.4g} samples/s, {:.4g} tokens/s\n", e.samples_per_s, e.tokens_per_s);
  // tflops_per_gpu counts the blocks' forward once more (PTD-P, Narayanan et al. 2021 eq. 3, full-recompute
  // convention); MFU divides the model FLOPs without recompute by the peak.
  fmt::print("FLOP/s           {} per GPU (PTD-P count, a recomputed forward included; MFU {} on model FLOPs)\n",
             core::format_flops(e.tflops_per_gpu * 1e12), pct(e.mfu));
  if (const std::string note = dtype_fallback_note(c, s.dtype); !note.empty()) fmt::print("  {}", note);
  fmt::print("peak memory      {} per device, {}\n\n", core::format_bytes(e.peak_memory_bytes),
             e.fits ? "fits" : "DOES NOT FIT: " + e.not_fit_reason);
  std::vector<std::vector<std::string>> rows;
  for (std::size_t i = 0; i < e.stages.size(); ++i) {
    const auto& st = e.stages[i];
    rows.push_back({std::to_string(i), st.gpu, std::to_string(st.devices.size()), std::to_string(st.layers.size()),
                    core::format_seconds(st.time_s), core::format_seconds(st.compute_s),
                    core::format_seconds(st.tp_comm_s), core::format_seconds(st.p2p_s),
                    core::format_seconds(st.bubble_s), core::format_seconds(st.dp_comm_s),
                    core::format_seconds(st.optimizer_s), core::format_bytes(st.memory_bytes),
                    core::format_bytes(st.memory.activations_bytes), st.fits ? "yes" : "NO"});
  }
  fmt::print("{}", core::render_table({"stage", "gpu", "devices", "layers", "t/micro-batch", "compute", "tp comm",
                                       "p2p", "bubble/iter", "dp comm/iter", "optimizer", "memory", "of which act.",
                                       "fits"},
                                      rows));
  double zero3_busy = 0;
  for (const auto& st : e.stages) zero3_busy = std::max(zero3_busy, st.zero3_busy_s);
  if (zero3_busy > 0)
    fmt::print("\nZeRO-3 gathers (forward + backward) and reduce-scatters keep the links busy {} per iteration "
               "(their exposed part is in tp comm).\n", core::format_seconds(zero3_busy));
  fmt::print("\nTimes per micro-batch unless marked /iter. Formulas: docs/cost-model.md.\n");
}

void run_estimate(const EstimateArgs& a) {
  if (a.strategy.empty() == a.strategy_file.empty())
    throw core::InputError("estimate: give exactly one of --strategy and --strategy-file");
  // Model, cluster and seq: the flags, else the plan file's (embedded definitions first: plan_source.hpp).
  const PlanContext ctx = resolve_plan_context(
      a.strategy_file, {"estimate", a.model, a.cluster, a.seq, "unless --strategy-file is a plan file"});
  const model::Model& m = ctx.model;
  const hw::Cluster& c = ctx.cluster;
  cost::Strategy s = a.strategy.empty() ? cost::load_strategy_file(a.strategy_file) : cost::parse_strategy(a.strategy);
  s = cost::complete_strategy(s, m, c);
  std::optional<cost::Profile> profile;
  cost::CostOptions opt;
  if (!a.profile.empty()) {
    profile = cost::load_profile_file(a.profile);
    opt.profile = &*profile;
  }
  if (a.memory_headroom_given)
    opt.memory_headroom = cost::parse_memory_headroom(a.memory_headroom, "estimate: --memory-headroom");
  if (const auto p = engine_from_flag(a.engine, "estimate: --engine"))
    apply_engine_flag(*p, m, c, s, &opt, "estimate", cost::strategy_text_keys(a.strategy));
  const auto e = cost::estimate(m, c, s, opt);
  if (a.json) {
    fmt::print("{}\n", core::dump_json(cost::estimate_report_json(m, c, s, e)));
  } else {
    print_estimate(m, c, s, e);
  }
}

void run_validate(bool json, bool fit, const std::string& constants_path) {
  // A candidate constants file (data/cost_constants.json's format) is checked, or re-fitted from, before it
  // replaces the built-in one; without it the built-in constants.
  const cost::CostConstants k = constants_path.empty()
                                    ? cost::builtin_constants()
                                    : cost::constants_from_json(core::load_json_file(constants_path), constants_path);
  if (fit) {
    std::fprintf(stderr, "validate: fitting gemm efficiency and NVLink efficiency to Table 5, the H100 factor to the bf16 H100 "
                         "rows with FlashAttention v1 to the llm-foundry rows (its Hopper factor to their H100 part), cuDNN fused attention to the NeMo long-sequence rows with "
                         "fp8 GEMM efficiency to the fp8 rows, eager element-wise kernels to the A100 llm-foundry rows, the TP overlap "
                         "slowdown to the async-TP speedups, torchtitan's 500 W H100 factor to its rows...\n");
    // Table 5 first (A100), then the H100 factor on bf16 H100 rows, then fp8 on the fp8 rows (all H100).
    const auto fitted = cost::fit_public_constants(cost::fit_constants_to_table5(k));
    fmt::print("{}\n", cost::to_json(fitted).dump(2));
    return;
  }
  const auto r = cost::validate_calibration(k);
  if (json) {
    fmt::print("{}\n", cost::to_json(r).dump(2));
    return;
  }
  std::vector<std::vector<std::string>> rows;
  for (const auto& row : r.rows)
    rows.push_back({row.dataset, row.name, row.metric, fmt::format("{:.4g}", row.predicted),
                    fmt::format("{:.4g}", row.measured), fmt::format("{:+.1f}%", row.error_pct)});
  fmt::print("{}", core::render_table({"dataset", "case", "metric", "predicted", "measured", "error"}, rows));
  fmt::print("\nKorthikanti Table 5 iteration time: mean abs error {:.2f}%, max {:.2f}%\n", r.time_mean_abs_pct,
             r.time_max_abs_pct);
  fmt::print("Korthikanti Figure 1 memory (par+opt, activations): mean abs error {:.2f}%, max {:.2f}%\n",
             r.memory_mean_abs_pct, r.memory_max_abs_pct);
  fmt::print("MosaicML FSDP tokens/s per GPU (not fitted): mean abs error {:.2f}%, max {:.2f}%\n",
             r.mosaicml_mean_abs_pct, r.mosaicml_max_abs_pct);
  std::vector<std::vector<std::string>> sources;
  for (const auto& src : r.sources)
    sources.push_back({src.dataset, src.metric, std::to_string(src.rows), std::to_string(src.skipped),
                       fmt::format("{:.2f}%", src.mean_abs_pct), fmt::format("{:.2f}%", src.max_abs_pct),
                       std::to_string(src.not_fit),
                       src.target_mean_pct > 0 ? fmt::format("≤{:g}% mean{}", src.target_mean_pct,
                                                             src.target_max_pct > 0
                                                                 ? fmt::format(", ≤{:g}% max", src.target_max_pct)
                                                                 : "")
                                               : "-",
                       src.met() ? "met" : "MISSED"});
  fmt::print("\nPer source (rows not expressible, e.g. without a published layout, are skipped):\n{}",
             core::render_table({"source", "metric", "rows", "skipped", "mean abs", "max abs", "not fit", "target",
                                 ""},
                                sources));
  std::vector<std::vector<std::string>> async_rows;
  for (const auto& a : r.async_tp_speedup)
    async_rows.push_back({a.name, fmt::format("{:.3f}x", a.predicted), fmt::format("{:.3f}x", a.measured),
                          fmt::format("{:+.1f}%", a.error_pct)});
  if (!async_rows.empty())
    fmt::print("\nAsync (overlapped) TP rows vs their vanilla-TP twins (overlap=async, docs/cost-model.md §Chunked collective matmul):\n{}",
               core::render_table({"rows", "predicted speedup", "measured speedup", "error"}, async_rows));
  std::vector<std::vector<std::string>> layer_rows;
  for (const auto& a : r.measured_layers)
    layer_rows.push_back({a.dataset, a.name, a.metric, fmt::format("{:.3f}", a.predicted),
                          fmt::format("{:.3f}", a.measured), fmt::format("{:+.1f}%", a.error_pct)});
  if (!layer_rows.empty())
    fmt::print("\nOne block measured by strata on GPUs (scripts/gpu_layer_profile.py, compute only; a check, not "
               "fitted; docs/cost-model.md §Measured GPU layers):\n{}",
               core::render_table({"dataset", "case", "metric", "predicted", "measured", "error"}, layer_rows));
  fmt::print("Constants: data/cost_constants.json ({})\n", k.provenance);
}

}  // namespace

void register_estimate_commands(CLI::App& app) {
  auto args = std::make_shared<EstimateArgs>();
  auto* est = app.add_subcommand(
      "estimate",
      std::string("Estimate iteration time, throughput, model FLOP/s, MFU and per-device memory of one parallel "
                  "strategy.\n"
                  "Example: strata estimate --model gpt3-175b --cluster dgx-a100:8 \\\n"
                  "           --strategy \"tp=8,pp=8,mbs=1,gbs=64,v=3,recompute=selective,sp=on\"\n")
      // The key list comes from the strategy-key table (cost/strategy_keys.hpp): it cannot miss a key.
      + cost::strategy_keys_help());
  est->add_option("--model", args->model,
                  "Built-in model name (strata models) or a model JSON file (default: the plan file's; required "
                  "otherwise unless --from gives a shape)");
  est->add_option("--cluster", args->cluster,
                  "Cluster preset, 'node-type:count[+node-type:count]' or a cluster JSON file (default: the plan "
                  "file's)");
  add_engine_option(est, &args->engine, "cost the strategy with its stack traits; exit 2 naming what it cannot run");
  est->add_option("--strategy", args->strategy, "Strategy as key=value pairs, e.g. \"dp=2,tp=4,pp=2,gbs=64\"");
  est->add_option("--strategy-file", args->strategy_file,
                  "Strategy JSON file, or a plan file from `strata plan --json` (its best strategy; model, cluster "
                  "and seq from the file unless given)");
  est->add_option("--seq", args->seq, "Sequence length (default: the model's)")->transform(integer_in(core::limits::kSeq));
  est->add_option("--profile", args->profile,
                  "Measured profile JSON (`strata profile`) overriding the roofline where it has rows");
  add_memory_headroom_option(est, &args->memory_headroom, &args->memory_headroom_given,
                             "a stage fits when its memory <= capacity - headroom");
  est->add_flag("--json", args->json, "Print JSON (iteration_time_s, samples_per_s, tokens_per_s, tflops_per_gpu, "
                                       "mfu, fits, peak_memory_bytes, stages[])");
  est->add_option("--from", args->from,
                  "Cost an engine config: --from megatron \"ARGS\" (also torchtitan/deepspeed with the file's text); "
                  "docs/export.md")
      ->expected(1, 2);
  est->allow_extras();  // an ARGS string that starts with "--" reaches us as an extra (checked below)
  est->add_option("--from-file", args->from_file,
                  "Cost an engine config file: Megatron args, torchtitan TOML, DeepSpeed JSON or a launch script");
  est->callback([args, est] {
    auto extras = est->remaining();
    if (!extras.empty() && args->from.size() != 1)
      throw core::InputError(fmt::format("estimate: unknown argument '{}'", extras.front()));
    if (args->from.size() == 1) args->from.push_back(core::join(extras, " "));
    if (!args->from.empty() || !args->from_file.empty())
      estimate_imported(args->from, args->from_file, args->model, args->cluster, args->seq.value_or(0));
    else
      run_estimate(*args);
  });

  auto json = std::make_shared<bool>(false);
  auto fit = std::make_shared<bool>(false);
  auto* val = app.add_subcommand(
      "validate",
      "Run the cost model on every measured case of the embedded calibration data (data/calibration/) and print "
      "predicted vs\nmeasured, per source and overall, with each source's target (docs/cost-model.md §Validation): "
      "Korthikanti et al. 2022\nTable 5 iteration times and Figure 1 memory, the MosaicML FSDP set (a check, not "
      "fitted), the public rows\n(llm-foundry, Megatron-Bridge, NeMo long-sequence, torchtitan, torchtitan async-TP; "
      "tokens/s or model TFLOP/s per GPU),\nthe async-TP speed-ups, and the GPU layers strata measured itself (a "
      "check, never fitted).\nExample: strata validate --json");
  val->add_flag("--json", *json,
                "Print JSON: sources (per-source summary), rows (each with error_pct, fits, memory_fraction), skipped, "
                "async_tp_speedup, measured_layers");
  val->add_flag("--fit", *fit,
                "Re-fit the cost-model constants (the Table 5 ones to Table 5, then each public-row constant to its "
                "rows; docs/cost-model.md §Constants and provenance) and print them as a constants file "
                "(data/cost_constants.json's format)");
  auto constants = std::make_shared<std::string>();
  val->add_option("--constants", *constants,
                  "Cost-model constants JSON in data/cost_constants.json's format (default: the built-in file): "
                  "validate a candidate before installing it, or --fit starting from it");
  val->callback([json, fit, constants] { run_validate(*json, *fit, *constants); });
}

}  // namespace strata::cli
