// sched/problem: the throughputs-file reader, the --cluster syntax and the feasibility checks.
#include "strata/sched/problem.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <charconv>
#include <cmath>
#include <map>
#include <set>

#include "strata/core/error.hpp"
#include "strata/core/text.hpp"

namespace strata::sched {
namespace {

using core::Json;
using core::JsonWhere;

constexpr int kDefaultPerServer = 4;

std::vector<std::string> type_names(const std::vector<WorkerType>& types) {
  std::vector<std::string> out;
  for (const auto& t : types) out.push_back(t.name);
  return out;
}

std::vector<WorkerType> read_workers(const Json& w, const JsonWhere& where) {
  core::expect_object(w, where);
  if (w.empty()) core::fail(where, "needs at least one GPU type");
  std::vector<WorkerType> out;
  for (auto it = w.begin(); it != w.end(); ++it) {
    WorkerType t;
    t.name = it.key();
    core::check_name(t.name, where.str());
    const JsonWhere at = where.field(it.key());
    if (it.value().is_object()) {
      t.count = static_cast<int>(core::get_positive_int(it.value(), "count", at));
      t.per_server = static_cast<int>(core::opt_positive_int(it.value(), "per_server", at).value_or(kDefaultPerServer));
    } else {
      t.count = static_cast<int>(core::get_positive_int(w, it.key(), where));
      t.per_server = kDefaultPerServer;
    }
    if (t.count > 1000000) core::fail(at, "more than 1e6 GPUs of one type");
    out.push_back(std::move(t));
  }
  return out;
}

void read_prices(const Json& j, std::vector<WorkerType>& types, const JsonWhere& where) {
  core::expect_object(j, where);
  for (auto it = j.begin(); it != j.end(); ++it) {
    const JsonWhere at = where.field(it.key());
    auto t = std::find_if(types.begin(), types.end(), [&](const WorkerType& w) { return w.name == it.key(); });
    if (t == types.end())
      core::fail(at, fmt::format("unknown GPU type (workers: {})", core::join(type_names(types))));
    core::expect_object(it.value(), at);
    for (auto f = it.value().begin(); f != it.value().end(); ++f)
      if (f.key() != "on_demand" && f.key() != "spot") core::fail(at.field(f.key()), "unknown field (valid: on_demand, spot)");
    if (auto v = core::opt_positive_number(it.value(), "on_demand", at)) t->price_on_demand = *v;
    if (auto v = core::opt_positive_number(it.value(), "spot", at)) t->price_spot = *v;
  }
}

// Reads {"type": number, ...} into a per-type vector; unknown types are errors (or added when `grow`).
std::vector<double> read_type_map(const Json& j, std::vector<WorkerType>& types, bool grow, const JsonWhere& where) {
  core::expect_object(j, where);
  std::vector<double> out(types.size(), 0.0);
  for (auto it = j.begin(); it != j.end(); ++it) {
    core::check_name(it.key(), where.str());
    const JsonWhere at = where.field(it.key());
    auto t = std::find_if(types.begin(), types.end(), [&](const WorkerType& w) { return w.name == it.key(); });
    if (t == types.end()) {
      if (!grow) core::fail(at, fmt::format("unknown GPU type (workers: {})", core::join(type_names(types))));
      types.push_back(WorkerType{it.key(), 0, kDefaultPerServer, -1, -1});
      out.push_back(0.0);
      t = types.end() - 1;
    }
    if (!it.value().is_number()) core::fail(at, fmt::format("expected a number, got {}", it.value().type_name()));
    const double v = it.value().get<double>();
    if (!std::isfinite(v)) core::fail(at, "must be finite");
    if (v < 0) core::fail(at, fmt::format("throughput must be >= 0 (0 = cannot run on this type), got {}", v));
    out[static_cast<std::size_t>(t - types.begin())] = v;
  }
  return out;
}

void check_known_fields(const Json& obj, const std::vector<std::string>& known, const JsonWhere& where) {
  for (auto it = obj.begin(); it != obj.end(); ++it)
    if (std::find(known.begin(), known.end(), it.key()) == known.end())
      core::fail(where.field(it.key()), fmt::format("unknown field (valid: {})", core::join(known)));
}

JobSpec read_job(const Json& j, std::vector<WorkerType>& types, bool grow, const JsonWhere& where) {
  core::expect_object(j, where);
  check_known_fields(j,
                     {"name", "type", "throughputs", "unconsolidated_throughputs", "scale_factor", "weight", "steps",
                      "arrival_s", "elapsed_s", "elapsed_isolated_s", "slo_s", "entity", "model", "global_batch"},
                     where);
  JobSpec job;
  job.name = core::get_string(j, "name", where);
  if (job.name.empty()) core::fail(where.field("name"), "must not be empty");
  core::check_name(job.name, where.field("name").str());
  job.job_type = core::opt_string(j, "type", where).value_or("");
  job.model = core::opt_string(j, "model", where).value_or("");
  if (!job.model.empty()) {
    const auto gbs = core::opt_positive_int(j, "global_batch", where);
    if (!gbs) core::fail(where.field("global_batch"), "required with \"model\" (samples per step)");
    job.global_batch = *gbs;
  } else if (core::has_field(j, "global_batch")) {
    core::fail(where.field("global_batch"), "only meaningful with \"model\"");
  }
  if (job.model.empty() || core::has_field(j, "throughputs"))
    job.throughputs = read_type_map(core::require_field(j, "throughputs", where), types, grow, where.field("throughputs"));
  if (core::has_field(j, "unconsolidated_throughputs"))
    job.unconsolidated = read_type_map(j.at("unconsolidated_throughputs"), types, grow,
                                       where.field("unconsolidated_throughputs"));
  const auto sf = core::opt_positive_int(j, "scale_factor", where).value_or(1);
  if (sf > 1000000) core::fail(where.field("scale_factor"), "too large");
  job.scale_factor = static_cast<int>(sf);
  job.weight = core::opt_positive_number(j, "weight", where).value_or(1.0);
  job.steps = core::opt_positive_number(j, "steps", where).value_or(-1.0);
  auto nonneg = [&](const char* key) {
    const auto v = core::opt_number(j, key, where);
    if (v && *v < 0) core::fail(where.field(key), fmt::format("must be >= 0, got {}", *v));
    return v.value_or(0.0);
  };
  job.arrival_s = nonneg("arrival_s");
  job.elapsed_s = nonneg("elapsed_s");
  job.elapsed_isolated_s = core::has_field(j, "elapsed_isolated_s") ? nonneg("elapsed_isolated_s") : job.elapsed_s;
  job.slo_s = core::opt_positive_number(j, "slo_s", where).value_or(kNoSlo);
  job.entity = core::opt_string(j, "entity", where).value_or("");
  return job;
}

void pad(std::vector<double>& v, std::size_t n) {
  if (!v.empty()) v.resize(n, 0.0);
}

}  // namespace

int Problem::type_index(const std::string& name) const {
  for (int i = 0; i < num_types(); ++i)
    if (types[i].name == name) return i;
  return -1;
}

Problem problem_from_json(const Json& j, const std::string& origin, bool require_workers) {
  const JsonWhere root{origin, ""};
  core::expect_object(j, root);
  check_known_fields(j, {"workers", "prices", "jobs", "pairs", "entities", "comment", "source"}, root);
  Problem p;
  const bool grow = !core::has_field(j, "workers");
  if (!grow) p.types = read_workers(j.at("workers"), root.field("workers"));
  else if (require_workers) core::require_field(j, "workers", root);

  const Json& jobs = core::require_field(j, "jobs", root);
  core::expect_array(jobs, root.field("jobs"));
  if (jobs.empty()) core::fail(root.field("jobs"), "needs at least one job");
  std::set<std::string> names;
  for (std::size_t i = 0; i < jobs.size(); ++i) {
    JobSpec job = read_job(jobs[i], p.types, grow, root.field("jobs").index(i));
    if (!names.insert(job.name).second) core::fail(root.field("jobs").index(i).field("name"), "duplicate job name '" + job.name + "'");
    p.jobs.push_back(std::move(job));
  }
  for (auto& job : p.jobs) {
    job.throughputs.resize(p.types.size(), 0.0);
    pad(job.unconsolidated, p.types.size());
  }
  if (core::has_field(j, "prices")) read_prices(j.at("prices"), p.types, root.field("prices"));

  if (core::has_field(j, "entities")) {
    const Json& e = j.at("entities");
    const JsonWhere ew = root.field("entities");
    core::expect_object(e, ew);
    for (auto it = e.begin(); it != e.end(); ++it) {
      const JsonWhere at = ew.field(it.key());
      check_known_fields(it.value(), {"weight", "policy"}, at);
      EntitySpec s;
      s.name = it.key();
      s.weight = core::opt_positive_number(it.value(), "weight", at).value_or(1.0);
      const std::string pol = core::opt_string(it.value(), "policy", at).value_or("fairness");
      if (pol == "fairness") s.policy = EntityPolicy::kFairness;
      else if (pol == "fifo") s.policy = EntityPolicy::kFifo;
      else core::fail(at.field("policy"), "unknown entity policy '" + pol + "' (valid: fairness, fifo)");
      p.entities.push_back(std::move(s));
    }
  }
  for (std::size_t i = 0; i < p.jobs.size(); ++i) {
    const auto& ent = p.jobs[i].entity;
    if (ent.empty()) continue;
    if (std::none_of(p.entities.begin(), p.entities.end(), [&](const EntitySpec& s) { return s.name == ent; }))
      core::fail(root.field("jobs").index(i).field("entity"), "unknown entity '" + ent + "' (declare it in \"entities\")");
  }

  if (core::has_field(j, "pairs")) {
    const Json& pr = j.at("pairs");
    const JsonWhere pw = root.field("pairs");
    core::expect_array(pr, pw);
    std::set<std::pair<int, int>> seen;
    for (std::size_t i = 0; i < pr.size(); ++i) {
      const JsonWhere at = pw.index(i);
      check_known_fields(pr[i], {"jobs", "throughputs"}, at);
      const Json& js = core::require_field(pr[i], "jobs", at);
      if (!js.is_array() || js.size() != 2 || !js[0].is_string() || !js[1].is_string())
        core::fail(at.field("jobs"), "expected two job names");
      PairSpec ps;
      int idx[2];
      for (int k = 0; k < 2; ++k) {
        const auto name = js[k].get<std::string>();
        auto it = std::find_if(p.jobs.begin(), p.jobs.end(), [&](const JobSpec& jb) { return jb.name == name; });
        if (it == p.jobs.end()) core::fail(at.field("jobs"), "unknown job '" + name + "'");
        idx[k] = static_cast<int>(it - p.jobs.begin());
      }
      if (idx[0] == idx[1]) core::fail(at.field("jobs"), "a pair needs two different jobs");
      ps.a = std::min(idx[0], idx[1]);
      ps.b = std::max(idx[0], idx[1]);
      const bool swapped = idx[0] > idx[1];
      if (!seen.insert({ps.a, ps.b}).second) core::fail(at.field("jobs"), "duplicate pair");
      ps.throughputs.assign(p.types.size(), {0.0, 0.0});
      const Json& tp = core::require_field(pr[i], "throughputs", at);
      core::expect_object(tp, at.field("throughputs"));
      for (auto it = tp.begin(); it != tp.end(); ++it) {
        const JsonWhere tw = at.field("throughputs").field(it.key());
        const int t = p.type_index(it.key());
        if (t < 0) core::fail(tw, fmt::format("unknown GPU type (workers: {})", core::join(type_names(p.types))));
        const Json& v = it.value();
        if (!v.is_array() || v.size() != 2 || !v[0].is_number() || !v[1].is_number())
          core::fail(tw, "expected [throughput of first job, throughput of second job]");
        double a = v[0].get<double>(), b = v[1].get<double>();
        if (!std::isfinite(a) || !std::isfinite(b) || a < 0 || b < 0) core::fail(tw, "throughputs must be finite and >= 0");
        if (swapped) std::swap(a, b);
        ps.throughputs[t] = {a, b};
      }
      p.pairs.push_back(std::move(ps));
    }
  }
  const bool pending = std::any_of(jobs.begin(), jobs.end(), [](const Json& jb) {
    return jb.is_object() && jb.contains("model") && !jb.contains("throughputs");
  });
  if (!grow && !pending) validate_problem(p, origin);
  return p;
}

Problem load_problem(const std::string& path, bool require_workers) {
  return problem_from_json(core::load_json_file(path), path, require_workers);
}

std::vector<double> isolated_throughputs(const Problem& p, IsolatedShare share) {
  double workers = 0, demand = 0;
  for (const auto& t : p.types) workers += t.count;
  for (const auto& j : p.jobs) demand += j.scale_factor;
  std::vector<double> out(p.num_jobs(), 0.0);
  for (int m = 0; m < p.num_jobs(); ++m) {
    // Time fraction of the whole job: by size, ΣW/Σsf capped at 1; per job, ΣW/(n·sf) capped at 1.
    const double per_job = workers / (static_cast<double>(p.num_jobs()) * p.jobs[m].scale_factor);
    const double s = std::min(1.0, share == IsolatedShare::kPerJob ? per_job : workers / demand);
    for (int t = 0; t < p.num_types(); ++t) out[m] += p.jobs[m].throughputs[t] * s * p.types[t].count / workers;
  }
  return out;
}

void validate_problem(const Problem& p, const std::string& origin) {
  const JsonWhere root{origin, ""};
  if (p.types.empty()) core::fail(root.field("workers"), "needs at least one GPU type");
  for (int i = 0; i < p.num_jobs(); ++i) {
    const JobSpec& j = p.jobs[i];
    const JsonWhere at = root.field("jobs").index(static_cast<std::size_t>(i));
    int max_fit = 0;
    bool runs = false;
    for (int t = 0; t < p.num_types(); ++t) {
      if (!(j.throughputs[t] > 0)) continue;
      runs = true;
      max_fit = std::max(max_fit, p.types[t].count);
    }
    if (!runs)
      core::fail(at.field("throughputs"),
                 fmt::format("job '{}' runs on no GPU type of the cluster ({}): every throughput is 0 or missing",
                             j.name, core::join(type_names(p.types))));
    if (j.scale_factor > max_fit)
      core::fail(at.field("scale_factor"),
                 fmt::format("job '{}' needs {} GPUs but the largest type it runs on has {}", j.name, j.scale_factor,
                             max_fit));
  }
  for (std::size_t i = 0; i < p.pairs.size(); ++i) {
    const PairSpec& ps = p.pairs[i];
    if (p.jobs[ps.a].scale_factor != p.jobs[ps.b].scale_factor)
      core::fail(root.field("pairs").index(i).field("jobs"), "space sharing needs jobs with equal scale_factor");
  }
}

std::vector<WorkerType> parse_cluster_spec(const std::string& spec, const std::string& flag) {
  std::vector<WorkerType> out;
  auto bad = [&](const std::string& part, const std::string& why) -> void {
    throw core::InputError(fmt::format("{}: '{}': {} (syntax: TYPE:COUNT[/PER_SERVER],..., e.g. v100:36,k80:32/8)",
                                       flag, part, why));
  };
  auto parse_int = [&](const std::string& part, std::string_view s) {
    int v = 0;
    auto [ptr, ec] = std::from_chars(s.data(), s.data() + s.size(), v);
    if (ec != std::errc() || ptr != s.data() + s.size() || v <= 0 || v > 1000000) bad(part, "expected a positive integer");
    return v;
  };
  std::size_t start = 0;
  if (spec.empty()) bad(spec, "empty");
  while (start <= spec.size()) {
    const std::size_t comma = std::min(spec.find(',', start), spec.size());
    const std::string part = spec.substr(start, comma - start);
    const auto colon = part.find(':');
    if (colon == std::string::npos || colon == 0) bad(part, "expected TYPE:COUNT");
    WorkerType t;
    t.name = core::to_lower(part.substr(0, colon));
    const std::string rest = part.substr(colon + 1);
    const auto slash = rest.find('/');
    t.count = parse_int(part, std::string_view(rest).substr(0, slash));
    t.per_server = slash == std::string::npos ? kDefaultPerServer : parse_int(part, std::string_view(rest).substr(slash + 1));
    // An explicit server size must tile the count (8 GPUs cannot sit in servers of 3); with the default size
    // the last server may be partial (docs/scheduler.md).
    if (slash != std::string::npos && t.count % t.per_server != 0)
      bad(part, fmt::format("{} GPUs do not fill whole servers of {} (COUNT must be a multiple of PER_SERVER)",
                            t.count, t.per_server));
    core::check_name(t.name, flag);
    for (const auto& o : out)
      if (o.name == t.name) bad(part, "GPU type listed twice");
    out.push_back(std::move(t));
    start = comma + 1;
    if (comma == spec.size()) break;
  }
  return out;
}

Problem with_worker_types(const Problem& p, const std::vector<WorkerType>& types) {
  Problem q;
  q.types = types;
  for (auto& t : q.types) {
    const int old = p.type_index(t.name);
    if (old < 0) continue;
    if (t.price_on_demand < 0) t.price_on_demand = p.types[old].price_on_demand;
    if (t.price_spot < 0) t.price_spot = p.types[old].price_spot;
  }
  auto remap = [&](const std::vector<double>& v) {
    std::vector<double> out(types.size(), 0.0);
    if (v.empty()) return std::vector<double>{};
    for (std::size_t t = 0; t < types.size(); ++t) {
      const int old = p.type_index(types[t].name);
      if (old >= 0 && old < static_cast<int>(v.size())) out[t] = v[old];
    }
    return out;
  };
  for (const auto& j : p.jobs) {
    JobSpec n = j;
    n.throughputs = remap(j.throughputs);
    n.unconsolidated = remap(j.unconsolidated);
    q.jobs.push_back(std::move(n));
  }
  for (const auto& ps : p.pairs) {
    PairSpec n{ps.a, ps.b, std::vector<std::array<double, 2>>(types.size(), {0.0, 0.0})};
    for (std::size_t t = 0; t < types.size(); ++t) {
      const int old = p.type_index(types[t].name);
      if (old >= 0) n.throughputs[t] = ps.throughputs[old];
    }
    q.pairs.push_back(std::move(n));
  }
  q.entities = p.entities;
  return q;
}

double fastest_throughput(const JobSpec& j) {
  double best = 0;
  for (double t : j.throughputs) best = std::max(best, t);
  return best;
}

double equal_share_throughput(const JobSpec& j) {
  if (j.throughputs.empty()) return 0;
  double s = 0;
  for (double t : j.throughputs) s += t;
  return s / static_cast<double>(j.throughputs.size());
}

double reference_throughput(const Problem& p, const JobSpec& j, Normalization n) {
  double workers = 0, s = 0;
  for (int t = 0; t < p.num_types(); ++t) {
    workers += p.types[t].count;
    s += j.throughputs[t] * p.types[t].count;
  }
  // A trace read without "workers" has no counts yet: only the equal share is defined there.
  if (n == Normalization::kEqualShare || !(workers > 0)) return equal_share_throughput(j);
  return s / workers;
}

}  // namespace strata::sched
