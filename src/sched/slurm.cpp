// sched/slurm: round placements → sbatch / scancel command lines (the Slurm back-end's decisions).
#include "strata/sched/slurm.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <cctype>
#include <string_view>

namespace strata::sched {
namespace {

const RoundPlacement* find_job(const std::vector<RoundPlacement>& v, const std::string& job) {
  auto it = std::find_if(v.begin(), v.end(), [&](const RoundPlacement& p) { return p.job == job; });
  return it == v.end() ? nullptr : &*it;
}

// Same Slurm job can continue: same type and size (a renewed lease, or the same type on other GPUs of one node,
// which Slurm's own placement handles).
bool continues(const RoundPlacement* before, const RoundPlacement& now) {
  return before != nullptr && before->type == now.type && before->gpus == now.gpus;
}

std::string slurm_name(const std::string& job) { return "strata-" + job; }

}  // namespace

std::vector<std::vector<std::string>> slurm_round_commands(const std::vector<RoundPlacement>& previous,
                                                           const std::vector<RoundPlacement>& current,
                                                           const std::string& job_command) {
  std::vector<std::vector<std::string>> out;
  for (const auto& p : previous) {
    const RoundPlacement* now = find_job(current, p.job);
    if (now == nullptr || !continues(&p, *now)) out.push_back({"scancel", "--name=" + slurm_name(p.job)});
  }
  for (const auto& c : current) {
    if (continues(find_job(previous, c.job), c)) continue;
    out.push_back({"sbatch", "--parsable", "--job-name=" + slurm_name(c.job), "--nodes=1",
                   fmt::format("--gres=gpu:{}:{}", c.type, c.gpus), "--wrap=" + job_command});
  }
  return out;
}

std::string shell_line(const std::vector<std::string>& argv) {
  std::string line;
  for (const auto& a : argv) {
    if (!line.empty()) line += ' ';
    const bool plain = !a.empty() && std::all_of(a.begin(), a.end(), [](char ch) {
      return std::isalnum(static_cast<unsigned char>(ch)) || std::string_view("-_=:./,+").find(ch) != std::string_view::npos;
    });
    if (plain) {
      line += a;
      continue;
    }
    line += '\'';
    for (char ch : a) line += ch == '\'' ? std::string("'\\''") : std::string(1, ch);
    line += '\'';
  }
  return line;
}

}  // namespace strata::sched
