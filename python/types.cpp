// python/types: the value types of the Python module — Model, Cluster, Strategy and Estimate (docs/python.md).
// Each wraps the library's struct; to_dict() is the library's JSON of it, so it equals the CLI's --json.
#include <fmt/format.h>
#include <pybind11/stl.h>

#include "common.hpp"
#include "strata/core/json.hpp"
#include "strata/cost/strategy_keys.hpp"

namespace strata::python {
namespace {

void bind_model(py::module_& mod) {
  py::class_<Model>(mod, "Model", R"(A model: a chain of layers (embedding, blocks, head) and its shape.

Build one with Model("gpt3-175b") (a built-in name or a model JSON file, as --model takes),
Model.from_zoo(name), Model.from_file(path) or Model.from_dict(d) (the content of a model file,
docs/models.md). Every function taking a model also takes the name, path or dict directly.)")
      .def(py::init([](const std::string& name_or_path) { return Model{as_model(py::str(name_or_path))}; }),
           py::arg("name_or_path"))
      .def_static("from_zoo", [](const std::string& name) {
            return Model{std::make_shared<model::Model>(model::zoo_model(name))}; }, py::arg("name"),
          "A built-in model (strata.models() lists them); InputError for an unknown name.")
      .def_static("from_file", [](const std::string& path) {
            return Model{std::make_shared<model::Model>(model::load_model_file(path))}; }, py::arg("path"),
          "A model JSON file (docs/models.md).")
      .def_static("from_dict", [](const py::dict& d, const std::string& origin) {
            const core::StrictJsonIntegers strict;  // 2.0 for an int is a TypeError-like InputError, not coerced
            return Model{std::make_shared<model::Model>(model::model_from_json(from_python(d, ""), origin))};
          }, py::arg("d"), py::arg("origin") = "model dict",
          "A model from the content of a model file; `origin` names it in error messages.")
      .def("with_seq", [](const Model& self, py::object seq) {
            const auto n = int_arg(seq, core::limits::kSeq, "--seq");
            return Model{std::make_shared<model::Model>(model::with_seq(*self.m, n))}; }, py::arg("seq"),
          "A copy with another sequence length (transformer models only).")
      .def_property_readonly("name", [](const Model& self) { return self.m->name; })
      .def_property_readonly("family", [](const Model& self) { return self.m->family; })
      .def_property_readonly("seq", [](const Model& self) { return self.m->seq; })
      .def_property_readonly("hidden", [](const Model& self) { return self.m->hidden; })
      .def_property_readonly("heads", [](const Model& self) { return self.m->heads; })
      .def_property_readonly("vocab", [](const Model& self) { return self.m->vocab; })
      .def_property_readonly("num_layers", [](const Model& self) { return self.m->layers.size(); })
      .def_property_readonly("num_blocks", [](const Model& self) { return self.m->num_blocks(); })
      .def_property_readonly("params", [](const Model& self) { return model::total_params(*self.m); },
                             "Total parameters (tied embeddings counted once).")
      .def_property_readonly("train_flops_per_token", [](const Model& self) {
            return model::train_flops_per_token(*self.m); }, "Training FLOPs per token (forward + backward).")
      .def("to_dict", [](const Model& self) { return to_python(model::model_summary_json(*self.m)); },
           "The model's entry as in `strata models --json`.")
      .def("__repr__", [](const Model& self) {
            return fmt::format("strata.Model('{}', seq={}, params={:.4g})", self.m->name, self.m->seq,
                               model::total_params(*self.m)); });
}

void bind_cluster(py::module_& mod) {
  py::class_<Cluster>(mod, "Cluster", R"(A cluster: nodes, their GPUs and links (docs/clusters.md).

Cluster("p3.8xlarge:3+g4dn.12xlarge:1") takes what --cluster takes: a preset, the syntax
"<node-type>:<count>[+<node-type>:<count>...]" or a cluster JSON file. Also Cluster.parse(spec),
Cluster.from_file(path), Cluster.from_dict(d).)")
      .def(py::init([](const std::string& spec) { return Cluster{as_cluster(py::str(spec))}; }), py::arg("spec"))
      .def_static("parse", [](const std::string& spec) { return Cluster{as_cluster(py::str(spec))}; },
                  py::arg("spec"), "A preset, 'node-type:count[+node-type:count]' or a cluster JSON file path.")
      .def_static("from_file", [](const std::string& path) {
            return Cluster{std::make_shared<hw::Cluster>(hw::load_cluster_file(path, catalog()))}; },
          py::arg("path"), "A cluster JSON file (docs/clusters.md).")
      .def_static("from_dict", [](const py::dict& d, const std::string& origin) {
            const core::StrictJsonIntegers strict;
            return Cluster{std::make_shared<hw::Cluster>(hw::cluster_from_json(from_python(d, ""), origin,
                                                                               catalog()))};
          }, py::arg("d"), py::arg("origin") = "cluster dict",
          "A cluster from the content of a cluster file; `origin` names it in error messages.")
      .def_property_readonly("name", [](const Cluster& self) { return self.c->name; })
      .def_property_readonly("num_devices", [](const Cluster& self) { return self.c->num_devices(); })
      .def_property_readonly("num_nodes", [](const Cluster& self) { return self.c->nodes.size(); })
      .def_property_readonly("gpu_types", [](const Cluster& self) {
            std::vector<std::string> names;
            for (const auto& g : self.c->gpu_types) names.push_back(g.name);
            return names; })
      .def("to_dict", [](const Cluster& self) { return to_python(hw::cluster_summary_json(*self.c)); },
           "Nodes and link classes, as `strata clusters --show SPEC --json`.")
      .def("__repr__", [](const Cluster& self) {
            return fmt::format("strata.Cluster('{}', devices={})", self.c->name, self.c->num_devices()); });
}

void bind_strategy(py::module_& mod) {
  py::class_<cost::Strategy>(mod, "Strategy", R"(A parallel training strategy (docs/strategy.md).

Strategy("dp=2,tp=4,pp=2,mbs=1,gbs=64") parses the --strategy syntax; Strategy.from_dict(d) reads
the JSON form (to_dict() writes it). str(s) is the CLI syntax. Keys not given are completed against a
model and cluster by complete(model, cluster) (estimate() does it for you).)")
      .def(py::init([](const std::string& text) { return cost::parse_strategy(text, "--strategy"); }),
           py::arg("text"))
      .def_static("parse", [](const std::string& text) { return cost::parse_strategy(text, "--strategy"); },
                  py::arg("text"))
      .def_static("from_dict", [](const py::dict& d) { return as_strategy(d); }, py::arg("d"),
                  "A strategy's JSON form, or a plan's to_dict() (its best strategy).")
      .def("complete", [](const cost::Strategy& self, py::handle model, py::handle cluster) {
            return cost::complete_strategy(self, *as_model(model), *as_cluster(cluster)); },
          py::arg("model"), py::arg("cluster"),
          "The strategy with its defaults filled (split, placement, pp...) and every rule checked.")
      .def_readonly("dp", &cost::Strategy::dp)
      .def_readonly("tp", &cost::Strategy::tp)
      .def_readonly("pp", &cost::Strategy::pp)
      .def_readonly("mbs", &cost::Strategy::micro_batch)
      .def_readonly("gbs", &cost::Strategy::global_batch)
      .def_readonly("v", &cost::Strategy::virtual_stages)
      .def_readonly("zero", &cost::Strategy::zero_stage)
      .def_readonly("sp", &cost::Strategy::sequence_parallel)
      .def_readonly("split", &cost::Strategy::split)
      .def_readonly("placement", &cost::Strategy::placement)
      .def_property_readonly("schedule", [](const cost::Strategy& s) { return std::string(cost::to_string(s.schedule)); })
      .def_property_readonly("recompute", [](const cost::Strategy& s) { return std::string(model::to_string(s.recompute)); })
      .def("to_dict", [](const cost::Strategy& s) { return to_python(cost::to_json(s)); })
      .def("__str__", [](const cost::Strategy& s) { return cost::to_cli_string(s); })
      .def("__repr__", [](const cost::Strategy& s) { return fmt::format("strata.Strategy('{}')", cost::to_cli_string(s)); })
      .def("__eq__", [](const cost::Strategy& a, const cost::Strategy& b) { return a == b; }, py::is_operator())
      .def("__hash__", [](const cost::Strategy& s) { return std::hash<std::string>{}(cost::to_cli_string(s)); });
}

// strata.strategy_keys(): the table of strategy keys (cost/strategy_keys.hpp), one dict per key.
py::list strategy_key_table() {
  py::list out;
  for (const auto& k : cost::strategy_keys())
    out.append(py::dict(py::arg("name") = std::string(k.name), py::arg("python_name") = std::string(k.python_name),
                        py::arg("json_name") = std::string(k.json_name), py::arg("values") = std::string(k.values),
                        py::arg("default") = std::string(k.default_text), py::arg("rule") = std::string(k.rule),
                        py::arg("help") = std::string(k.help), py::arg("searched") = k.searched,
                        py::arg("plan_option") = k.plan_option, py::arg("enters_cost") = k.enters_cost));
  return out;
}

void bind_estimate(py::module_& mod) {
  py::class_<EstimateResult>(mod, "Estimate", R"(Time and memory of one strategy (the cost model, docs/cost-model.md).

Fields as `strata estimate --json`: iteration_time_s, samples_per_s, tokens_per_s, tflops_per_gpu,
mfu, fits, peak_memory_bytes, not_fit_reason, pipeline_time_s, stages; to_dict() is that JSON.)")
      .def_property_readonly("model", [](const EstimateResult& r) { return Model{r.m}; })
      .def_property_readonly("cluster", [](const EstimateResult& r) { return Cluster{r.c}; })
      .def_readonly("strategy", &EstimateResult::s, "The complete strategy estimated.")
      .def_property_readonly("iteration_time_s", [](const EstimateResult& r) { return r.e.iteration_time_s; })
      .def_property_readonly("pipeline_time_s", [](const EstimateResult& r) { return r.e.pipeline_time_s; })
      .def_property_readonly("samples_per_s", [](const EstimateResult& r) { return r.e.samples_per_s; })
      .def_property_readonly("tokens_per_s", [](const EstimateResult& r) { return r.e.tokens_per_s; })
      .def_property_readonly("tflops_per_gpu", [](const EstimateResult& r) { return r.e.tflops_per_gpu; })
      .def_property_readonly("mfu", [](const EstimateResult& r) { return r.e.mfu; })
      .def_property_readonly("fits", [](const EstimateResult& r) { return r.e.fits; })
      .def_property_readonly("not_fit_reason", [](const EstimateResult& r) { return r.e.not_fit_reason; })
      .def_property_readonly("peak_memory_bytes", [](const EstimateResult& r) { return r.e.peak_memory_bytes; })
      .def_property_readonly("stages", [](const EstimateResult& r) { return to_python(cost::to_json(r.e)["stages"]); },
                             "One dict per pipeline stage (time_s, compute_s, memory_bytes, ...).")
      .def("to_dict", [](const EstimateResult& r) { return to_python(cost::estimate_report_json(*r.m, *r.c, r.s, r.e)); },
           "The JSON of `strata estimate --json` for the same inputs.")
      .def("to_json", [](const EstimateResult& r) { return dump(cost::estimate_report_json(*r.m, *r.c, r.s, r.e)); },
           "The text `strata estimate --json` prints (without the final newline).")
      .def("__repr__", [](const EstimateResult& r) {
            return fmt::format("strata.Estimate('{}', iteration_time_s={:.6g}, fits={})", cost::to_cli_string(r.s),
                               r.e.iteration_time_s, r.e.fits ? "True" : "False"); });
}

}  // namespace

void bind_types(py::module_& mod) {
  bind_model(mod);
  bind_cluster(mod);
  bind_strategy(mod);
  mod.def("strategy_keys", &strategy_key_table,
          "The strategy keys, one dict each (name, python_name, json_name, values, default, rule, help, searched, "
          "plan_option, enters_cost): the table the --strategy parser, the help and these keywords come from.");
  bind_estimate(mod);
}

}  // namespace strata::python
