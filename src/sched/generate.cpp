// sched/generate: the --generate syntax, the job-type table and Gavel's seeded trace generator. Distributions are
// written here (not <random>'s) so that a seed gives the same trace with every standard library.
#include <fmt/format.h>

#include <charconv>
#include <cmath>
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

}  // namespace

GenerateSpec parse_generate_spec(const std::string& spec, const std::string& flag) {
  GenerateSpec g;
  bool have_jobs = false;
  auto bad = [&](const std::string& part, const std::string& why) -> void {
    throw core::InputError(fmt::format("{}: '{}': {} (syntax: jobs=N,rate=JOBS_PER_HOUR,seed=S[,multi=0|1]; rate=0 "
                                       "is a static trace)", flag, part, why));
  };
  std::size_t start = 0;
  while (start < spec.size()) {
    const std::size_t comma = std::min(spec.find(',', start), spec.size());
    const std::string part = spec.substr(start, comma - start);
    start = comma + 1;
    const auto eq = part.find('=');
    if (eq == std::string::npos) bad(part, "expected key=value");
    const std::string key = part.substr(0, eq), val = part.substr(eq + 1);
    const char* b = val.data();
    const char* e = val.data() + val.size();
    if (key == "jobs") {
      auto [p, ec] = std::from_chars(b, e, g.jobs);
      if (ec != std::errc() || p != e || g.jobs <= 0 || g.jobs > 1000000) bad(part, "jobs must be an integer in 1..1e6");
      have_jobs = true;
    } else if (key == "rate") {
      char* end = nullptr;
      g.rate_per_hour = std::strtod(val.c_str(), &end);
      if (val.empty() || *end != '\0' || !std::isfinite(g.rate_per_hour) || g.rate_per_hour < 0)
        bad(part, "rate must be a number >= 0 (jobs per hour)");
    } else if (key == "seed") {
      auto [p, ec] = std::from_chars(b, e, g.seed);
      if (ec != std::errc() || p != e) bad(part, "seed must be a non-negative integer");
    } else if (key == "multi") {
      if (val != "0" && val != "1") bad(part, "multi must be 0 or 1");
      g.multi_gpu = val == "1";
    } else {
      bad(part, "unknown key (valid: jobs, rate, seed, multi)");
    }
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
  t.types = problem_from_json(copy, origin, /*require_workers=*/false);
  return t;
}

JobTypeTable default_job_types() {
  return job_types_from_json(core::embedded_json("sched/gavel_job_types.json"), "data/sched/gavel_job_types.json");
}

Problem generate_trace(const JobTypeTable& table, const std::vector<WorkerType>& cluster, const GenerateSpec& spec) {
  const Problem types = with_worker_types(table.types, cluster);
  Problem out;
  out.types = types.types;
  std::mt19937_64 rng(spec.seed);
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
  }
  validate_problem(out, "--generate");
  return out;
}

}  // namespace strata::sched
