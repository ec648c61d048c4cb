// sched/gavel_table: reads Gavel's measured throughput table (scheduler/simulation_throughputs.json at
// stanford-futuredata/gavel c4fa400; format: ../shared/gavel/README.md) into a job-type table, so that
// `strata schedule --throughputs` takes Gavel's own file and generates traces from the same 26 job types.
#include <fmt/format.h>

#include <algorithm>
#include <charconv>
#include <cmath>
#include <set>

#include "strata/core/error.hpp"
#include "strata/core/text.hpp"
#include "strata/sched/simulate.hpp"

namespace strata::sched {
namespace {

constexpr const char* kUnconsolidated = "_unconsolidated";

bool ends_with(const std::string& s, const std::string& suffix) {
  return s.size() > suffix.size() && s.compare(s.size() - suffix.size(), suffix.size(), suffix) == 0;
}

struct Key {
  std::string type;
  int scale_factor = 0;
};

// "('ResNet-50 (batch size 16)', 2)" -> {"ResNet-50 (batch size 16)", 2}; nullopt-like (sf 0) when malformed.
Key parse_key(const std::string& k) {
  Key out;
  if (k.size() < 8 || k.compare(0, 2, "('") != 0 || k.back() != ')') return out;
  const auto close = k.rfind("', ");
  if (close == std::string::npos || close < 2) return out;
  out.type = k.substr(2, close - 2);
  const std::string num = k.substr(close + 3, k.size() - close - 4);
  int v = 0;
  auto [p, ec] = std::from_chars(num.data(), num.data() + num.size(), v);
  if (ec != std::errc() || p != num.data() + num.size() || v < 1 || v > 1024 || out.type.empty()) return Key{};
  out.scale_factor = v;
  return out;
}

Key require_key(const std::string& k, const core::JsonWhere& where) {
  const Key key = parse_key(k);
  if (key.scale_factor == 0)
    core::fail(where.field(k), "expected a key \"('<job type>', <scale factor>)\" (Gavel's format)");
  return key;
}

double steps_per_s(const core::Json& v, const core::JsonWhere& at) {
  if (!v.is_number()) core::fail(at, fmt::format("expected a number (steps/s), got {}", v.type_name()));
  const double x = v.get<double>();
  if (!std::isfinite(x) || x < 0) core::fail(at, "steps/s must be finite and >= 0");
  return x;
}

// The GPU types (keys without the _unconsolidated suffix), in sorted order (the file's order is not meaningful).
std::vector<std::string> gpu_types(const core::Json& j, const core::JsonWhere& root) {
  std::vector<std::string> out;
  for (auto it = j.begin(); it != j.end(); ++it) {
    core::expect_object(it.value(), root.field(it.key()));
    if (!ends_with(it.key(), kUnconsolidated)) out.push_back(it.key());
  }
  for (auto it = j.begin(); it != j.end(); ++it)
    if (ends_with(it.key(), kUnconsolidated)) {
      const std::string base = it.key().substr(0, it.key().size() - std::string(kUnconsolidated).size());
      if (std::find(out.begin(), out.end(), base) == out.end())
        core::fail(root.field(it.key()), "no consolidated table \"" + base + "\" for this unconsolidated one");
    }
  if (out.empty()) core::fail(root, "no GPU type (expected keys like \"v100\", \"v100_unconsolidated\")");
  std::sort(out.begin(), out.end());
  return out;
}

// Every (job type, scale factor) entry of the consolidated tables, job types in sorted order.
void read_entries(const core::Json& j, const std::vector<std::string>& gpus, const core::JsonWhere& root,
                  JobTypeTable& t) {
  std::set<std::pair<std::string, int>> keys;
  for (const auto& g : gpus)
    for (auto it = j.at(g).begin(); it != j.at(g).end(); ++it) {
      const Key k = require_key(it.key(), root.field(g));
      keys.insert({k.type, k.scale_factor});
    }
  for (const auto& [type, sf] : keys) {
    if (t.types.jobs.empty() || t.types.jobs.back().name != type) {
      JobSpec js;
      js.name = js.job_type = type;
      js.throughputs.assign(gpus.size(), 0.0);
      t.types.jobs.push_back(std::move(js));
    }
    JobTypeTable::Measured m;
    m.type = t.types.num_jobs() - 1;
    m.scale_factor = sf;
    m.consolidated.assign(gpus.size(), 0.0);
    m.unconsolidated.assign(gpus.size(), 0.0);
    const std::string key = fmt::format("('{}', {})", type, sf);
    for (std::size_t g = 0; g < gpus.size(); ++g) {
      const core::JsonWhere at = root.field(gpus[g]).field(key);
      if (j.at(gpus[g]).contains(key)) m.consolidated[g] = steps_per_s(core::require_field(j.at(gpus[g]).at(key), "null", at), at.field("null"));
      const std::string u = gpus[g] + kUnconsolidated;
      // Gavel's table lacks a few unconsolidated entries (k80): the consolidated figure stands in for them.
      m.unconsolidated[g] = m.consolidated[g];
      if (j.contains(u) && j.at(u).contains(key)) {
        const core::JsonWhere uat = root.field(u).field(key);
        m.unconsolidated[g] = steps_per_s(core::require_field(j.at(u).at(key), "null", uat), uat.field("null"));
      }
    }
    if (sf == 1) t.types.jobs.back().throughputs = m.consolidated;
    t.measured.push_back(std::move(m));
  }
}

int job_type_index(const JobTypeTable& t, const std::string& name) {
  for (int i = 0; i < t.types.num_jobs(); ++i)
    if (t.types.jobs[i].name == name) return i;
  return -1;
}

// Co-located pairs: in entry a's object, key b -> [steps/s of a, of b] (consolidated tables only).
void read_pairs(const core::Json& j, const std::vector<std::string>& gpus, const core::JsonWhere& root,
                JobTypeTable& t) {
  for (std::size_t g = 0; g < gpus.size(); ++g)
    for (auto it = j.at(gpus[g]).begin(); it != j.at(gpus[g]).end(); ++it) {
      const Key ka = parse_key(it.key());
      const int a = t.measured_index(job_type_index(t, ka.type), ka.scale_factor);
      const core::JsonWhere at = root.field(gpus[g]).field(it.key());
      core::expect_object(it.value(), at);
      for (auto p = it.value().begin(); p != it.value().end(); ++p) {
        if (p.key() == "null") continue;
        const Key kb = require_key(p.key(), at);
        const int b = t.measured_index(job_type_index(t, kb.type), kb.scale_factor);
        if (b < 0) core::fail(at.field(p.key()), "pairs with a job type that has no entry of its own");
        const auto& v = p.value();
        if (!v.is_array() || v.size() != 2) core::fail(at.field(p.key()), "expected [steps/s of this job, of the other]");
        auto& row = t.measured_pairs[{a, b}];
        row.resize(gpus.size(), {0.0, 0.0});
        row[g] = {steps_per_s(v[0], at.field(p.key())), steps_per_s(v[1], at.field(p.key()))};
      }
    }
}

}  // namespace

int JobTypeTable::measured_index(int type, int scale_factor) const {
  for (std::size_t i = 0; i < measured.size(); ++i)
    if (measured[i].type == type && measured[i].scale_factor == scale_factor) return static_cast<int>(i);
  return -1;
}

// Gavel's keys only: strata's own copies may carry "comment" and "source" (provenance) strings.
namespace {
bool is_note(const std::string& key, const core::Json& v) { return (key == "comment" || key == "source") && v.is_string(); }
}  // namespace

bool is_gavel_throughputs(const core::Json& j) {
  if (!j.is_object() || j.empty() || j.contains("jobs")) return false;
  for (auto it = j.begin(); it != j.end(); ++it) {
    if (is_note(it.key(), it.value())) continue;
    if (!it.value().is_object()) return false;
    for (auto e = it.value().begin(); e != it.value().end(); ++e) return parse_key(e.key()).scale_factor > 0;
  }
  return false;
}

JobTypeTable gavel_throughputs_from_json(const core::Json& file, const std::string& origin) {
  const core::JsonWhere root{origin, ""};
  core::expect_object(file, root);
  core::Json j = core::Json::object();
  for (auto it = file.begin(); it != file.end(); ++it)
    if (!is_note(it.key(), it.value())) j[it.key()] = it.value();
  JobTypeTable t;
  for (const auto& g : gpu_types(j, root)) {
    core::check_name(g, origin);
    t.types.types.push_back(WorkerType{g, 0, 4, -1, -1});
  }
  std::vector<std::string> gpus;
  for (const auto& w : t.types.types) gpus.push_back(w.name);
  read_entries(j, gpus, root, t);
  read_pairs(j, gpus, root, t);
  for (const auto& js : t.types.jobs)
    if (t.measured_index(&js - t.types.jobs.data(), 1) < 0)
      core::fail(root, fmt::format("job type '{}' has no single-GPU entry", js.name));
  for (const auto& m : t.measured)
    if (std::none_of(m.consolidated.begin(), m.consolidated.end(), [](double x) { return x > 0; }) && m.scale_factor == 1)
      core::fail(root, fmt::format("job type '{}' runs on no GPU type (every steps/s is 0)", t.types.jobs[m.type].name));
  return t;
}

JobTypeTable load_job_types(const std::string& path) {
  const core::Json j = core::load_json_file(path);
  return is_gavel_throughputs(j) ? gavel_throughputs_from_json(j, path) : job_types_from_json(j, path);
}

}  // namespace strata::sched
