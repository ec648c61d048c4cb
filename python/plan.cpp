// python/plan: strata.plan() — the planner (plan::plan) with the GIL released and an optional progress
// callback — and its result types Plan, Candidate and Baseline (docs/python.md). Plan.to_dict() is
// plan::plan_to_json, the plan file `strata plan --json` writes.
#include <fmt/format.h>
#include <pybind11/functional.h>
#include <pybind11/stl.h>

#include "common.hpp"
#include "strata/core/error.hpp"
#include "strata/core/text.hpp"
#include "strata/core/units.hpp"
#include "strata/cost/memory.hpp"
#include "strata/cost/strategy_keys.hpp"
#include "strata/plan/layerwise.hpp"
#include "strata/plan/plan_inputs.hpp"
#include "strata/plan/stage_search.hpp"

namespace strata::python {
namespace {

struct CandidateView {
  std::shared_ptr<const PlanHandle> plan;
  const plan::Candidate* cand;
};
struct BaselineView {
  std::shared_ptr<const PlanHandle> plan;
  const plan::Baseline* base;
};

// A planner run with the model/cluster definitions its plan file embeds (plan::input_definitions: files and dicts,
// as `strata plan --json` embeds files). run_plan makes every Plan, so every PlanHandle of strata.plan is one.
struct PlanRun : PlanHandle {
  nlohmann::ordered_json definitions = nlohmann::ordered_json::object();
};

// Where a model or cluster argument came from: a spec string, or a dict (its own definition). A strata.Model /
// strata.Cluster object carries neither, so a plan made from one records only its name.
plan::InputSource input_source(py::handle o) {
  if (py::isinstance<py::str>(o)) return {o.cast<std::string>(), std::nullopt};
  if (py::isinstance<py::dict>(o)) return {"", nlohmann::ordered_json(from_python(o, ""))};
  return {};
}

// The plan file of `strata plan --json`: plan::plan_to_json and the embedded definitions.
nlohmann::ordered_json plan_file(const std::shared_ptr<PlanHandle>& h) {
  auto j = plan::plan_to_json(h->r, *h->m, *h->c, h->opt);
  j.update(std::static_pointer_cast<PlanRun>(h)->definitions);
  return j;
}

EstimateResult estimate_of(const PlanHandle& h, const cost::Strategy& s, const cost::Estimate& e) {
  return EstimateResult{h.m, h.c, s, e};
}

// The text `strata plan --explain` prints after the tables.
std::string explain_text(const PlanHandle& h) {
  std::string out = "Why this plan:\n";
  for (const auto& line : h.r.explanation) out += fmt::format("  - {}\n", line);
  out += "Baselines:\n";
  for (const auto& b : h.r.baselines) out += fmt::format("  {}: {}\n", b.name, b.note);
  out += "Discarded or skipped (count per reason, one example):\n";
  for (const auto& x : h.r.rejected)
    out += fmt::format("  {:>8}  {}{}\n", x.count, x.reason, x.example.empty() ? "" : " (e.g. " + x.example + ")");
  return out;
}

constexpr const char* kPlanDoc = R"(Find the fastest parallel training strategy for a model on a (heterogeneous) cluster.

The same search as `strata plan` (docs/planner.md): dp x tp x pp (tp dividing the heads),
micro-batch sizes, schedules (1f1b, gpipe, interleaved v), ZeRO 0-3, recompute and sequence
parallelism; the exact layer->stage split of each; tp groups inside nodes and faster GPU types
where they help; every survivor costed by the cost model. The GIL is released while it searches.

Arguments (the CLI flag in brackets):
  model      strata.Model, a built-in name (strata.models()) or model file path, or a dict  [--model]
  cluster    strata.Cluster, a preset / "node-type:count[+node-type:count]" / file, or a dict  [--cluster]
  gbs        global batch size in samples per iteration, or "auto": the largest throughput over
             batch sizes 8, 16, ... that fit (Galvatron's sweep)  [--gbs]
  seq        sequence length (default: the model's)  [--seq]
  top        how many plans to keep (default 5)  [--top]
  space      "3d" (dp/tp/pp/mbs with 1F1B, as AMP), "full" (default: + gpipe, interleaved, ZeRO,
             recompute, sp) or "all" (+ pipedream, 2bw)  [--space]
  placement  "megatron", "hetero" (default) or "anneal"  [--placement]
  threads    worker threads (results identical for any count)  [--threads]
  max_tp, max_pp  largest degrees to consider (0 = no limit)  [--max-tp, --max-pp]
  profile    measured profile JSON path (`strata profile`)  [--profile]
  memory_headroom  memory kept free per device: GiB (4) or a share ("10%")  [--memory-headroom]
  memory_budget    per-GPU memory budget in GiB (every GPU counts as min(its memory, budget))  [--memory-budget]
  per_stage  also search per-stage plans (each stage its GPU type, dp, tp): Plan.per_stage  [--per-stage]
  objective, budget, stage_schedule, prices  the per-stage search's objective ("fastest", "cheapest",
             "budget"), $/hour budget, schedule ("1f1b", "gpipe", "pipedream", "2bw") and GPU prices
             {type: $/hour}  [--objective, --budget, --stage-schedule, --price]
  layerwise  also search Galvatron-BMW per-layer plans: Plan.layerwise  [--layerwise]
  progress   callable(done, total) called between search batches; raising stops the search
  engine     search only what this engine runs, costed with its stack: megatron, torchtitan-toml,
             torchtitan, deepspeed, pytorch, strata-exec (data/engines, docs/export.md)  [--engine]
Strategy keys the planner takes from you (cost/strategy_keys.hpp, docs/strategy.md), as keywords:
)";

constexpr const char* kPlanDocEnd = R"(
Returns a strata.Plan: best (a Candidate: strategy, estimate), candidates (best first), baselines
(megatron, uniform, dp-only, zero3-only), per_stage / layerwise (None unless asked), explain(),
to_dict() (the plan file of `--json`). Raises strata.InputError (a ValueError) with the CLI's one-line
message on bad input.

Example:
  >>> import strata
  >>> p = strata.plan("amp-gpt2", "p3.8xlarge:3+g4dn.12xlarge:1", gbs=32, elementwise="eager")
  >>> p.best.strategy, p.best.estimate.iteration_time_s)";

// The docstring: the fixed part, then one line per strategy key the planner takes (generated from the table).
std::string plan_doc() {
  std::string doc = kPlanDoc;
  for (const auto& k : cost::strategy_keys())
    if (k.plan_option && k.python_name != "gbs")
      doc += fmt::format("  {}  {}: {} (default {})  [--{}]\n", k.python_name, k.values, k.help, k.default_text,
                         k.name == "fp8cast" ? "fp8-cast" : std::string(k.name));
  return doc + kPlanDocEnd;
}

// The options of one strata.plan call besides model, cluster and the strategy keys.
struct PlanCall {
  py::object gbs;
  py::object seq, top, threads, max_tp, max_pp;  // checked in run_plan with the CLI's ranges and words
  std::string space, placement;
  std::optional<std::string> profile;
  py::object headroom, progress;
  std::optional<double> memory_budget_gib;
  bool per_stage = false, layerwise = false;
  std::string objective, stage_schedule;
  double budget_usd_per_hour = 0;
  std::map<std::string, double> prices;
  std::optional<std::string> engine;  // plan --engine
};

// The strategy keywords (plan_option keys of the table) into the options, with the CLI's rules and messages.
void set_plan_keys(const py::kwargs& keys, const PlanCall& a, plan::PlanOptions& opt) {
  cost::Strategy s;
  py::kwargs rest;
  for (const auto& [k, v] : keys) {
    // dtype with `strata plan --dtype`'s message (the tests compare it); the others through the table.
    if (py::str(k).cast<std::string>() == "dtype" && py::isinstance<py::str>(v))
      s.dtype = hw::parse_dtype(v.cast<std::string>(), "plan: --dtype");
    else
      rest[k] = v;
  }
  apply_strategy_keywords(s, rest, "plan", /*plan_options_only=*/true);
  opt.dtype = s.dtype;
  opt.eager_elementwise = s.eager_elementwise;
  opt.recompute_early_stop = s.recompute_early_stop;
  opt.fp8_separate_casts = s.fp8_separate_casts;
  opt.optim = s.optim;
  const bool auto_gbs = opt.global_batch == 0;
  if (opt.fp8_separate_casts && opt.dtype != hw::Dtype::fp8)
    throw core::InputError("plan: --fp8-cast separate needs --dtype fp8");
  if (opt.eager_elementwise && (a.layerwise || auto_gbs))
    throw core::InputError("plan: --elementwise eager applies to the strategy search and --per-stage (not to "
                           "--oases-blocks, --layerwise or --gbs auto)");
  const bool other_search = a.layerwise || auto_gbs || a.per_stage;
  if ((opt.recompute_early_stop || opt.fp8_separate_casts) && other_search)
    throw core::InputError("plan: --earlystop and --fp8-cast apply to the strategy search (not to --oases-blocks, "
                           "--layerwise, --per-stage or --gbs auto)");
  if (opt.optim != cost::OptimizerStep::fused && other_search)
    throw core::InputError("plan: --optim applies to the strategy search (not to --oases-blocks, --layerwise, "
                           "--per-stage or --gbs auto)");
}

// The per-stage and per-layer searches asked for next to the uniform one (cli/plan_per_stage, plan_layerwise).
void run_extra_searches(PlanHandle& h, const PlanCall& a) {
  const plan::PlanOptions& opt = h.opt;
  if (a.per_stage) {
    // The same options as `strata plan --per-stage` (plan/plan_inputs: one function for both front ends).
    const auto so = plan::per_stage_options(opt, {a.objective, a.stage_schedule, a.budget_usd_per_hour, a.prices});
    h.per_stage = plan::search_per_stage(*h.m, *h.c, so);
  }
  if (a.layerwise) {
    h.layerwise = plan::plan_layerwise(*h.m, *h.c, plan::layerwise_options(opt));  // as `strata plan --layerwise`
  }
}

void check_plan_call(const PlanCall& a) {
  if (a.memory_budget_gib && !(*a.memory_budget_gib > 0 && *a.memory_budget_gib <= 1e6))
    throw core::InputError(fmt::format("plan: --memory-budget: expected GiB per GPU in (0, 1e6] (e.g. 8), got '{}'",
                                       *a.memory_budget_gib));
  const bool given = a.objective != "fastest" || a.stage_schedule != "1f1b" || a.budget_usd_per_hour != 0 ||
                     !a.prices.empty();
  if (!a.per_stage && given)
    throw core::InputError("plan: --objective/--budget/--stage-schedule/--price: need --per-stage");
  for (const auto& [type, usd] : a.prices)
    if (!(usd > 0)) throw core::InputError(fmt::format("plan: --price: '{}={}' needs a price > 0 $/hour", type, usd));
  if (a.per_stage && a.layerwise) throw core::InputError("plan: --per-stage does not combine with --layerwise");
}

// The uniform search (or the --gbs auto sweep); with layerwise=True a per-layer plan may stand in for it.
void run_uniform(PlanHandle& h, const PlanCall& a, const plan::PlanOptions& run) {
  py::gil_scoped_release nogil;
  run_extra_searches(h, a);
  try {
    if (run.global_batch == 0) {
      auto r = plan::plan_auto_gbs(*h.m, *h.c, run);
      if (!r) throw core::InputError(fmt::format("plan: model {} fits no plan on {} at any batch size (gbs auto)",
                                                 h.m->name, h.c->name));
      h.r = std::move(*r);
      h.opt.global_batch = h.r.top.front().strategy.global_batch;
    } else {
      h.r = plan::plan(*h.m, *h.c, run);
    }
  } catch (const core::InputError&) {
    if (!h.layerwise || !h.layerwise->found) throw;
    // Nothing uniform fits (e.g. under memory_budget): the per-layer plan is the best (as `strata plan --layerwise`).
    h.r = plan::PlanResult{};
    h.r.top.push_back(plan::Candidate{h.layerwise->strategy, h.layerwise->estimate, "per-layer"});
  }
}

std::shared_ptr<PlanHandle> run_plan(py::object model, py::object cluster, const PlanCall& a,
                                     const py::kwargs& keys) {
  check_plan_call(a);
  namespace lim = core::limits;
  auto h = std::make_shared<PlanRun>();
  h->m = as_model(model, opt_int_arg(a.seq, lim::kSeq, "--seq"));
  h->c = as_cluster(cluster);
  h->definitions = plan::input_definitions(input_source(model), *h->m, input_source(cluster), *h->c);
  plan::PlanOptions& opt = h->opt;
  // Every number checked first, with the CLI's flags' ranges and words (core/numbers.hpp); gbs: 'auto' or an int
  // (its range, >= 1 and gbs·seq <= 2^53, in plan::check_plan_options, whose words the CLI's --gbs shares).
  const bool auto_gbs = py::isinstance<py::str>(a.gbs) && a.gbs.cast<std::string>() == "auto";
  opt.global_batch = auto_gbs ? 0 : int_arg(a.gbs, {-9.2e18, 9.2e18}, "plan: --gbs");
  opt.top_k = static_cast<int>(int_arg(a.top, lim::kTop, "--top"));
  opt.threads = static_cast<int>(int_arg(a.threads, lim::kThreads, "--threads"));
  opt.max_tp = static_cast<int>(int_arg(a.max_tp, lim::kDegreeCap, "--max-tp"));
  opt.max_pp = static_cast<int>(int_arg(a.max_pp, lim::kDegreeCap, "--max-pp"));
  plan::check_plan_options(opt, *h->m, /*skip_global_batch=*/auto_gbs);
  opt.space = plan::parse_space(a.space, "plan: --space");
  opt.placement = plan::parse_placement_mode(a.placement, "plan: --placement");
  set_plan_keys(keys, a, opt);
  if (a.profile) {
    h->profile = std::make_shared<cost::Profile>(cost::load_profile_file(*a.profile));
    opt.cost.profile = h->profile.get();
  }
  if (!a.headroom.is_none()) opt.cost.memory_headroom = as_headroom(a.headroom, "plan: --memory-headroom");
  if (a.memory_budget_gib) opt.cost.memory_budget_bytes = *a.memory_budget_gib * core::kGiB;
  if (a.engine) opt.engine = cost::engine_profile(*a.engine, "plan: --engine");  // only what it runs, its traits
  plan::PlanOptions run = opt;
  if (!a.progress.is_none()) {
    // A borrowed handle (`progress` outlives the search): copies of the function need no GIL.
    run.progress = [cb = py::handle(a.progress)](std::int64_t done, std::int64_t total) {
      py::gil_scoped_acquire gil;
      if (PyErr_CheckSignals() != 0) throw py::error_already_set();
      cb(done, total);
    };
  }
  run_uniform(*h, a, run);
  return h;
}

py::object per_stage_view(const std::shared_ptr<PlanHandle>& h) {
  if (!h->per_stage) return py::none();
  const auto& r = *h->per_stage;
  const double tu = h->r.top.front().estimate.iteration_time_s, ts = r.estimate.iteration_time_s;
  return py::dict(py::arg("strategy") = r.strategy, py::arg("estimate") = estimate_of(*h, r.strategy, r.estimate),
                  py::arg("idle_devices") = r.idle_devices, py::arg("usd_per_hour") = r.usd_per_hour,
                  py::arg("usd_per_sample") = r.usd_per_sample, py::arg("gain_over_uniform") = ts > 0 ? tu / ts : 0.0,
                  py::arg("search_time_s") = r.search_time_s);
}

py::object layerwise_view(const std::shared_ptr<PlanHandle>& h) {
  if (!h->layerwise || !h->layerwise->found) return py::none();
  const auto& r = *h->layerwise;
  return py::dict(py::arg("strategy") = r.strategy, py::arg("estimate") = estimate_of(*h, r.strategy, r.estimate),
                  py::arg("layer_choices") = plan::describe_layer_choices(r.strategy),
                  py::arg("search_time_s") = r.search_time_s);
}

}  // namespace

