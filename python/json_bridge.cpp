// python/json_bridge: nlohmann JSON ↔ Python objects (see common.hpp), the catalog and the argument coercions
// every binding shares.
#include <fmt/format.h>

#include <cmath>

#include "common.hpp"
#include "strata/core/error.hpp"
#include "strata/core/json.hpp"
#include "strata/core/numbers.hpp"
#include "strata/cost/memory.hpp"

namespace strata::python {

py::object to_python(const nlohmann::ordered_json& j) {
  using T = nlohmann::ordered_json::value_t;
  switch (j.type()) {
    case T::object: {
      py::dict d;
      for (const auto& [k, v] : j.items()) d[py::str(k)] = to_python(v);
      return d;
    }
    case T::array: {
      py::list l;
      for (const auto& v : j) l.append(to_python(v));
      return l;
    }
    case T::string: return py::str(j.get_ref<const std::string&>());
    case T::boolean: return py::bool_(j.get<bool>());
    case T::number_integer: return py::int_(j.get<std::int64_t>());
    case T::number_unsigned: return py::int_(j.get<std::uint64_t>());
    case T::number_float: {
      const double v = j.get<double>();
      if (!std::isfinite(v)) return py::none();
      return py::float_(v);
    }
    default: return py::none();
  }
}

namespace {
nlohmann::json from_python_at(py::handle o, const std::string& where, std::size_t depth) {
  if (o.is_none()) return nullptr;
  if (py::isinstance<py::bool_>(o)) return o.cast<bool>();
  if (py::isinstance<py::int_>(o)) {
    try {
      return o.cast<std::int64_t>();
    } catch (const py::cast_error&) {
      throw core::InputError(fmt::format("{}: integer {} out of range", where, py::str(o).cast<std::string>()));
    }
  }
  if (py::isinstance<py::float_>(o)) return o.cast<double>();
  if (py::isinstance<py::str>(o)) return o.cast<std::string>();
  const bool nested = py::isinstance<py::dict>(o) || py::isinstance<py::list>(o) || py::isinstance<py::tuple>(o);
  // The same bound as JSON files (core::limits::kMaxJsonDepth): a dict that contains itself, or lists nested
  // 30,000 deep, would otherwise recurse until the interpreter's C stack overflows.
  if (nested && depth >= core::limits::kMaxJsonDepth)
    throw core::InputError(fmt::format("{}: nested deeper than {} levels of dicts and lists (one that contains "
                                       "itself?)", where.empty() ? "value" : where, core::limits::kMaxJsonDepth));
  if (py::isinstance<py::dict>(o)) {
    nlohmann::json j = nlohmann::json::object();
    for (const auto& [k, v] : o.cast<py::dict>()) {
      if (!py::isinstance<py::str>(k))
        throw core::InputError(fmt::format("{}: key {} is not a string", where, py::repr(k).cast<std::string>()));
      const std::string key = k.cast<std::string>();
      j[key] = from_python_at(v, where.empty() ? key : where + "." + key, depth + 1);
    }
    return j;
  }
  if (py::isinstance<py::list>(o) || py::isinstance<py::tuple>(o)) {
    nlohmann::json j = nlohmann::json::array();
    std::size_t i = 0;
    for (const auto& v : o) j.push_back(from_python_at(v, fmt::format("{}[{}]", where, i++), depth + 1));
    return j;
  }
  throw core::InputError(fmt::format("{}: cannot be read as JSON (a {})", where,
                                     py::str(py::type::of(o).attr("__name__")).cast<std::string>()));
}

std::string type_of(py::handle o) { return py::str(py::type::of(o).attr("__name__")).cast<std::string>(); }
}  // namespace

nlohmann::json from_python(py::handle o, const std::string& where) { return from_python_at(o, where, 0); }

std::int64_t int_arg(py::handle o, core::Range r, const std::string& name) {
  // bool is a subclass of int in Python and a float may hold 2.0: both are refused, not coerced.
  if (py::isinstance<py::bool_>(o) || !py::isinstance<py::int_>(o))
    throw py::type_error(fmt::format("{}: expected an int, got {} ({})", name, type_of(o),
                                     py::repr(o).cast<std::string>().substr(0, 40)));
  std::int64_t v = 0;
  try {
    v = o.cast<std::int64_t>();
  } catch (const py::cast_error&) {
    // Beyond int64: the same words as any out-of-range value, with the number as Python prints it.
    throw core::InputError(fmt::format("{}: must be an integer >= {} and <= {}, got {}", name, core::format_bound(r.lo),
                                       core::format_bound(r.hi), py::str(o).cast<std::string>().substr(0, 40)));
  }
  return core::check_integer(static_cast<double>(v), r, name);
}

std::optional<std::int64_t> opt_int_arg(py::handle o, core::Range r, const std::string& name) {
  if (o.is_none()) return std::nullopt;
  return int_arg(o, r, name);
}

double number_arg(py::handle o, core::Range r, const std::string& name) {
  if (py::isinstance<py::bool_>(o) || !(py::isinstance<py::int_>(o) || py::isinstance<py::float_>(o)))
    throw py::type_error(fmt::format("{}: expected a number (int or float), got {} ({})", name, type_of(o),
                                     py::repr(o).cast<std::string>().substr(0, 40)));
  return core::check_number(o.cast<double>(), r, name);
}

std::optional<double> opt_number_arg(py::handle o, core::Range r, const std::string& name) {
  if (o.is_none()) return std::nullopt;
  return number_arg(o, r, name);
}

std::string dump(const nlohmann::ordered_json& j) { return core::dump_json(j); }

const hw::Catalog& catalog() {
  static const hw::Catalog cat = hw::builtin_catalog();
  return cat;
}

std::shared_ptr<const model::Model> as_model(py::handle o, std::optional<std::int64_t> seq) {
  std::shared_ptr<const model::Model> m;
  if (py::isinstance<Model>(o)) m = o.cast<const Model&>().m;
  else if (py::isinstance<py::str>(o)) m = std::make_shared<model::Model>(model::resolve_model(o.cast<std::string>()));
  else if (py::isinstance<py::dict>(o)) {
    // A dict's 2.0 for an int is refused, not coerced (core/numbers.hpp StrictJsonIntegers); files keep JSON's rule.
    const core::StrictJsonIntegers strict;
    m = std::make_shared<model::Model>(model::model_from_json(from_python(o, ""), "model dict"));
  }
  else throw core::InputError("model: expected a strata.Model, a model name or file path, or a dict");
  if (seq) m = std::make_shared<model::Model>(model::with_seq(*m, *seq));
  return m;
}

std::shared_ptr<const hw::Cluster> as_cluster(py::handle o) {
  if (py::isinstance<Cluster>(o)) return o.cast<const Cluster&>().c;
  if (py::isinstance<py::str>(o))
    return std::make_shared<hw::Cluster>(hw::resolve_cluster(o.cast<std::string>(), catalog()));
  if (py::isinstance<py::dict>(o)) {
    const core::StrictJsonIntegers strict;
    return std::make_shared<hw::Cluster>(hw::cluster_from_json(from_python(o, ""), "cluster dict", catalog()));
  }
  throw core::InputError("cluster: expected a strata.Cluster, a cluster spec or file path, or a dict");
}

cost::Strategy as_strategy(py::handle o, const std::string& where) {
  if (py::isinstance<cost::Strategy>(o)) return o.cast<cost::Strategy>();
  if (py::isinstance<py::str>(o)) return cost::parse_strategy(o.cast<std::string>(), where);
  if (py::isinstance<py::dict>(o)) {
    const core::StrictJsonIntegers strict;
    const nlohmann::json j = from_python(o, "");
    // A plan's to_dict() (as `estimate --strategy-file plan.json`): its best strategy.
    if (j.contains("best")) {
      const core::JsonWhere w{"plan dict", ""};
      const auto& st = core::require_field(core::require_field(j, "best", w), "strategy", w.field("best"));
      return cost::strategy_from_json(st, "plan dict: best.strategy");
    }
    if (j.contains("strategy") && j["strategy"].is_object())
      return cost::strategy_from_json(j["strategy"], "strategy dict: strategy");
    return cost::strategy_from_json(j, "strategy dict");
  }
  throw core::InputError("strategy: expected a strata.Strategy, a strategy string like \"dp=2,tp=4,gbs=64\" or a dict");
}

cost::MemoryHeadroom as_headroom(py::handle o, const std::string& flag) {
  const std::string text = py::isinstance<py::str>(o) ? o.cast<std::string>() : py::str(o).cast<std::string>();
  return cost::parse_memory_headroom(text, flag);
}

}  // namespace strata::python
