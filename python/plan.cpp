// python/plan: strata.plan() — the planner (plan::plan) with the GIL released and an optional progress
// callback — and its result types Plan, Candidate and Baseline (docs/python.md). Plan.to_dict() is
// plan::plan_to_json, the plan file `strata plan --json` writes.
#include <fmt/format.h>
#include <pybind11/functional.h>
#include <pybind11/stl.h>

#include "common.hpp"
#include "strata/core/error.hpp"
#include "strata/cost/memory.hpp"

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
  gbs        global batch size in samples per iteration  [--gbs]
  seq        sequence length (default: the model's)  [--seq]
  top        how many plans to keep (default 5)  [--top]
  space      "3d" (dp/tp/pp/mbs with 1F1B, as AMP), "full" (default: + gpipe, interleaved, ZeRO,
             recompute, sp) or "all" (+ pipedream, 2bw)  [--space]
  placement  "megatron", "hetero" (default) or "anneal"  [--placement]
  threads    worker threads (results identical for any count)  [--threads]
  dtype      fp32, tf32, fp16, bf16 (default) or fp8  [--dtype]
  max_tp, max_pp  largest degrees to consider (0 = no limit)  [--max-tp, --max-pp]
  profile    measured profile JSON path (`strata profile`)  [--profile]
  memory_headroom  memory kept free per device: GiB (4) or a share ("10%")  [--memory-headroom]
  progress   callable(done, total) called between search batches; raising stops the search

Returns a strata.Plan: best (a Candidate: strategy, estimate), candidates (best first), baselines
(megatron, uniform, dp-only, zero3-only), explain(), to_dict() (the plan file of `--json`).
Raises strata.InputError (a ValueError) with the CLI's one-line message on bad input.

Example:
  >>> import strata
  >>> p = strata.plan("amp-gpt2", "p3.8xlarge:3+g4dn.12xlarge:1", gbs=32)
  >>> p.best.strategy, p.best.estimate.iteration_time_s)";

std::shared_ptr<PlanHandle> run_plan(py::object model, py::object cluster, py::object gbs, py::object seq,
                                     py::object top, const std::string& space, const std::string& placement,
                                     py::object threads, const std::string& dtype, py::object max_tp,
                                     py::object max_pp, std::optional<std::string> profile, py::object headroom,
                                     py::object progress) {
  namespace lim = core::limits;
  auto h = std::make_shared<PlanHandle>();
  plan::PlanOptions& opt = h->opt;
  // Every number checked first, with the CLI's flags' ranges and words (core/numbers.hpp).
  // gbs: the type here; its range (>= 1, gbs·seq <= 2^53) in plan::check_plan_options, whose words the CLI's
  // --gbs parser shares ("plan: --gbs: must be >= 1 ...").
  opt.global_batch = int_arg(gbs, {-9.2e18, 9.2e18}, "plan: --gbs");
  const auto seq_v = opt_int_arg(seq, lim::kSeq, "--seq");
  opt.top_k = static_cast<int>(int_arg(top, lim::kTop, "--top"));
  opt.threads = static_cast<int>(int_arg(threads, lim::kThreads, "--threads"));
  opt.max_tp = static_cast<int>(int_arg(max_tp, lim::kDegreeCap, "--max-tp"));
  opt.max_pp = static_cast<int>(int_arg(max_pp, lim::kDegreeCap, "--max-pp"));
  h->m = as_model(model, seq_v);
  h->c = as_cluster(cluster);
  plan::check_plan_options(opt, *h->m);
  opt.space = plan::parse_space(space, "plan: --space");
  opt.placement = plan::parse_placement_mode(placement, "plan: --placement");
  opt.dtype = hw::parse_dtype(dtype, "plan: --dtype");
  if (profile) {
    h->profile = std::make_shared<cost::Profile>(cost::load_profile_file(*profile));
    opt.cost.profile = h->profile.get();
  }
  if (!headroom.is_none()) opt.cost.memory_headroom = as_headroom(headroom, "plan: --memory-headroom");
  plan::PlanOptions run = opt;
  if (!progress.is_none()) {
    // A borrowed handle (`progress` outlives the search): copies of the function need no GIL.
    run.progress = [cb = py::handle(progress)](std::int64_t done, std::int64_t total) {
      py::gil_scoped_acquire gil;
      if (PyErr_CheckSignals() != 0) throw py::error_already_set();
      cb(done, total);
    };
  }
  {
    py::gil_scoped_release nogil;
    h->r = plan::plan(*h->m, *h->c, run);
  }
  return h;
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
      .def("explain", [](const std::shared_ptr<PlanHandle>& h) { return explain_text(*h); },
           "Why this plan, the baselines' notes and what was discarded: the text of `strata plan --explain`.")
      .def("to_dict", [](const std::shared_ptr<PlanHandle>& h) {
            return to_python(plan::plan_to_json(h->r, *h->m, *h->c, h->opt)); },
           "The plan file `strata plan --json` writes, as a dict.")
      .def("to_json", [](const std::shared_ptr<PlanHandle>& h) {
            return dump(plan::plan_to_json(h->r, *h->m, *h->c, h->opt)); },
           "The plan file's text (without the final newline); `strata estimate --strategy-file` reads it.")
      .def("__repr__", [](const std::shared_ptr<PlanHandle>& h) {
            return fmt::format("strata.Plan(model='{}', cluster='{}', gbs={}, best='{}')", h->m->name, h->c->name,
                               h->opt.global_batch, cost::to_cli_string(h->r.top.front().strategy)); });

  mod.def("plan", &run_plan, kPlanDoc, py::arg("model"), py::arg("cluster"), py::arg("gbs"), py::kw_only(),
          py::arg("seq") = py::none(), py::arg("top") = 5, py::arg("space") = "full", py::arg("placement") = "hetero",
          py::arg("threads") = 1, py::arg("dtype") = "bf16", py::arg("max_tp") = 0, py::arg("max_pp") = 0,
          py::arg("profile") = py::none(), py::arg("memory_headroom") = py::none(),
          py::arg("progress") = py::none());
}

}  // namespace strata::python
