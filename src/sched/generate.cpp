// sched/generate: the --generate syntax, the job-type table and Gavel's seeded trace generator. Distributions are
// written here (not <random>'s) so that a seed gives the same trace with every standard library.
#include <fmt/format.h>

#include <charconv>
#include <cmath>
#include <limits>
#include <random>

#include "strata/core/data.hpp"
#include "strata/core/error.hpp"
#include "strata/sched/simulate.hpp"

namespace strata::sched {
namespace {

// Uniform double in [0, 1) from the top 53 bits.
double uniform01(std::mt19937_64& rng) { return static_cast<double>(rng() >> 11) * 0x1.0p-53; }
double uniform(std::mt19937_64& rng, double lo, double hi) { return lo + (hi - lo) * uniform01(rng); }
// Integer in [lo, hi].
int uniform_int(std::mt19937_64& rng, int lo, int hi) {
  return lo + static_cast<int>(std::floor(uniform01(rng) * (hi - lo + 1)));
}
double exponential(std::mt19937_64& rng, double rate) { return -std::log1p(-uniform01(rng)) / rate; }

// "colocation": {"interference": f, "gpu_demand": {"<job type>": d, ...}} — every job type needs a demand.
void read_colocation(const core::Json& c, const core::JsonWhere& where, JobTypeTable& t) {
  core::expect_object(c, where);
  for (auto it = c.begin(); it != c.end(); ++it)
    if (it.key() != "interference" && it.key() != "gpu_demand")
      core::fail(where.field(it.key()), "unknown field (valid: interference, gpu_demand)");
  t.colocation_interference = core::get_positive_number(c, "interference", where);
  if (t.colocation_interference > 1) core::fail(where.field("interference"), "must be in (0, 1]");
  if (!c.contains("gpu_demand")) core::fail(where.field("gpu_demand"), "missing");
  const auto& d = c.at("gpu_demand");
  core::expect_object(d, where.field("gpu_demand"));
  t.gpu_demand.assign(t.types.num_jobs(), 0.0);
  for (auto it = d.begin(); it != d.end(); ++it) {
    const auto at = where.field("gpu_demand").field(it.key());
    int k = 0;
    while (k < t.types.num_jobs() && t.types.jobs[k].name != it.key()) ++k;
    if (k == t.types.num_jobs()) core::fail(at, "not a job type of this table");
    const double v = it.value().is_number() ? it.value().get<double>() : -1.0;
    if (!(v > 0 && v <= 1)) core::fail(at, "GPU demand must be a number in (0, 1]");
    t.gpu_demand[k] = v;
  }
  for (int k = 0; k < t.types.num_jobs(); ++k)
    if (t.gpu_demand[k] == 0) core::fail(where.field("gpu_demand"), "job type '" + t.types.jobs[k].name + "' has no demand");
}

}  // namespace

GenerateSpec parse_generate_spec(const std::string& spec, const std::string& flag) {
  GenerateSpec g;
  bool have_jobs = false;
  auto bad = [&](const std::string& part, const std::string& why) -> void {
    throw core::InputError(fmt::format("{}: '{}': {} (syntax: jobs=N,rate=JOBS_PER_HOUR,seed=S[,multi=0|1][,pairs=K]"
                                       "[,slo=0|1][,entities=K][,priority=FRACTION]; rate=0 is a static trace)",
                                       flag, part, why));
  };
  auto integer = [&](const std::string& part, const std::string& val, long long lo, long long hi) {
    long long v = 0;
    auto [p, ec] = std::from_chars(val.data(), val.data() + val.size(), v);
    if (ec != std::errc() || p != val.data() + val.size() || v < lo || v > hi)
      bad(part, fmt::format("expected an integer in {}..{}", lo, hi));
    return v;
  };
  auto number = [&](const std::string& part, const std::string& val, double lo, double hi) {
    char* end = nullptr;
    const double v = std::strtod(val.c_str(), &end);
    if (val.empty() || *end != '\0' || !std::isfinite(v) || v < lo || v > hi)
      bad(part, fmt::format("expected a number in [{}, {}]", lo, hi));
    return v;
  };
  std::size_t start = 0;
  while (start < spec.size()) {
    const std::size_t comma = std::min(spec.find(',', start), spec.size());
    const std::string part = spec.substr(start, comma - start);
    start = comma + 1;
    const auto eq = part.find('=');
    if (eq == std::string::npos) bad(part, "expected key=value");
    const std::string key = part.substr(0, eq), val = part.substr(eq + 1);
    if (key == "jobs") g.jobs = static_cast<int>(integer(part, val, 1, 1000000)), have_jobs = true;
    else if (key == "rate") g.rate_per_hour = number(part, val, 0, 1e9);
    else if (key == "seed") g.seed = static_cast<std::uint64_t>(integer(part, val, 0, std::numeric_limits<long long>::max()));
    else if (key == "multi") g.multi_gpu = integer(part, val, 0, 1) == 1;
    else if (key == "pairs") g.pairs_per_job = static_cast<int>(integer(part, val, 0, 64));
    else if (key == "slo") g.slo = integer(part, val, 0, 1) == 1;
    else if (key == "entities") g.entities = static_cast<int>(integer(part, val, 0, 1000));
    else if (key == "priority") g.high_priority = number(part, val, 0, 1);
    else bad(part, "unknown key (valid: jobs, rate, seed, multi, pairs, slo, entities, priority)");
  }
  if (!have_jobs) bad(spec, "jobs=N is required");
  return g;
}

JobTypeTable job_types_from_json(const core::Json& j, const std::string& origin) {
  JobTypeTable t;
  core::Json copy = j;
  const core::JsonWhere root{origin, ""};
  core::expect_object(copy, root);
  if (copy.contains("multi_gpu_scaling")) {
    const auto& s = copy.at("multi_gpu_scaling");
    const auto w = root.field("multi_gpu_scaling");
    t.consolidated_efficiency = core::get_positive_number(s, "consolidated_efficiency_per_doubling", w);
    t.unconsolidated_efficiency = core::get_positive_number(s, "unconsolidated_efficiency_per_doubling", w);
    if (t.consolidated_efficiency > 1 || t.unconsolidated_efficiency > 1) core::fail(w, "efficiencies must be <= 1");
    copy.erase("multi_gpu_scaling");
  }
  core::Json colocation;
  if (copy.contains("colocation")) {
    colocation = copy.at("colocation");
    copy.erase("colocation");
  }
  t.types = problem_from_json(copy, origin, /*require_workers=*/false);
  if (!colocation.is_null()) read_colocation(colocation, root.field("colocation"), t);
  return t;
}

double colocated_fraction(const JobTypeTable& t, int type_a, int type_b) {
  // Synthetic contention model (docs/scheduler.md): two jobs whose summed GPU demand fits in one GPU keep their
  // solo speed (less the interference factor); beyond that they share the GPU in proportion to their demand.
  const double demand = t.gpu_demand.at(type_a) + t.gpu_demand.at(type_b);
  return t.colocation_interference / std::max(1.0, demand);
}

JobTypeTable default_job_types() {
  return job_types_from_json(core::embedded_json("sched/gavel_job_types.json"), "data/sched/gavel_job_types.json");
}

namespace {

// The optional extras of a generated trace, from a second PRNG stream (seed-derived) so that switching them on
// leaves the base jobs unchanged: SLOs (thesis §5.6 cost experiment: {1.2, 2, 10} × duration), entities (thesis
// multi-level fairness: weights 1, 2, 3, ...), high-priority jobs, and space-sharing pairs.
void add_extras(const JobTypeTable& table, const GenerateSpec& spec, const std::vector<int>& type_of,
                const std::vector<double>& duration_s, Problem& out) {
  std::mt19937_64 rng(spec.seed ^ 0x9e3779b97f4a7c15ULL);
  constexpr double kSloFactors[] = {1.2, 2.0, 10.0};
  for (int e = 0; e < spec.entities; ++e)
    out.entities.push_back(EntitySpec{fmt::format("e{}", e), static_cast<double>(e + 1), EntityPolicy::kFairness});
  for (int i = 0; i < out.num_jobs(); ++i) {
    JobSpec& j = out.jobs[i];
    if (spec.slo) j.slo_s = kSloFactors[uniform_int(rng, 0, 2)] * duration_s[i];
    if (spec.entities > 0) j.entity = fmt::format("e{}", uniform_int(rng, 0, spec.entities - 1));
    if (spec.high_priority > 0 && uniform01(rng) < spec.high_priority) j.weight = spec.high_priority_weight;
  }
  if (spec.pairs_per_job <= 0) return;
  if (table.gpu_demand.empty())
    throw core::InputError("--generate: pairs=K needs a job-type table with \"colocation\" data");
  // Each job is paired with the next K later jobs of its size whose co-location beats time sharing (the two
  // fractions sum to more than 1: Gavel keeps only well-performing pairs).
  for (int a = 0; a < out.num_jobs(); ++a) {
    int made = 0;
    for (int b = a + 1; b < out.num_jobs() && made < spec.pairs_per_job; ++b) {
      if (out.jobs[b].scale_factor != out.jobs[a].scale_factor) continue;
      const double f = colocated_fraction(table, type_of[a], type_of[b]);
      if (2 * f <= 1.0) continue;
      PairSpec ps{a, b, {}};
      for (int k = 0; k < out.num_types(); ++k)
        ps.throughputs.push_back({out.jobs[a].throughputs[k] * f, out.jobs[b].throughputs[k] * f});
      out.pairs.push_back(std::move(ps));
      ++made;
    }
  }
}

}  // namespace

Problem generate_trace(const JobTypeTable& table, const std::vector<WorkerType>& cluster, const GenerateSpec& spec) {
  const Problem types = with_worker_types(table.types, cluster);
  Problem out;
  out.types = types.types;
  std::mt19937_64 rng(spec.seed);
  std::vector<int> type_of;
  std::vector<double> durations;
  double t = 0;
  for (int i = 0; i < spec.jobs; ++i) {
    // Draw order is fixed: arrival, type, duration branch, duration exponent, size.
    if (spec.rate_per_hour > 0 && i > 0) t += exponential(rng, spec.rate_per_hour / 3600.0);
    const int type = uniform_int(rng, 0, types.num_jobs() - 1);
    const bool long_job = uniform01(rng) >= 0.8;
    const double x = long_job ? uniform(rng, 3.0, 4.0) : uniform(rng, 1.5, 3.0);
    const double duration_s = std::pow(10.0, x) * 60.0;
    int sf = 1;
    if (spec.multi_gpu) {
      const double u = uniform01(rng);
      if (u < 0.70) sf = 1;
      else if (u < 0.95) sf = uniform_int(rng, 2, 4);
      else sf = 8;
    }
    const JobSpec& base = types.jobs[type];
    JobSpec j;
    j.name = fmt::format("job{}", i);
    j.job_type = base.name;
    j.scale_factor = sf;
    j.arrival_s = t;
    const double doublings = std::log2(static_cast<double>(sf));
    const double ce = sf * std::pow(table.consolidated_efficiency, doublings);
    const double ue = sf * std::pow(table.unconsolidated_efficiency, doublings);
    j.throughputs.resize(out.types.size());
    j.unconsolidated.resize(out.types.size());
    for (std::size_t k = 0; k < out.types.size(); ++k) {
      j.throughputs[k] = base.throughputs[k] * ce;
      j.unconsolidated[k] = base.throughputs[k] * ue;
    }
    j.steps = fastest_throughput(j) * duration_s;
    out.jobs.push_back(std::move(j));
    type_of.push_back(type);
    durations.push_back(duration_s);
  }
  add_extras(table, spec, type_of, durations, out);
  validate_problem(out, "--generate");
  return out;
}

}  // namespace strata::sched
