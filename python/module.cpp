// python/module: the extension `strata._strata` behind `import strata` (python/strata/__init__.py): the
// InputError exception and the bindings of types.cpp, plan.cpp and calls.cpp. Layout and API: docs/python.md.
#include "common.hpp"
#include "strata/core/error.hpp"

PYBIND11_MODULE(_strata, mod) {
  namespace py = pybind11;
  mod.doc() = "strata's C++ library (see the `strata` package)";
  // Bad user input: the CLI's one-line message (exit 2 there), a ValueError here.
  py::register_exception<strata::core::InputError>(mod, "InputError", PyExc_ValueError);
  strata::python::bind_types(mod);
  strata::python::bind_plan(mod);
  strata::python::bind_calls(mod);
}
