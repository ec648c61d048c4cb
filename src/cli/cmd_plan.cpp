// cli/cmd_plan: `strata plan` — search the fastest parallel strategy for a model on a (heterogeneous) cluster,
// print the top-K plans next to the built-in baselines, explain the best one, write the plan file (--json).
#include <fmt/format.h>

#include <chrono>
#include <cstdio>
#include <fstream>
#include <memory>
#include <optional>
#include <string>

#include "cmd_sbp.hpp"
#include "commands.hpp"
#include "engine_flag.hpp"
#include "export_hooks.hpp"
#include "io.hpp"
#include "plan_flags.hpp"
#include "plan_layerwise.hpp"
#include "plan_per_stage.hpp"
#include "plan_source.hpp"
#include "plan_trials.hpp"
#include "strata/core/error.hpp"
#include "strata/core/text.hpp"
#include "strata/cost/memory.hpp"
#include "strata/cost/profile.hpp"
#include "strata/hw/cluster.hpp"
#include "strata/model/model.hpp"
#include "plan_oases.hpp"
#include "strata/plan/search.hpp"

namespace strata::cli {
namespace {

std::string split_text(const cost::Strategy& s) {
  std::vector<std::string> parts;
  for (int x : s.split) parts.push_back(std::to_string(x));
  return core::join(parts, "+");
}

std::string schedule_text(const cost::Strategy& s) {
  std::string t(cost::to_string(s.schedule));
  if (s.virtual_stages > 1) t += fmt::format(" v={}", s.virtual_stages);
  if (s.tp_overlap) t += " +tp-overlap";  // Oases (overlap=on)
  if (s.tp_async) t += " +async-tp";      // chunked collective matmul (overlap=async)
  return t;
}

std::vector<std::string> plan_row(const std::string& name, const hw::Cluster& c, const cost::Strategy& s,
                                  const cost::Estimate& e, double best_time) {
  return {name,
          std::to_string(s.dp),
          std::to_string(s.tp),
          std::to_string(s.pp),
          std::to_string(s.cp),  // context parallelism (1 = none)
          std::to_string(s.micro_batch),
          schedule_text(s),
          std::to_string(s.zero_stage),
          std::string(model::to_string(s.recompute)),
          s.sequence_parallel ? "on" : "off",
          split_text(s),
          plan::placement_summary(c, s),
          core::format_seconds(e.iteration_time_s),
          fmt::format("{:.1f}", e.tflops_per_gpu),
          fmt::format("{:.1f}%", 100.0 * e.mfu),
          core::format_bytes(e.peak_memory_bytes),
          fmt::format("{:.1f}%", 100.0 * plan::memory_margin(e)),
          best_time > 0 ? fmt::format("{:.2f}x", e.iteration_time_s / best_time) : ""};
}

// Every flag checked before the search, so that a typo costs no search time.
void check_plan_args(const PlanArgs& a, const model::Model& m) {
  if (a.objective != "margin" && a.objective != "fastest" && a.objective != "cheapest" && a.objective != "budget")
    throw core::InputError(fmt::format("plan: --objective: unknown objective '{}' (valid: margin, fastest; with "
                                       "--per-stage also cheapest, budget)", core::printable(a.objective)));
  plan::PlanOptions o;  // gbs, top, threads, max-tp/pp: the checks the Python API shares (plan/options_check.cpp)
  o.global_batch = a.gbs == 0 ? 1 : a.gbs;  // auto: no batch size to check yet
  o.top_k = a.top;
  o.threads = a.threads;
  o.max_tp = a.max_tp;
  o.max_pp = a.max_pp;
  plan::check_plan_options(o, m, /*skip_global_batch=*/true);
  if (a.trials < 0 || a.trial_steps < 1)
    throw core::InputError("plan: --trials/--trial-steps: must be >= 0 / >= 1");
  plan::check_global_batch(m, a.gbs);
  check_per_stage_args(a.per_stage);
}

// --earlystop, --fp8-cast and --optim: how the stack runs full recompute, fp8 and the step (docs/strategy.md
// earlystop, fp8cast, optim). Which search they apply to is the table's (plan_flags.cpp); here their values.
void set_stack_forms(const PlanArgs& a, plan::PlanOptions& opt) {
  if (a.fp8_cast != "fused" && a.fp8_cast != "separate")
    throw core::InputError(fmt::format("plan: --fp8-cast: '{}' is not fused or separate", a.fp8_cast));
  opt.fp8_separate_casts = a.fp8_cast == "separate";
  if (opt.fp8_separate_casts && opt.dtype != hw::Dtype::fp8)
    throw core::InputError("plan: --fp8-cast separate needs --dtype fp8");
  opt.recompute_early_stop = a.earlystop;
  opt.optim = cost::parse_optimizer_step(a.optim, "plan: --optim");
}

PlanOutputs plan_outputs(const PlanArgs& a) {
  return {a.json_file, a.report_file, a.export_engine, a.compare_to, a.model, a.cluster,
          a.trials,    a.trial_steps, a.trial_timeout_s};
}

// --space sbp: AutoDDL's SBP search, `strata sbp` with plan's flags (cmd_sbp.cpp, docs/sbp.md).
void run_sbp_search(const PlanArgs& a) {
  SbpArgs s;
  s.flag = "plan";
  s.model = a.model, s.cluster = a.cluster, s.dtype = a.dtype, s.json_file = a.json_file;
  s.gbs = a.gbs;
  s.seq = a.seq;
  s.memory_headroom = a.memory_headroom, s.memory_headroom_given = a.memory_headroom_given;
  run_sbp(s);
}

// The options of every search but --space sbp; `profile` keeps the --profile file that opt.cost points to.
plan::PlanOptions plan_options(const PlanArgs& a, std::optional<cost::Profile>& profile) {
  plan::PlanOptions opt;
  opt.global_batch = a.gbs;
  opt.space = plan::parse_space(a.space, "plan: --space");
  opt.placement = plan::parse_placement_mode(a.placement, "plan: --placement");
  opt.top_k = a.top;
  opt.threads = a.threads;
  opt.dtype = hw::parse_dtype(a.dtype, "plan: --dtype");
  // One --objective for both searches: the uniform ranking takes margin|fastest, the per-stage search
  // fastest|cheapest|budget (margin reads as fastest there; cheapest and budget rank the uniform plans by time).
  const bool stage_objective = a.objective == "cheapest" || a.objective == "budget";
  opt.objective = plan::parse_objective(stage_objective ? "fastest" : a.objective, "plan: --objective");
  if (a.elementwise != "fused" && a.elementwise != "eager")
    throw core::InputError(fmt::format("plan: --elementwise: '{}' is not fused or eager", a.elementwise));
  opt.eager_elementwise = a.elementwise == "eager";
  set_stack_forms(a, opt);
  // only what the engine runs, costed with its stack (engine_flag.cpp, docs/export.md)
  if (!a.engine.empty()) opt.engine = engine_from_flag(a.engine, "plan: --engine");
  opt.max_tp = a.max_tp;
  opt.max_pp = a.max_pp;
  if (!a.profile.empty()) {
    profile = cost::load_profile_file(a.profile);
    opt.cost.profile = &*profile;
  }
  if (a.memory_headroom_given)
    opt.cost.memory_headroom = cost::parse_memory_headroom(a.memory_headroom, "plan: --memory-headroom");
  if (!a.memory_budget.empty())
    opt.cost.memory_budget_bytes = parse_memory_budget(a.memory_budget, "plan: --memory-budget");
  return opt;
}

// The strategy search, with its progress on stderr once it has run for more than a second.
plan::PlanResult uniform_search(const model::Model& m, const hw::Cluster& c, plan::PlanOptions opt) {
  const auto start = std::chrono::steady_clock::now();
  bool printed = false;
  double last = 0;
  opt.progress = [&](std::int64_t done, std::int64_t total) {
    const double el = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
    if (el < 1.0 || el - last < 0.5) return;
    last = el;
    std::fprintf(stderr, "\rplan: %lld / %lld configurations visited (%.1f s)", static_cast<long long>(done),
                 static_cast<long long>(total), el);
    printed = true;
  };
  plan::PlanResult r = plan::plan(m, c, opt);
  if (printed) std::fprintf(stderr, "\n");
  return r;
}

const std::vector<std::string> kPlanHeader{"plan",     "dp",   "tp",        "pp",        "cp",          "mbs",
                                           "schedule", "zero", "recompute", "sp",        "split",       "placement",
                                           "time/iter", "TFLOP/s/GPU", "MFU", "peak mem", "margin", "vs best"};

// The baselines' table and speedups; their notes for --explain.
std::vector<std::string> print_baselines(const plan::PlanResult& r, const hw::Cluster& c, double best,
                                         std::FILE* out) {
  std::vector<std::vector<std::string>> rows;
  std::vector<std::string> notes;
  for (const auto& b : r.baselines) {
    if (b.found) {
      rows.push_back(plan_row(b.name, c, b.strategy, b.estimate, best));
    } else {
      std::vector<std::string> row(kPlanHeader.size(), "-");
      row[0] = b.name;
      row[12] = "does not fit";  // the time/iter column
      rows.push_back(row);
    }
    notes.push_back(fmt::format("  {}: {}", b.name, b.note));
  }
  fmt::print(out, "Baselines (vs best = baseline time / best time = the best plan's speedup):\n{}\n",
             core::render_table(kPlanHeader, rows));
  for (const auto& b : r.baselines)
    if (b.found)  // a model that costs nothing (0 s per iteration) has no speedup to print, not "nanx"
      fmt::print(out, "{}\n", best > 0 ? fmt::format("best plan is {:.2f}x faster than {}",
                                                     b.estimate.iteration_time_s / best, b.name)
                                       : fmt::format("best plan and {} both take 0 s per iteration", b.name));
  return notes;
}

// The strategy search's report: top plans, baselines, search counts, best strategy, --explain.
void print_uniform(const PlanArgs& a, const model::Model& m, const hw::Cluster& c, const plan::PlanOptions& opt,
                   const plan::PlanResult& r, std::FILE* out) {
  const double best = r.top.front().estimate.iteration_time_s;
  fmt::print(out, "strata plan: model {} (seq {}) on {} ({} devices), gbs {}, space {}, placement {}\n\n", m.name,
             m.seq, c.name, c.num_devices(), a.gbs, a.space, a.placement);
  std::vector<std::vector<std::string>> rows;
  for (std::size_t i = 0; i < r.top.size(); ++i)
    rows.push_back(plan_row(fmt::format("#{}", i + 1), c, r.top[i].strategy, r.top[i].estimate, best));
  fmt::print(out, "Top {} plans:\n{}\n", r.top.size(), core::render_table(kPlanHeader, rows));
  // Which tier each parallel group of the best plan uses (scale-up domain or network; docs/clusters.md).
  fmt::print(out, "best plan's groups: {}\n", plan::group_tiers_summary(c, r.top.front().strategy));
  // Why the legend: with no recompute the PTD-P count can exceed the dtype's peak (docs/cost-model.md §Outputs
  // and FLOP counts).
  fmt::print(out, "TFLOP/s/GPU: PTD-P count (Narayanan et al. 2021 eq. 3), one recompute forward per block even "
                  "without recompute;\nMFU: model FLOPs / the {} peak.\n{}\n",
             hw::to_string(opt.dtype), dtype_fallback_note(c, opt.dtype));
  const auto notes = print_baselines(r, c, best, out);
  fmt::print(out, "\nsearch: {} configurations, {} costed, {} pruned by the lower bound, {:.3f} s\n", r.space_size,
             r.evaluated, r.pruned_by_bound, r.search_time_s);
  fmt::print(out, "best strategy: {}\n", best_strategy_text(c, r.top.front().strategy));
  if (!a.explain) return;
  fmt::print(out, "\nWhy this plan:\n");
  for (const auto& line : r.explanation) fmt::print(out, "  - {}\n", line);
  fmt::print(out, "Baselines:\n");
  for (const auto& n : notes) fmt::print(out, "{}\n", n);
  fmt::print(out, "Discarded or skipped (count per reason, one example):\n");
  for (const auto& x : r.rejected)
    fmt::print(out, "  {:>8}  {}{}\n", x.count, x.reason, x.example.empty() ? "" : " (e.g. " + x.example + ")");
}

// --compare-to and --export of the best uniform plan.
void print_compare_export(const PlanArgs& a, const model::Model& m, const hw::Cluster& c,
                          const plan::PlanOptions& opt, const plan::PlanResult& r, std::FILE* out) {
  if (!a.compare_to.empty()) compare_to_config(a.compare_to, m, c, r.top.front().estimate.iteration_time_s);
  if (a.export_engine.empty()) return;
  fmt::print(out, "\n");
  export_strategy_cli(a.export_engine, m, c, r.top.front().strategy, "-", false, opt.engine ? &*opt.engine : nullptr);
}

// --trials, the plan file (`written`, with `extra` members) and its report, and the launchable line.
void write_uniform_outputs(const PlanArgs& a, const model::Model& m, const hw::Cluster& c,
                           const plan::PlanOptions& opt, const plan::PlanResult& r, const plan::PlanResult& written,
                           const nlohmann::ordered_json& extra, std::FILE* out) {
  nlohmann::ordered_json members = nlohmann::ordered_json::object();
  if (a.trials > 0) members["trials"] = run_plan_trials(a.model, c, r, a.trials, a.trial_steps, a.trial_timeout_s);
  members.update(extra);
  if (!a.json_file.empty()) {
    members.update(input_definitions(a.model, m, a.cluster, c));  // self-contained: model/cluster files embedded
    // Written member by member (plan::plan_file_text): a 98,304-GPU plan file's tree would otherwise be most of
    // the process's peak memory (issue 22: <= 100 MiB).
    write_output(a.json_file, plan::plan_file_text(written, m, c, opt, members), "plan: --json");
    if (a.json_file != "-")
      fmt::print("plan file written to {} (read it back with `strata estimate --strategy-file {}`)\n", a.json_file,
                 a.json_file);
  }
  if (!a.report_file.empty()) {  // the same page as `strata report --plan <the --json file>`
    ReportFiles files;
    files.html = a.report_file;
    files.flag = "plan: --report";
    write_plan_report(nlohmann::json(plan::plan_to_json(written, m, c, opt)), "plan", m, c, files, opt.cost);
  }
  if (opt.engine)
    fmt::print(out, "engine {}: every plan of the top list is one it can run, costed with its stack ({})\n",
               opt.engine->name, opt.engine->engine);
  else
    fmt::print(out, "{}\n", launchable_line(m, c, opt, r));
}

// With --json - the JSON owns stdout; the report goes to stderr.
std::FILE* report_stream(const PlanArgs& a) { return a.json_file == "-" ? stderr : stdout; }

// The strategy search (default).
void run_uniform_search(const PlanArgs& a, const model::Model& m, const hw::Cluster& c,
                        const plan::PlanOptions& opt) {
  const plan::PlanResult r = uniform_search(m, c, opt);
  std::FILE* out = report_stream(a);
  print_uniform(a, m, c, opt, r, out);
  print_compare_export(a, m, c, opt, r, out);
  write_uniform_outputs(a, m, c, opt, r, r, nlohmann::ordered_json::object(), out);
}

// --per-stage: the strategy search, then the per-stage search beside it; its plan joins the plan file's candidates
// (one plan-file shape, issue 41) and its search as the file's "per_stage".
void run_per_stage_search(const PlanArgs& a, const model::Model& m, const hw::Cluster& c,
                          const plan::PlanOptions& opt) {
  const plan::PlanResult r = uniform_search(m, c, opt);
  std::FILE* out = report_stream(a);
  print_uniform(a, m, c, opt, r, out);
  print_compare_export(a, m, c, opt, r, out);
  plan::Candidate ps;
  nlohmann::ordered_json extra = nlohmann::ordered_json::object();
  extra["per_stage"] = run_per_stage(a.per_stage, m, c, opt, r.top.front(), out, &ps);
  write_uniform_outputs(a, m, c, opt, r, with_candidate(r, ps), extra, out);
}

void run_plan(PlanArgs& a) {
  const PlanSearch search = select_search(a);
  check_flag_rules(a, search);  // which flag applies to which search: the table of plan_flags.cpp
  if (search == PlanSearch::sbp) return run_sbp_search(a);
  if (!a.json_file.empty()) check_output_path(a.json_file, "plan: --json");
  auto m = model::resolve_model(a.model);
  if (a.seq) m = model::with_seq(m, *a.seq);
  const auto catalog = hw::builtin_catalog();
  const auto c = hw::resolve_cluster(a.cluster, catalog);
  check_plan_args(a, m);
  check_per_stage_prices(a.per_stage, c);
  std::optional<cost::Profile> profile;
  const plan::PlanOptions opt = plan_options(a, profile);
  switch (search) {
    case PlanSearch::oases_blocks:  // Oases' per-block tp chain instead of the strategy search (docs/planner.md)
      return run_oases_blocks(m, c, a.gbs, opt.dtype, opt.cost, stdout);
    case PlanSearch::layerwise:  // Galvatron-BMW per-layer search (with or without the --gbs auto sweep)
    case PlanSearch::gbs_auto:
      return run_plan_layerwise({a.layerwise, a.explain, plan_outputs(a)}, m, c, opt);
    case PlanSearch::per_stage: return run_per_stage_search(a, m, c, opt);
    case PlanSearch::uniform: return run_uniform_search(a, m, c, opt);
    case PlanSearch::sbp: break;
  }
}

// The flags of the stack the plans are costed for: sequence, precision, kernels, search space and placement.
void add_stack_flags(CLI::App* cmd, PlanArgs& a) {
  cmd->add_option("--seq", a.seq, "Sequence length (default: the model's)")->transform(integer_in(core::limits::kSeq));
  cmd->add_option("--top", a.top, "How many plans to list (default 5)")->transform(integer_in(core::limits::kTop));
  cmd->add_option("--dtype", a.dtype,
                  "Training precision recipe: fp32, tf32, fp16, bf16 (default) or fp8 (data/precision_recipes.json: "
                  "bytes per parameter, gradient and optimizer state, activation bytes)");
  cmd->add_option("--elementwise", a.elementwise,
                  "Element-wise kernels of the stack you will run: fused (default: Megatron-core/TransformerEngine, "
                  "torchtitan with torch.compile) or eager (one PyTorch kernel per op: torchtitan without compile); "
                  "every candidate is costed with it (docs/cost-model.md §Element-wise kernels)");
  cmd->add_flag("--earlystop", a.earlystop,
                "Cost full recompute as PyTorch's non-reentrant checkpoint runs it (torchtitan, FSDP): the re-run "
                "stops before each block's last GEMM (docs/cost-model.md §Recompute early stop); default: Megatron's, "
                "which re-runs the whole forward");
  cmd->add_option("--fp8-cast", a.fp8_cast,
                  "With --dtype fp8, how the stack casts: fused (default: TransformerEngine) or separate (torchao "
                  "float8 in torchtitan: an amax and a cast kernel per GEMM operand; docs/cost-model.md §Precision "
                  "recipes)");
  cmd->add_option("--optim", a.optim,
                  "How the stack's AdamW steps: fused (default: fused=True, Megatron/DeepSpeed fused Adam), foreach "
                  "(PyTorch's default: state-sized temporaries during the step) or forloop; docs/strategy.md optim");
  cmd->add_option("--space", a.space,
                  "Search space: 3d = dp/tp/pp/mbs only with 1F1B (as AMP); full (default) = + gpipe, interleaved "
                  "v, ZeRO 0-3, recompute, sp; all = full + the asynchronous pipedream and 2bw schedules; sbp = AutoDDL's "
                  "per-layer SBP layouts (same as `strata sbp`, docs/sbp.md)");
  cmd->add_option("--placement", a.placement,
                  "megatron = node-major identity (tp, then dp, then pp); hetero (default) = + tp groups on the "
                  "fastest links and every order of the GPU types along the pipeline; anneal = hetero + AMP's "
                  "simulated annealing of the top plans' device placement (seeded, deterministic)");
}

// --profile, the headroom, the output flags (plan file, trials, report, export), the other searches and --engine.
void add_output_flags(CLI::App* cmd, PlanArgs& a) {
  cmd->add_option("--profile", a.profile, "Measured profile JSON (`strata profile`) overriding the roofline");
  add_memory_headroom_option(cmd, &a.memory_headroom, &a.memory_headroom_given,
                             "a stage fits when its memory <= capacity - headroom");
  cmd->add_option("--json", a.json_file,
                  "Write the plan file (best {strategy, estimate}, candidates, baselines, evaluated, "
                  "search_time_s) to this path ('-' = stdout, the report then goes to stderr); `strata estimate "
                  "--strategy-file` and `strata simulate --plan` read it back");
  cmd->add_option("--trials", a.trials,
                  "Run the top K predicted plans for real on local processes (libtorch + Gloo, CPU; one process "
                  "per device of the cluster, so use a small cluster such as examples/cluster_cpu_local.json and a "
                  "small GPT such as small-gpt) and re-rank them by measured time (AMP Algorithm 1). Default 0")
      ->transform(integer_in({0, 1000}));
  cmd->add_option("--trial-steps", a.trial_steps, "Steps per trial run (default 4; the first is warm-up)")
      ->transform(integer_in(core::limits::kSteps));
  cmd->add_option("--trial-timeout", a.trial_timeout_s, "Seconds before a hung trial is stopped (default 120)")
      ->check(number_in(core::limits::kTimeoutS));
  cmd->add_option("--report", a.report_file,
                  "Write the HTML report of the plan here (as `strata report --plan`; docs/report.md)");
  cmd->add_flag("--oases-blocks", a.oases_blocks,
                "Instead of the search: Oases' per-block tensor-parallel degrees (tp per layer in powers of two, "
                "dp = N/tp, no pipeline, overlapped TP, memory limit; chain DP) and its ablation against Megatron TP "
                "(docs/planner.md)");
  cmd->add_flag("--explain", a.explain,
                "Say why: which stages went to which GPU type and why, the gain over each baseline, what was "
                "discarded or pruned and why (counts per reason)");
  cmd->add_option("--export", a.export_engine,
                  "Also print the best plan as an engine config: megatron|torchtitan|deepspeed|torchrun|slurm "
                  "(docs/export.md)");
  cmd->add_option("--compare-to", a.compare_to,
                  "Your engine config (Megatron args file, torchtitan TOML, DeepSpeed JSON, launch script): costed "
                  "as a baseline next to the best plan, with the speedup");
  add_per_stage_options(cmd, a.per_stage);
  add_engine_option(cmd, &a.engine,
                    "search only the strategies it can run, cost them with its kernels and memory habits, record it in "
                    "the plan file; without it the output ends with the best plan per engine (\"launchable:\")");
}

}  // namespace

void register_plan_command(CLI::App& app) {
  auto a = std::make_shared<PlanArgs>();
  auto* cmd = app.add_subcommand(
      "plan",
      "Find the fastest parallel training strategy for a model on a (heterogeneous) cluster.\n"
      "Searches dp×tp×pp (tp dividing the heads), micro-batch sizes, schedules (1f1b, gpipe, interleaved v), ZeRO\n"
      "0-3, recompute and sequence parallelism; solves the exact layer→stage split of each (heterogeneous layers\n"
      "and GPUs, memory limits); places tp groups inside nodes and faster GPU types where they help; costs every\n"
      "survivor with the cost model (docs/cost-model.md) and prints the top plans next to the baselines\n"
      "megatron (AMP §4.1), uniform (best plan, uniform split), dp-only and zero3-only. Algorithm: docs/planner.md.\n"
      "Example: strata plan --model amp-gpt2 --cluster p3.8xlarge:3+g4dn.12xlarge:1 --gbs 32 --explain\n"
      "         strata plan --model gpt3-175b --cluster dgx-a100:128 --gbs 1536 --json plan.json --threads 2");
  cmd->add_option("--model", a->model, "Built-in model name (strata models) or a model JSON file")->required();
  cmd->add_option("--cluster", a->cluster,
                  "Cluster preset, 'node-type:count[+node-type:count]' or a cluster JSON file")
      ->required();
  cmd->add_option("--gbs", a->gbs_text,
                  "Global batch size in samples per iteration, or 'auto': the largest throughput over batch sizes "
                  "8, 16, ..., 64, 80, 104, ... (x1.25) that fit, with no gradient accumulation beyond the pipeline "
                  "(at most 2*pp micro-batches; as Galvatron sweeps, docs/planner.md)")
      ->required();
  cmd->add_option("--memory-budget", a->memory_budget,
                  "Per-GPU memory budget in GiB (e.g. 8): every GPU counts as min(its memory, budget), the headroom "
                  "applies to that (Galvatron-BMW's 8/12/16 GB settings)");
  cmd->add_flag("--layerwise", a->layerwise,
                "Galvatron-BMW: a strategy per layer inside each stage (tp, DP or ZeRO-3, recompute, tp order) "
                "chosen by a DP over (layer, memory, previous layout), stages balanced for memory and time; prints "
                "the per-layer choices next to the best uniform plan (docs/planner.md §Per-layer strategies)");
  add_stack_flags(cmd, *a);
  cmd->add_option_function<std::string>(
      "--objective",
      [a](const std::string& v) {
        a->objective = v;
        a->per_stage.objective = v == "margin" ? "fastest" : v;  // the per-stage search's (plan_per_stage.cpp)
      },
      "How the top plans are ordered: margin (default) = among the plans within 2% of the fastest, the one with "
      "the most memory margin first (the 'margin' column: usable memory its fullest GPU leaves free); fastest = by "
      "predicted time only (docs/planner.md §Ranking). With --per-stage, also the per-stage search's objective: "
      "fastest (margin reads as fastest), cheapest ($/sample of the GPUs used, data/gpu_prices.json), budget "
      "(fastest costing at most --budget $/hour)");
  cmd->add_option("--threads", a->threads, "Worker threads (default 1; results are identical for any count)")
      ->transform(integer_in(core::limits::kThreads));
  cmd->add_option("--max-tp", a->max_tp, "Largest tensor-parallel degree to consider (0 = no limit)")
      ->transform(integer_in(core::limits::kDegreeCap));
  cmd->add_option("--max-pp", a->max_pp, "Largest pipeline-parallel degree to consider (0 = no limit)")
      ->transform(integer_in(core::limits::kDegreeCap));
  add_output_flags(cmd, *a);
  cmd->callback([a, cmd] {
    a->given = given_flags(*cmd);
    run_plan(*a);
  });
}

}  // namespace strata::cli
