// python/calls: strata.estimate, strata.simulate, strata.export and the catalog listings
// (strata.models/clusters/hardware) — each the library call its CLI command makes, with the GIL released while
// it runs, and a result whose to_dict() is the command's --json (docs/python.md).
#include <fmt/format.h>
#include <pybind11/stl.h>

#include <cmath>
#include <fstream>

#include "common.hpp"
#include "strata/core/error.hpp"
#include "strata/core/units.hpp"
#include "strata/cost/constants.hpp"
#include "strata/core/text.hpp"
#include "strata/cost/memory.hpp"
#include "strata/cost/strategy_keys.hpp"
#include "strata/export/export.hpp"
#include "strata/sim/trace.hpp"

namespace strata::python {
namespace {

constexpr const char* kEstimateDoc = R"(Time and memory of one parallel strategy: the cost model (`strata estimate`).

  model     strata.Model, a built-in name or model file path, or a dict  [--model]
  cluster   strata.Cluster, a preset / "node-type:count[+...]" / file, or a dict  [--cluster]
  strategy  strata.Strategy, the --strategy syntax ("tp=8,pp=8,mbs=1,gbs=64,v=3,recompute=selective,
            sp=on"; keys in docs/strategy.md), a strategy dict, or a strata.Plan / plan dict (its best);
            None: the strategy keywords below alone
  seq       sequence length (default: the model's)  [--seq]
  profile   measured profile JSON path  [--profile]
  memory_headroom  GiB (4) or a share ("10%") kept free per device  [--memory-headroom]
  engine    cost the strategy with this engine's stack; InputError naming what it cannot run  [--engine]

Returns a strata.Estimate (iteration_time_s, samples_per_s, tokens_per_s, tflops_per_gpu, mfu, fits,
peak_memory_bytes, stages; to_dict() equals `strata estimate --json`). strata.InputError on bad input.

Example:
  >>> strata.estimate("gpt3-175b", "dgx-a100:8", "tp=8,pp=8,mbs=1,gbs=64").iteration_time_s
  >>> strata.estimate("gpt3-175b", "dgx-a100:8", tp=8, pp=8, gbs=64, sp=True).peak_memory_bytes

Strategy keys as keywords (they override the strategy's; True/False = on/off, a list = a+b+...):
)";

// One line per strategy key, from the table (cost/strategy_keys.hpp): the keywords cannot drift from the CLI's.
std::string strategy_keywords_doc() {
  std::string out;
  for (const auto& k : cost::strategy_keys())
    out += fmt::format("  {}  {}: {} (default {})\n", k.python_name, k.values, k.help, k.default_text);
  return out;
}

// A keyword's value as the --strategy text writes it.
std::string keyword_value_text(py::handle v, const std::string& where, const std::string& key) {
  if (py::isinstance<py::bool_>(v)) return v.cast<bool>() ? "on" : "off";
  if (py::isinstance<py::int_>(v)) return std::to_string(v.cast<long long>());
  if (py::isinstance<py::str>(v)) return v.cast<std::string>();
  if (py::isinstance<py::list>(v) || py::isinstance<py::tuple>(v)) {
    std::string out;
    for (auto item : v) {
      if (!out.empty()) out += '+';
      out += keyword_value_text(item, where, key);
    }
    return out;
  }
  throw core::InputError(fmt::format("{}: {}: expected a str, int, bool or list, got {}", where, key,
                                     py::str(py::type::of(v)).cast<std::string>()));
}

// The table row of a keyword (its Python name or its --strategy name).
const cost::StrategyKey& keyword_row(const std::string& key, const std::string& where, bool plan_options_only) {
  std::vector<std::string> valid;
  for (const auto& k : cost::strategy_keys()) {
    if (plan_options_only && (!k.plan_option || k.python_name == "gbs")) continue;
    if (k.python_name == key || k.name == key) return k;
    valid.emplace_back(k.python_name);
  }
  throw core::InputError(fmt::format("{}: unknown keyword '{}' (strategy keys: {})", where, key, core::join(valid)));
}

EstimateResult run_estimate(py::object model, py::object cluster, py::object strategy, py::object seq_arg,
                            std::optional<std::string> profile, py::object headroom, std::optional<std::string> engine,
                            const py::kwargs& keys) {
  const auto seq = opt_int_arg(seq_arg, core::limits::kSeq, "--seq");
  if (py::isinstance<PlanHandle>(strategy)) strategy = py::cast(strategy.cast<std::shared_ptr<PlanHandle>>()->r.top.front().strategy);
  EstimateResult r;
  r.m = as_model(model, seq);
  r.c = as_cluster(cluster);
  cost::Strategy s;
  if (strategy.is_none()) {  // keywords alone: the same as their --strategy text
    const std::string text = strategy_keywords_text(keys, "estimate");
    if (text.empty()) throw core::InputError("estimate: give a strategy or strategy keys (e.g. tp=2, gbs=64)");
    s = cost::parse_strategy(text, "estimate");
  } else {
    s = as_strategy(strategy);
    apply_strategy_keywords(s, keys, "estimate", /*plan_options_only=*/false);  // keywords override the strategy
  }
  r.s = cost::complete_strategy(s, *r.m, *r.c);
  std::optional<cost::Profile> prof;
  cost::CostOptions opt;
  if (profile) {
    prof = cost::load_profile_file(*profile);
    opt.profile = &*prof;
  }
  if (!headroom.is_none()) opt.memory_headroom = as_headroom(headroom, "estimate: --memory-headroom");
  if (engine) {  // as `strata estimate --engine` (cli/engine_flag.cpp)
    const auto& p = cost::engine_profile(*engine, "estimate: --engine");
    // The user's keys (keywords, and the keys of a strategy text) win over the engine's traits, as on the CLI.
    std::set<std::string> given = strategy.is_none() || !py::isinstance<py::str>(strategy)
                                      ? std::set<std::string>{}
                                      : cost::strategy_text_keys(strategy.cast<std::string>());
    for (const auto& [k, v] : keys)
      if (!v.is_none()) given.insert(std::string(keyword_row(py::str(k).cast<std::string>(), "estimate", false).name));
    cost::apply_engine_traits(p, *r.c, r.s, given);
    if (const auto why = cost::engine_cannot_run(p, *r.m, *r.c, r.s))
      throw core::InputError(fmt::format("estimate: --engine {} cannot run {}", p.name, *why));
    if (headroom.is_none()) opt.memory_headroom.fraction = p.allocator_headroom_fraction;
  }
  py::gil_scoped_release nogil;
  r.e = cost::estimate(*r.m, *r.c, r.s, opt);
  return r;
}

constexpr const char* kSimulateDoc = R"(Simulate one training iteration task by task (`strata simulate`, docs/simulator.md).

  model     strata.Model / name / path / dict, or a strata.Plan (then cluster and strategy default to
            the plan's, and strategy to its best)
  cluster   as for estimate()
  strategy  strata.Strategy, --strategy text, strategy dict or plan dict
  iterations       batches to simulate (default 1; 4 for pipedream/2bw)  [--iterations]
  overlap_slowdown compute slowdown while DP traffic overlaps it (>= 1)  [--overlap-slowdown]
  bucket_mb        DP gradient bucket size in MiB  [--bucket-mb]
  trace            write a Chrome trace JSON here  [--trace]
  seq, profile, memory_headroom as for estimate()

Returns a strata.Simulation (iteration_time_s, analytical_iteration_time_s, bubble_fraction, fits,
peak_memory_bytes per device; to_dict() equals `strata simulate --json`). The GIL is released.)";

SimulationResult run_simulate(py::object model, py::object cluster, py::object strategy, py::object seq_arg,
                              py::object iterations_arg, py::object overlap_arg, py::object bucket_arg,
                              std::optional<std::string> trace, std::optional<std::string> profile,
                              py::object headroom) {
  namespace lim = core::limits;
  const auto seq = opt_int_arg(seq_arg, lim::kSeq, "--seq");
  const auto iterations_v = opt_int_arg(iterations_arg, lim::kIterations, "--iterations");
  const std::optional<int> iterations =
      iterations_v ? std::optional<int>(static_cast<int>(*iterations_v)) : std::nullopt;
  const auto overlap_slowdown = opt_number_arg(overlap_arg, lim::kOverlapSlowdown, "--overlap-slowdown");
  const auto bucket_mb = opt_number_arg(bucket_arg, lim::kBucketMib, "--bucket-mb");
  if (py::isinstance<PlanHandle>(model)) {
    const auto h = model.cast<std::shared_ptr<PlanHandle>>();
    if (cluster.is_none()) cluster = py::cast(Cluster{h->c});
    if (strategy.is_none()) strategy = py::cast(h->r.top.front().strategy);
    model = py::cast(Model{h->m});
  }
  if (cluster.is_none() || strategy.is_none())
    throw core::InputError("simulate: give a cluster and a strategy (or a strata.Plan)");
  sim::check_simulation_options(iterations, overlap_slowdown, bucket_mb);  // the CLI's checks and messages
  SimulationResult out;
  out.m = as_model(model, seq);
  out.c = as_cluster(cluster);
  out.s = cost::complete_strategy(as_strategy(strategy), *out.m, *out.c);
  sim::CostSimOptions opt;
  opt.iterations = iterations.value_or(0);
  opt.overlap_slowdown = overlap_slowdown.value_or(0);
  cost::CostConstants constants = cost::builtin_constants();
  if (bucket_mb) {
    constants.dp_bucket_bytes = *bucket_mb * core::kMiB;
    opt.cost.constants = &constants;
  }
  if (!headroom.is_none()) opt.cost.memory_headroom = as_headroom(headroom, "simulate: --memory-headroom");
  std::optional<cost::Profile> prof;
  if (profile) {
    prof = cost::load_profile_file(*profile);
    opt.cost.profile = &*prof;
  }
  sim::check_simulation_size(out.s, opt);
  sim::SimOptions so;
  so.keep_timeline = trace.has_value();
  so.record_memory_timeline = trace.has_value();
  {
    py::gil_scoped_release nogil;
    out.r = sim::simulate(*out.m, *out.c, out.s, opt, so);
  }
  if (trace) {
    std::ofstream f(*trace);
    if (!f) throw core::InputError("simulate: --trace: cannot write '" + *trace + "'");
    sim::write_chrome_trace(out.r.input, out.r.result, f);
    if (!f) throw core::InputError("simulate: --trace: error writing '" + *trace + "'");
  }
  return out;
}

struct ExportResult {
  std::string name, text, engine, replaced;  // replaced: the feature --closest changed ("" = none)
  cost::Strategy strategy;                   // the strategy written
};

ExportResult run_export(py::object what, const std::string& to, py::object model, py::object cluster, bool closest,
                        std::optional<std::string> engine_name) {
  if (py::isinstance<PlanHandle>(what)) {
    const auto h = what.cast<std::shared_ptr<PlanHandle>>();
    if (model.is_none()) model = py::cast(Model{h->m});
    if (cluster.is_none()) cluster = py::cast(Cluster{h->c});
    what = py::cast(h->r.top.front().strategy);
  } else if (py::isinstance<py::dict>(what)) {  // a plan dict names its model, cluster and seq
    const py::dict d = what.cast<py::dict>();
    if (model.is_none() && d.contains("model")) model = d["model"];
    if (cluster.is_none() && d.contains("cluster")) cluster = d["cluster"];
    if (model.is_none() || cluster.is_none()) {
      throw core::InputError("export: give model and cluster (the dict names none)");
    }
    if (d.contains("seq") && py::isinstance<py::int_>(d["seq"])) {
      auto m = as_model(model);
      const auto seq = d["seq"].cast<std::int64_t>();
      if (seq != m->seq) model = py::cast(Model{std::make_shared<model::Model>(model::with_seq(*m, seq))});
    }
  }
  if (model.is_none() || cluster.is_none())
    throw core::InputError("export: give model and cluster with a strategy (or export a strata.Plan)");
  const auto m = as_model(model);
  const auto c = as_cluster(cluster);
  const auto& p = engine_name ? cost::engine_profile(*engine_name, "export: --engine")
                              : cost::engine_profile(exporter::default_profile(exporter::parse_engine(to, "export: --to")));
  const auto engine = engine_name ? exporter::target_of(p, "export: --engine") : exporter::parse_engine(to, "export: --to");
  cost::Strategy s = cost::complete_strategy(as_strategy(what), *m, *c);
  ExportResult out;
  out.engine = std::string(exporter::to_string(engine));
  if (closest) {  // as `strata export --closest`: the fastest plan the engine runs that fits
    out.replaced = exporter::unexpressible_feature(engine, p, *m, *c, s);
    if (!out.replaced.empty()) s = exporter::closest_fitting(p, *m, *c, s);
  }
  const auto f = exporter::export_strategy(engine, p, *m, *c, s);
  out.name = f.name;
  out.text = f.text;
  out.strategy = s;
  return out;
}

void bind_results(py::module_& mod) {
  py::class_<SimulationResult>(mod, "Simulation", "A simulated iteration; to_dict() equals `strata simulate --json`.")
      .def_property_readonly("model", [](const SimulationResult& r) { return Model{r.m}; })
      .def_property_readonly("cluster", [](const SimulationResult& r) { return Cluster{r.c}; })
      .def_readonly("strategy", &SimulationResult::s)
      .def_property_readonly("iteration_time_s", [](const SimulationResult& r) { return r.r.result.iteration_time_s; })
      .def_property_readonly("analytical_iteration_time_s", [](const SimulationResult& r) {
            return r.r.estimate.iteration_time_s; })
      .def_property_readonly("bubble_fraction", [](const SimulationResult& r) { return r.r.result.bubble_fraction; })
      .def_property_readonly("fits", [](const SimulationResult& r) { return r.r.fits; })
      .def_property_readonly("not_fit_reason", [](const SimulationResult& r) { return r.r.not_fit_reason; })
      .def("to_dict", [](const SimulationResult& r) { return to_python(sim::simulation_report_json(*r.m, *r.c, r.s, r.r)); })
      .def("to_json", [](const SimulationResult& r) { return dump(sim::simulation_report_json(*r.m, *r.c, r.s, r.r)); })
      .def("__repr__", [](const SimulationResult& r) {
            return fmt::format("strata.Simulation('{}', iteration_time_s={:.6g})", cost::to_cli_string(r.s),
                               r.r.result.iteration_time_s); });
  py::class_<ExportResult>(mod, "ExportFile",
                           "An engine config: name (suggested file name), text, engine, strategy (the one written), "
                           "replaced (the feature closest=True changed, '' when none).")
      .def_readonly("name", &ExportResult::name)
      .def_readonly("text", &ExportResult::text)
      .def_readonly("engine", &ExportResult::engine)
      .def_readonly("strategy", &ExportResult::strategy)
      .def_readonly("replaced", &ExportResult::replaced)
      .def("__str__", [](const ExportResult& e) { return e.text; })
      .def("__repr__", [](const ExportResult& e) { return fmt::format("strata.ExportFile('{}')", e.name); });
}

}  // namespace

void apply_strategy_keywords(cost::Strategy& s, const py::kwargs& keys, const std::string& where,
                             bool plan_options_only) {
  for (const auto& [k, v] : keys) {
    if (v.is_none()) continue;
    const std::string key = py::str(k).cast<std::string>();
    const auto& row = keyword_row(key, where, plan_options_only);
    cost::set_strategy_key(s, row.name, keyword_value_text(v, where, key), where);
  }
}

std::string strategy_keywords_text(const py::kwargs& keys, const std::string& where) {
  std::string text;
  for (const auto& [k, v] : keys) {
    if (v.is_none()) continue;
    const std::string key = py::str(k).cast<std::string>();
    const auto& row = keyword_row(key, where, false);
    if (!text.empty()) text += ',';
    text += fmt::format("{}={}", row.name, keyword_value_text(v, where, key));
  }
  return text;
}

void bind_calls(py::module_& mod) {
  bind_results(mod);
  mod.def("models", [] { return to_python(model::zoo_listing_json()); },
          "The built-in models, one dict each (name, family, num_layers, num_blocks, hidden, heads, seq, vocab, "
          "params): `strata models --json`.");
  mod.def("hardware", [] { return to_python(hw::catalog_listing_json(catalog())); },
          "The GPU and link catalog {gpus: [...], links: [...]} (SI units): `strata hardware --json`.");
  mod.def("clusters", [] { return to_python(hw::node_presets_json(catalog())); },
          "The node presets usable in a cluster spec: `strata clusters --json`. For one cluster's nodes and links "
          "use strata.Cluster(spec).to_dict().");
  static const std::string estimate_doc = kEstimateDoc + strategy_keywords_doc();
  mod.def("estimate", &run_estimate, estimate_doc.c_str(), py::arg("model"), py::arg("cluster"),
          py::arg("strategy") = py::none(), py::kw_only(), py::arg("seq") = py::none(), py::arg("profile") = py::none(),
          py::arg("memory_headroom") = py::none(), py::arg("engine") = py::none());
  mod.def("simulate", &run_simulate, kSimulateDoc, py::arg("model"), py::arg("cluster") = py::none(),
          py::arg("strategy") = py::none(), py::kw_only(), py::arg("seq") = py::none(),
          py::arg("iterations") = py::none(), py::arg("overlap_slowdown") = py::none(),
          py::arg("bucket_mb") = py::none(), py::arg("trace") = py::none(), py::arg("profile") = py::none(),
          py::arg("memory_headroom") = py::none());
  mod.def("export", &run_export,
          R"(A plan or strategy as an engine config (`strata export`, docs/export.md).

  what     a strata.Plan (its best strategy, model and cluster), a plan dict, or a strategy
           (strata.Strategy / text / dict, then model and cluster are required)
  to       megatron | torchtitan | deepspeed | torchrun | slurm  [--to]
  closest  when the engine cannot express the strategy, export the fastest plan it can run that
           fits (the result's `replaced` names the feature); otherwise that is a strata.InputError  [--closest]
  engine   the engine profile (data/engines) whose rules apply; its target replaces `to`  [--engine]

Returns a strata.ExportFile (name, text: what `strata export --plan F --to E` prints).)",
          py::arg("what"), py::arg("to") = "megatron", py::kw_only(), py::arg("model") = py::none(),
          py::arg("cluster") = py::none(), py::arg("closest") = false, py::arg("engine") = py::none());
}

}  // namespace strata::python