void bind_plan(py::module_& mod) {
  py::class_<CandidateView>(mod, "Candidate", "One planned strategy: strategy, estimate, placement_label.")
      .def_property_readonly("strategy", [](const CandidateView& v) { return v.cand->strategy; })
      .def_property_readonly("estimate", [](const CandidateView& v) {
            return estimate_of(*v.plan, v.cand->strategy, v.cand->estimate); })
      .def_property_readonly("placement_label", [](const CandidateView& v) { return v.cand->placement_label; })
      .def("__repr__", [](const CandidateView& v) {
            return fmt::format("strata.Candidate('{}', iteration_time_s={:.6g})", cost::to_cli_string(v.cand->strategy),
                               v.cand->estimate.iteration_time_s); });
  py::class_<BaselineView>(mod, "Baseline",
                           "A built-in baseline (megatron, uniform, dp-only, zero3-only): name, found, strategy, "
                           "estimate (None when nothing fits), note.")
      .def_property_readonly("name", [](const BaselineView& v) { return v.base->name; })
      .def_property_readonly("found", [](const BaselineView& v) { return v.base->found; })
      .def_property_readonly("note", [](const BaselineView& v) { return v.base->note; })
      .def_property_readonly("strategy", [](const BaselineView& v) -> py::object {
            return v.base->found ? py::cast(v.base->strategy) : py::none(); })
      .def_property_readonly("estimate", [](const BaselineView& v) -> py::object {
            return v.base->found ? py::cast(estimate_of(*v.plan, v.base->strategy, v.base->estimate)) : py::none(); })
      .def("__repr__", [](const BaselineView& v) {
            return fmt::format("strata.Baseline('{}', found={})", v.base->name, v.base->found ? "True" : "False"); });

  py::class_<PlanHandle, std::shared_ptr<PlanHandle>>(mod, "Plan", R"(The result of strata.plan().

best, candidates (best first), baselines, explanation (list of sentences), rejected (reason, count,
example), space_size, evaluated, pruned_by_bound, search_time_s; explain() is the text of
`strata plan --explain`; to_dict() / to_json() the plan file of `strata plan --json`, which
strata.estimate(), strata.simulate() and strata.export() accept as the strategy.)")
      .def_property_readonly("model", [](const std::shared_ptr<PlanHandle>& h) { return Model{h->m}; })
      .def_property_readonly("cluster", [](const std::shared_ptr<PlanHandle>& h) { return Cluster{h->c}; })
      .def_property_readonly("gbs", [](const std::shared_ptr<PlanHandle>& h) { return h->opt.global_batch; })
      .def_property_readonly("best", [](const std::shared_ptr<PlanHandle>& h) {
            return CandidateView{h, &h->r.top.front()}; })
      .def_property_readonly("candidates", [](const std::shared_ptr<PlanHandle>& h) {
            std::vector<CandidateView> out;
            for (const auto& c : h->r.top) out.push_back({h, &c});
            return out; })
      .def_property_readonly("baselines", [](const std::shared_ptr<PlanHandle>& h) {
            std::vector<BaselineView> out;
            for (const auto& b : h->r.baselines) out.push_back({h, &b});
            return out; })
      .def_property_readonly("explanation", [](const std::shared_ptr<PlanHandle>& h) { return h->r.explanation; })
      .def_property_readonly("rejected", [](const std::shared_ptr<PlanHandle>& h) {
            py::list out;
            for (const auto& x : h->r.rejected)
              out.append(py::dict(py::arg("reason") = x.reason, py::arg("count") = x.count,
                                  py::arg("example") = x.example));
            return out; })
      .def_property_readonly("space_size", [](const std::shared_ptr<PlanHandle>& h) { return h->r.space_size; })
      .def_property_readonly("evaluated", [](const std::shared_ptr<PlanHandle>& h) { return h->r.evaluated; })
      .def_property_readonly("pruned_by_bound", [](const std::shared_ptr<PlanHandle>& h) { return h->r.pruned_by_bound; })
      .def_property_readonly("search_time_s", [](const std::shared_ptr<PlanHandle>& h) { return h->r.search_time_s; })
      .def_property_readonly("per_stage", &per_stage_view,
                             "per_stage=True: dict(strategy, estimate, idle_devices, usd_per_hour, usd_per_sample, "
                             "gain_over_uniform, search_time_s); else None.")
      .def_property_readonly("layerwise", &layerwise_view,
                             "layerwise=True: dict(strategy, estimate, layer_choices, search_time_s) of the best "
                             "per-layer plan; None when not asked or none fits.")
      .def("explain", [](const std::shared_ptr<PlanHandle>& h) { return explain_text(*h); },
           "Why this plan, the baselines' notes and what was discarded: the text of `strata plan --explain`.")
      .def("to_dict", [](const std::shared_ptr<PlanHandle>& h) {
            return to_python(plan_file(h)); },
           "The plan file `strata plan --json` writes, as a dict (with model_definition / cluster_definition when "
           "they came from files or dicts, as the CLI's).")
      .def("to_json", [](const std::shared_ptr<PlanHandle>& h) {
            return dump(plan_file(h)); },
           "The plan file's text (without the final newline); `strata estimate --strategy-file` reads it.")
      .def("__repr__", [](const std::shared_ptr<PlanHandle>& h) {
            return fmt::format("strata.Plan(model='{}', cluster='{}', gbs={}, best='{}')", h->m->name, h->c->name,
                               h->opt.global_batch, cost::to_cli_string(h->r.top.front().strategy)); });

  // Keyword defaults match the CLI's flags; strategy keys (dtype, elementwise, earlystop, fp8_cast, optim) come as
  // **keys, checked against the strategy-key table (apply_strategy_keywords).
  static const std::string doc = plan_doc();
  mod.def(
      "plan",
      [](py::object model, py::object cluster, py::object gbs, py::object seq, py::object top,
         const std::string& space, const std::string& placement, py::object threads, py::object max_tp,
         py::object max_pp,
         std::optional<std::string> profile, py::object memory_headroom, std::optional<double> memory_budget,
         bool per_stage, const std::string& objective, double budget, const std::string& stage_schedule,
         std::map<std::string, double> prices, bool layerwise, py::object progress,
         std::optional<std::string> engine, const py::kwargs& keys) {
        PlanCall a{gbs, seq, top, threads, max_tp, max_pp, space, placement, profile, memory_headroom, progress,
                   memory_budget, per_stage, layerwise, objective, stage_schedule, budget, std::move(prices),
                   std::move(engine)};
        return run_plan(std::move(model), std::move(cluster), a, keys);
      },
      doc.c_str(), py::arg("model"), py::arg("cluster"), py::arg("gbs"), py::kw_only(), py::arg("seq") = py::none(),
      py::arg("top") = 5, py::arg("space") = "full", py::arg("placement") = "hetero", py::arg("threads") = 1,
      py::arg("max_tp") = 0, py::arg("max_pp") = 0, py::arg("profile") = py::none(),
      py::arg("memory_headroom") = py::none(), py::arg("memory_budget") = py::none(), py::arg("per_stage") = false,
      py::arg("objective") = "fastest", py::arg("budget") = 0.0, py::arg("stage_schedule") = "1f1b",
      py::arg("prices") = std::map<std::string, double>{}, py::arg("layerwise") = false,
      py::arg("progress") = py::none(), py::arg("engine") = py::none());
}

}  // namespace strata::python
