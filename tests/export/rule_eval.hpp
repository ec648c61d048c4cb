// tests/export/rule_eval: evaluates data/engines/rules.json conditions on an exported configuration flattened to
// key -> value (the condition language is described in that file's _doc).
#pragma once
#include <map>
#include <stdexcept>
#include <string>

#include <nlohmann/json.hpp>

namespace strata_test {

struct FlatConfig {
  std::map<std::string, nlohmann::json> values;    // what the file states
  std::map<std::string, nlohmann::json> defaults;  // the engine's defaults (rules.json "defaults")
  const nlohmann::json* get(const std::string& key) const {
    if (auto it = values.find(key); it != values.end()) return &it->second;
    if (auto it = defaults.find(key); it != defaults.end()) return &it->second;
    return nullptr;
  }
};

inline nlohmann::json operand(const nlohmann::json& op, const FlatConfig& f) {
  if (op.is_string() && !op.get<std::string>().empty() && op.get<std::string>()[0] == '$') {
    const auto* v = f.get(op.get<std::string>().substr(1));
    return v ? *v : nlohmann::json();  // null: absent
  }
  if (op.is_object() && (op.contains("mul") || op.contains("div"))) {
    const bool mul = op.contains("mul");
    const auto& args = mul ? op.at("mul") : op.at("div");
    long long acc = 0;
    for (std::size_t i = 0; i < args.size(); ++i) {
      const auto v = operand(args[i], f);
      if (!v.is_number_integer()) throw std::runtime_error("non-integer operand " + args[i].dump());
      const long long x = v.get<long long>();
      if (i == 0) acc = x;
      else if (mul) acc *= x;
      else {
        if (x == 0 || acc % x != 0) throw std::runtime_error("inexact division in " + op.dump());
        acc /= x;
      }
    }
    return acc;
  }
  return op;
}

// Numbers compare as numbers; a string "1" and the number 1 compare equal (environment values are strings).
inline int compare(const nlohmann::json& a, const nlohmann::json& b) {
  auto num = [](const nlohmann::json& x, double& out) {
    if (x.is_number()) return out = x.get<double>(), true;
    if (x.is_string()) {
      try {
        std::size_t used = 0;
        out = std::stod(x.get<std::string>(), &used);
        return used == x.get<std::string>().size();
      } catch (...) {
        return false;
      }
    }
    return false;
  };
  double x = 0, y = 0;
  if (num(a, x) && num(b, y)) return x < y ? -1 : x > y ? 1 : 0;
  return a == b ? 0 : 2;  // 2: unequal and unordered
}

inline bool holds(const nlohmann::json& c, const FlatConfig& f) {
  if (c.contains("all")) {
    for (const auto& x : c.at("all"))
      if (!holds(x, f)) return false;
    return true;
  }
  if (c.contains("any")) {
    for (const auto& x : c.at("any"))
      if (holds(x, f)) return true;
    return false;
  }
  if (c.contains("not")) return !holds(c.at("not"), f);
  if (c.contains("present")) return !operand(c.at("present"), f).is_null();
  if (c.contains("absent")) return operand(c.at("absent"), f).is_null();
  if (c.contains("mod0")) {
    const auto a = operand(c.at("mod0")[0], f), b = operand(c.at("mod0")[1], f);
    if (!a.is_number_integer() || !b.is_number_integer() || b.get<long long>() == 0)
      throw std::runtime_error("mod0 needs integers: " + c.dump());
    return a.get<long long>() % b.get<long long>() == 0;
  }
  for (const char* op : {"eq", "ne", "gt", "ge", "lt", "le"})
    if (c.contains(op)) {
      const int r = compare(operand(c.at(op)[0], f), operand(c.at(op)[1], f));
      const std::string o = op;
      if (o == "eq") return r == 0;
      if (o == "ne") return r != 0;
      if (r == 2) return false;
      return o == "gt" ? r > 0 : o == "ge" ? r >= 0 : o == "lt" ? r < 0 : r <= 0;
    }
  throw std::runtime_error("unknown condition " + c.dump());
}

}  // namespace strata_test
