// sched/generate: the --generate syntax, the job-type table and Gavel's seeded trace generator. Distributions are
// written here (not <random>'s) so that a seed gives the same trace with every standard library.
#include <fmt/format.h>

#include <array>
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
// Measured pair throughputs of jobs a and b on the trace's types (Gavel's table), empty when not measured.
std::vector<std::array<double, 2>> measured_pair(const JobTypeTable& table, const Problem& out, int entry_a,
                                                 int entry_b) {
  auto it = table.measured_pairs.find({entry_a, entry_b});
  if (it == table.measured_pairs.end()) return {};
  std::vector<std::array<double, 2>> row(out.types.size(), {0.0, 0.0});
  for (std::size_t k = 0; k < out.types.size(); ++k) {
    const int g = table.types.type_index(out.types[k].name);
    if (g >= 0) row[k] = it->second[g];
  }
  return row;
}

// A pair worth considering: on some type the two jobs together keep more than one GPU's worth of work
// (Σ pair/solo > 1; Gavel keeps only well-performing pairs).
bool pair_helps(const Problem& out, int a, int b, const std::vector<std::array<double, 2>>& row) {
  for (std::size_t k = 0; k < row.size(); ++k) {
    const double ta = out.jobs[a].throughputs[k], tb = out.jobs[b].throughputs[k];
    if (ta > 0 && tb > 0 && row[k][0] > 0 && row[k][1] > 0 && row[k][0] / ta + row[k][1] / tb > 1.0) return true;
  }
  return false;
}

