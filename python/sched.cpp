// python/sched: the extension `strata._strata_sched` — strata.allocate (`strata allocate`: one Gavel policy solve)
// and its Allocation result. A module of its own because it links COIN-OR (shared libraries, with OpenBLAS):
// loaded on the first use of strata.allocate (python/strata/__init__.py), so `import strata` does not pay their
// ~8 ms of loading and relocation (docs/python.md).
#include <fmt/format.h>
#include <pybind11/stl.h>

#include "common.hpp"
#include "strata/core/error.hpp"
#include "strata/sched/planner_throughputs.hpp"
#include "strata/sched/policy.hpp"
#include "strata/sched/simulate.hpp"

namespace strata::python {
namespace {

struct AllocationResult {
  sched::Problem p;
  sched::Policy policy;
  sched::PolicyOptions opt;
  sched::Allocation x;
};

AllocationResult run_allocate(py::object throughputs, const std::string& policy, bool space_sharing,
                              bool placement_sensitive, bool water_filling, const std::string& price,
                              py::object budget_arg, bool from_planner) {
  AllocationResult r;
  // -1 (the default) = no budget; anything else is a budget in $ within the CLI's range (core/numbers.hpp).
  const bool numeric = !py::isinstance<py::bool_>(budget_arg) &&
                       (py::isinstance<py::int_>(budget_arg) || py::isinstance<py::float_>(budget_arg));
  const bool no_budget = numeric && budget_arg.cast<double>() == -1.0;
  const double budget = no_budget ? -1.0 : number_arg(budget_arg, core::limits::kBudget, "--budget");
  if (!no_budget && policy.find("makespan-budget") == std::string::npos)  // the CLI's check and words (cmd_sched)
    throw core::InputError(fmt::format("--budget: applies to the makespan-budget policy only, not to '{}'", policy));
  r.policy = sched::parse_policy(policy);
  const std::string origin = py::isinstance<py::str>(throughputs) ? throughputs.cast<std::string>() : "throughputs dict";
  if (py::isinstance<py::str>(throughputs)) r.p = sched::load_problem(origin, /*require_workers=*/true);
  else {
    const core::StrictJsonIntegers strict;  // a dict's 2.0 for an int is refused, as in strata.Model.from_dict
    r.p = sched::problem_from_json(from_python(throughputs, ""), origin, /*require_workers=*/true);
  }
  sched::apply_conventions(sched::Conventions::kGavel, r.opt);  // the CLI's default conventions (docs/scheduler.md)
  r.opt.space_sharing = space_sharing;
  r.opt.placement_sensitive = placement_sensitive;
  r.opt.water_filling = water_filling;
  if (price == "on-demand") r.opt.price = sched::PriceKind::kOnDemand;
  else if (price == "spot") r.opt.price = sched::PriceKind::kSpot;
  else throw core::InputError("--price: '" + price + "' (valid: on-demand, spot)");
  r.opt.budget_usd = budget;
  py::gil_scoped_release nogil;
  if (from_planner) sched::fill_throughputs_from_planner(r.p, catalog(), {});
  sched::validate_problem(r.p, origin);
  r.x = sched::allocate(r.p, r.policy, r.opt);
  return r;
}

nlohmann::ordered_json allocation_json(const AllocationResult& a) {
  return sched::allocation_report_json(a.p, a.policy, a.x, a.opt);
}

void bind_sched(py::module_& mod) {
  py::class_<AllocationResult>(mod, "Allocation", "A policy solve; to_dict() equals `strata allocate --json`.")
      .def_property_readonly("policy", [](const AllocationResult& a) { return sched::policy_name(a.policy); })
      .def_property_readonly("objective", [](const AllocationResult& a) { return a.x.objective; })
      .def_property_readonly("objective_name", [](const AllocationResult& a) { return a.x.objective_name; })
      .def_property_readonly("note", [](const AllocationResult& a) { return a.x.note; })
      .def_property_readonly("allocation", [](const AllocationResult& a) { return to_python(allocation_json(a)["allocation"]); },
                             "{job: {gpu type: time fraction}}")
      .def_property_readonly("effective_throughput", [](const AllocationResult& a) {
            return to_python(allocation_json(a)["effective_throughput"]); })
      .def_property_readonly("normalized_throughput", [](const AllocationResult& a) {
            return to_python(allocation_json(a)["normalized_throughput"]); })
      .def("to_dict", [](const AllocationResult& a) { return to_python(allocation_json(a)); });
  mod.def("allocate", &run_allocate,
          R"(Solve one Gavel scheduling policy (`strata allocate`, docs/scheduler.md).

  throughputs  a throughputs file path, or its content as a dict ({"workers": {type: count},
               "jobs": [{name, throughputs: {type: steps/s}, ...}], ...})  [--throughputs]
  policy       max-min-fairness (default), finish-time-fairness, makespan, fifo, sjf, max-throughput,
               min-cost, min-cost-slo, makespan-budget, hierarchical, or '<name>-agnostic'  [--policy]
  space_sharing, placement_sensitive, water_filling (default False: Gavel's single LP, as the CLI),
  price ("on-demand" | "spot"), budget ($),
  from_planner (jobs' throughputs from strata's planner)  [the flags of the same names]

Returns a strata.Allocation (allocation {job: {type: X}}, effective_throughput, objective;
to_dict() equals `strata allocate --json`). The GIL is released while it solves.)",
          py::arg("throughputs"), py::arg("policy") = "max-min-fairness", py::kw_only(),
          py::arg("space_sharing") = false, py::arg("placement_sensitive") = false, py::arg("water_filling") = false,
          py::arg("price") = "on-demand", py::arg("budget") = -1, py::arg("from_planner") = false);
}

}  // namespace
}  // namespace strata::python

PYBIND11_MODULE(_strata_sched, mod) {
  namespace py = pybind11;
  mod.doc() = "strata's scheduler (strata.allocate), loaded on first use";
  // InputError is strata._strata's exception class (one class for the whole package).
  static py::handle input_error = py::object(py::module_::import("strata._strata").attr("InputError")).release();
  py::register_local_exception_translator([](std::exception_ptr p) {
    try {
      if (p) std::rethrow_exception(p);
    } catch (const strata::core::InputError& e) {
      PyErr_SetString(input_error.ptr(), e.what());
    }
  });
  strata::python::bind_sched(mod);
}
