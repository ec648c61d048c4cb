// sched/mechanism: priorities X/f, greedy packing, server placement with consolidation and lease renewal.
#include "strata/sched/mechanism.hpp"

#include <algorithm>
#include <limits>
#include <tuple>

namespace strata::sched {

void RoundBook::reset(std::size_t combos, std::size_t types) {
  received.assign(combos, std::vector<double>(types, 0.0));
  rounds = 0;
}

std::vector<std::vector<double>> combo_type_fractions(const Problem& p, const Allocation& a) {
  std::vector<std::vector<double>> out(a.combos.size(), std::vector<double>(p.num_types(), 0.0));
  for (std::size_t k = 0; k < a.combos.size(); ++k)
    for (std::size_t c = 0; c < a.columns.size(); ++c) out[k][a.columns[c].type] += a.x[k][c];
  return out;
}

namespace {

struct Candidate {
  double priority;
  double x;
  int combo;
  int type;
};

int num_servers(const WorkerType& t) { return (t.count + t.per_server - 1) / t.per_server; }

// Places `sf` GPUs of one type: one server if any has room (the fullest that fits), else across servers,
// most-free first. `free` holds per-GPU availability.
std::vector<int> place(const WorkerType& t, std::vector<char>& free, int sf, bool& consolidated) {
  const int servers = num_servers(t);
  std::vector<int> free_on(servers, 0);
  for (int g = 0; g < t.count; ++g)
    if (free[g]) ++free_on[g / t.per_server];
  int best = -1;
  for (int s = 0; s < servers; ++s)
    if (free_on[s] >= sf && (best < 0 || free_on[s] < free_on[best])) best = s;
  std::vector<int> gpus;
  auto take_from = [&](int s, int n) {
    for (int g = s * t.per_server; g < std::min(t.count, (s + 1) * t.per_server) && n > 0; ++g)
      if (free[g]) free[g] = 0, gpus.push_back(g), --n;
  };
  if (best >= 0) {
    consolidated = true;
    take_from(best, sf);
    return gpus;
  }
  consolidated = false;
  std::vector<int> order(servers);
  for (int s = 0; s < servers; ++s) order[s] = s;
  std::stable_sort(order.begin(), order.end(), [&](int x, int y) { return free_on[x] > free_on[y]; });
  int left = sf;
  for (int s : order) {
    const int n = std::min(left, free_on[s]);
    take_from(s, n);
    left -= n;
    if (left == 0) break;
  }
  return gpus;
}

// Leftover pass: single jobs not placed by the priority pass, most allocated first (then input order), each on
// the type with room where it is fastest (aware) or with the most free GPUs (agnostic: no speed knowledge; ties
// by type index).
void place_leftover(const Problem& p, const Allocation& a, const std::vector<std::vector<double>>& X,
                    const std::vector<bool>& active, const RoundOptions& ro, std::vector<int>& free_count,
                    std::vector<char>& job_busy, std::vector<std::vector<int>>& chosen) {
  std::vector<std::pair<double, int>> order;
  for (std::size_t k = 0; k < a.combos.size(); ++k) {
    if (!active[k] || a.combos[k].pair >= 0 || job_busy[a.combos[k].jobs[0]]) continue;
    double total = 0;
    for (double x : X[k]) total += x;
    order.push_back({-total, static_cast<int>(k)});
  }
  std::sort(order.begin(), order.end());
  for (const auto& [neg, k] : order) {
    const Combo& c = a.combos[k];
    const JobSpec& job = p.jobs[c.jobs[0]];
    int best = -1;
    for (int j = 0; j < p.num_types(); ++j) {
      if (c.scale_factor > free_count[j] || !(job.throughputs[j] > 0)) continue;
      const bool better = ro.agnostic ? free_count[j] > free_count[best < 0 ? j : best]
                                      : job.throughputs[j] > job.throughputs[best < 0 ? j : best];
      if (best < 0 || better) best = j;
    }
    if (best < 0) continue;
    job_busy[c.jobs[0]] = 1;
    free_count[best] -= c.scale_factor;
    chosen[best].push_back(k);
  }
}

}  // namespace

std::vector<Assignment> schedule_round(const Problem& p, const Allocation& a, const RoundBook& book,
                                       const std::vector<bool>& active, const std::vector<Assignment>& previous,
                                       const RoundOptions& ro) {
  const auto X = combo_type_fractions(p, a);
  std::vector<Candidate> cands;
  for (std::size_t k = 0; k < a.combos.size(); ++k) {
    if (!active[k]) continue;
    for (int j = 0; j < p.num_types(); ++j) {
      const double x = X[k][j];
      if (x <= 1e-9) continue;
      const double f = book.rounds > 0 ? book.received[k][j] / book.rounds : 0.0;
      const double pr = f > 0 ? x / f : std::numeric_limits<double>::infinity();
      cands.push_back({pr, x, static_cast<int>(k), j});
    }
  }
  std::sort(cands.begin(), cands.end(), [](const Candidate& l, const Candidate& r) {
    return std::make_tuple(-l.priority, -l.x, l.combo, l.type) < std::make_tuple(-r.priority, -r.x, r.combo, r.type);
  });
  // Greedy packing (Algorithm 2): a job at most once per round, only if the type has room.
  std::vector<int> free_count(p.num_types());
  for (int j = 0; j < p.num_types(); ++j) free_count[j] = p.types[j].count;
  std::vector<char> job_busy(p.num_jobs(), 0);
  std::vector<std::vector<int>> chosen(p.num_types());
  for (const auto& c : cands) {
    const Combo& k = a.combos[c.combo];
    if (k.scale_factor > free_count[c.type]) continue;
    if (std::any_of(k.jobs.begin(), k.jobs.end(), [&](int m) { return job_busy[m] != 0; })) continue;
    for (int m : k.jobs) job_busy[m] = 1;
    free_count[c.type] -= k.scale_factor;
    chosen[c.type].push_back(c.combo);
  }
  if (ro.place_leftover) place_leftover(p, a, X, active, ro, free_count, job_busy, chosen);
  // Placement per type: renew leases, then largest first. prev_of[k]: combination k's last-round assignment.
  std::vector<int> prev_of(a.combos.size(), -1);
  for (std::size_t i = 0; i < previous.size(); ++i)
    if (previous[i].combo >= 0 && previous[i].combo < static_cast<int>(a.combos.size())) prev_of[previous[i].combo] = static_cast<int>(i);
  std::vector<Assignment> out;
  for (int j = 0; j < p.num_types(); ++j) {
    const WorkerType& t = p.types[j];
    std::vector<char> free(t.count, 1);
    std::vector<int> rest;
    for (int k : chosen[j]) {
      const Assignment* prev = prev_of[k] >= 0 && previous[prev_of[k]].type == j ? &previous[prev_of[k]] : nullptr;
      if (prev != nullptr &&
          std::all_of(prev->gpus.begin(), prev->gpus.end(), [&](int g) { return free[g] != 0; })) {
        for (int g : prev->gpus) free[g] = 0;
        Assignment as = *prev;
        as.renewed = true;
        out.push_back(std::move(as));
      } else {
        rest.push_back(k);
      }
    }
    std::stable_sort(rest.begin(), rest.end(),
                     [&](int x, int y) { return a.combos[x].scale_factor > a.combos[y].scale_factor; });
    for (int k : rest) {
      Assignment as;
      as.combo = k;
      as.type = j;
      as.gpus = place(t, free, a.combos[k].scale_factor, as.consolidated);
      out.push_back(std::move(as));
    }
  }
  std::sort(out.begin(), out.end(), [](const Assignment& l, const Assignment& r) {
    return std::make_pair(l.type, l.combo) < std::make_pair(r.type, r.combo);
  });
  return out;
}

void record_round(RoundBook& book, const std::vector<Assignment>& assignments) {
  for (const auto& as : assignments) book.received[as.combo][as.type] += 1.0;
  book.rounds += 1.0;
}

}  // namespace strata::sched