void add_extras(const JobTypeTable& table, const GenerateSpec& spec, const std::vector<int>& type_of,
                const std::vector<int>& entry_of, const std::vector<double>& duration_s, Problem& out) {
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
  const bool measured = !table.measured_pairs.empty();
  if (table.gpu_demand.empty() && !measured)
    throw core::InputError("--generate: pairs=K needs a job-type table with \"colocation\" data or measured pairs");
  // Each job is paired with the next K later jobs of its size whose co-location beats time sharing (the two
  // fractions sum to more than 1: Gavel keeps only well-performing pairs).
  for (int a = 0; a < out.num_jobs(); ++a) {
    int made = 0;
    for (int b = a + 1; b < out.num_jobs() && made < spec.pairs_per_job; ++b) {
      if (out.jobs[b].scale_factor != out.jobs[a].scale_factor) continue;
      if (measured) {
        auto row = measured_pair(table, out, entry_of[a], entry_of[b]);
        if (row.empty() || !pair_helps(out, a, b, row)) continue;
        out.pairs.push_back(PairSpec{a, b, std::move(row)});
        ++made;
        continue;
      }
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

namespace {

struct Drawn {
  int type = 0, scale_factor = 1;
  double duration_s = 0;
};

// 10^x minutes, x ~ U[1.5, 3] w.p. 0.8 and U[3, 4] w.p. 0.2 (Gavel utils._generate_duration; thesis §5.6).
double draw_duration_s(std::mt19937_64& rng) {
  const bool long_job = uniform01(rng) >= 0.8;
  const double x = long_job ? uniform(rng, 3.0, 4.0) : uniform(rng, 1.5, 3.0);
  return std::pow(10.0, x) * 60.0;
}

// strata's earlier draw order: type, duration, size (70 % 1 GPU, 25 % 2–4, 5 % 8).
Drawn draw_strata(std::mt19937_64& rng, const GenerateSpec& spec, int num_types) {
  Drawn d;
  d.type = uniform_int(rng, 0, num_types - 1);
  d.duration_s = draw_duration_s(rng);
  if (spec.multi_gpu) {
    const double u = uniform01(rng);
    d.scale_factor = u < 0.70 ? 1 : u < 0.95 ? uniform_int(rng, 2, 4) : 8;
  }
  return d;
}

// Gavel's order (utils.generate_job): size (Philly: 1/2/4/8 at 70/10/15/5 %), duration, then a job type drawn
// uniformly until it has an entry of that size (its `distributed` types; every type for strata's own tables).
Drawn draw_gavel(std::mt19937_64& rng, const GenerateSpec& spec, const JobTypeTable& table) {
  Drawn d;
  if (spec.multi_gpu) {
    const double u = uniform01(rng);
    d.scale_factor = u < 0.7 ? 1 : u < 0.8 ? 2 : u < 0.95 ? 4 : 8;
  }
  d.duration_s = draw_duration_s(rng);
  for (int tries = 0;; ++tries) {
    d.type = uniform_int(rng, 0, table.types.num_jobs() - 1);
    if (d.scale_factor == 1 || table.measured.empty() || table.measured_index(d.type, d.scale_factor) >= 0) break;
    if (tries > 100000) throw core::InputError(fmt::format("--generate: no job type of the table has {}-GPU entries", d.scale_factor));
  }
  return d;
}

// The job's consolidated/unconsolidated throughputs on the cluster's types: the measured entry when the table
// has one, else k · T_1 · efficiency^log2(k).
void job_throughputs(const JobTypeTable& table, const Problem& types, const Drawn& d, JobSpec& j) {
  const std::size_t n = types.types.size();
  j.throughputs.assign(n, 0.0);
  j.unconsolidated.assign(n, 0.0);
  const int e = table.measured.empty() ? -1 : table.measured_index(d.type, d.scale_factor);
  for (std::size_t k = 0; k < n; ++k) {
    if (e >= 0) {
      const int g = table.types.type_index(types.types[k].name);
      if (g < 0) continue;
      j.throughputs[k] = table.measured[e].consolidated[g];
      j.unconsolidated[k] = table.measured[e].unconsolidated[g];
      continue;
    }
    const double doublings = std::log2(static_cast<double>(d.scale_factor));
    j.throughputs[k] = types.jobs[d.type].throughputs[k] * d.scale_factor * std::pow(table.consolidated_efficiency, doublings);
    j.unconsolidated[k] = types.jobs[d.type].throughputs[k] * d.scale_factor * std::pow(table.unconsolidated_efficiency, doublings);
  }
}

// Steps/s the duration is expressed on: Gavel's reference worker type v100 (from the table, whether or not the
// cluster has V100s), else — and with strata's conventions — the fastest type of the cluster.
double reference_rate(const JobTypeTable& table, const GenerateSpec& spec, const Drawn& d, const JobSpec& j) {
  const int v100 = table.types.type_index("v100");
  if (spec.conventions == Conventions::kGavel && v100 >= 0) {
    const int e = table.measured.empty() ? -1 : table.measured_index(d.type, d.scale_factor);
    double r = e >= 0 ? table.measured[e].consolidated[v100] : 0.0;
    if (e < 0) {
      const double doublings = std::log2(static_cast<double>(d.scale_factor));
      r = table.types.jobs[d.type].throughputs[v100] * d.scale_factor * std::pow(table.consolidated_efficiency, doublings);
    }
    if (r > 0) return r;
  }
  return fastest_throughput(j);
}

}  // namespace

Problem generate_trace(const JobTypeTable& table, const std::vector<WorkerType>& cluster, const GenerateSpec& spec) {
  const Problem types = with_worker_types(table.types, cluster);
  Problem out;
  out.types = types.types;
  std::mt19937_64 rng(spec.seed);
  std::vector<int> type_of, entry_of;
  std::vector<double> durations;
  double t = 0;
  for (int i = 0; i < spec.jobs; ++i) {
    // Draw order is fixed: arrival, then the job per the conventions.
    if (spec.rate_per_hour > 0 && i > 0) t += exponential(rng, spec.rate_per_hour / 3600.0);
    const Drawn d = spec.conventions == Conventions::kGavel ? draw_gavel(rng, spec, table)
                                                            : draw_strata(rng, spec, types.num_jobs());
    JobSpec j;
    j.name = fmt::format("job{}", i);
    j.job_type = types.jobs[d.type].name;
    j.scale_factor = d.scale_factor;
    j.arrival_s = t;
    job_throughputs(table, types, d, j);
    j.steps = reference_rate(table, spec, d, j) * d.duration_s;
    out.jobs.push_back(std::move(j));
    type_of.push_back(d.type);
    entry_of.push_back(table.measured.empty() ? -1 : table.measured_index(d.type, d.scale_factor));
    durations.push_back(d.duration_s);
  }
  add_extras(table, spec, type_of, entry_of, durations, out);
  validate_problem(out, "--generate");
  return out;
}

}  // namespace strata::sched
