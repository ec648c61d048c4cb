// bench/bench_layerwise: scenario runner for the Galvatron-BMW per-layer search (plan/layerwise, issue 16).
//   1. Search time of 48 layers × 64 GPUs (bert-huge-48 on dgx-a100:8, gbs 512, 16 GiB budget): median of N runs,
//      one thread. Target ≤ 1 s (docs/planner.md).
//   2. The paper's Table II setting (seed_001 §8.2): 8× TITAN RTX on PCIe 3.0 (examples/cluster_titan8_pcie.json),
//      fp16, budgets 8/12/16 GiB, --gbs auto, for BERT-Huge-32, T5-Large-32, ViT-Huge-32, Swin-Huge-32: samples/s of
//      Galvatron (DP+TP), Galvatron (DP+PP), the best uniform plan of strata's planner (full space) and the
//      per-layer plan (BMW, never below the uniform plan: the search space contains it), plus Swin's per-layer
//      choices. Exit 1 if an ordering of the acceptance fails.
// Usage: bench_layerwise [repeats=5] [table=1]
#include <fmt/format.h>

#include <algorithm>
#include <chrono>
#include <string>
#include <vector>

#include "strata/core/text.hpp"
#include "strata/core/units.hpp"
#include "strata/cost/strategy.hpp"
#include "strata/hw/cluster.hpp"
#include "strata/model/model.hpp"
#include "strata/plan/layerwise.hpp"

using namespace strata;

namespace {

double median(std::vector<double> v) {
  std::sort(v.begin(), v.end());
  return v[v.size() / 2];
}

double rate(const plan::LayerwisePlan& p) { return p.found ? p.estimate.samples_per_s : 0.0; }

std::string cell(double r, std::int64_t gbs) { return r > 0 ? fmt::format("{:.2f} ({})", r, gbs) : "OOM"; }

}  // namespace

int table_ii(const hw::Catalog& catalog);

int main(int argc, char** argv) {
  const int repeats = argc > 1 ? std::max(1, std::atoi(argv[1])) : 5;
  const bool table = argc > 2 ? std::atoi(argv[2]) != 0 : true;
  const auto catalog = hw::builtin_catalog();
  {
    const auto m = model::zoo_model("bert-huge-48");
    const auto c = hw::resolve_cluster("dgx-a100:8", catalog);
    plan::LayerwiseOptions o;
    o.global_batch = 512;
    o.cost.memory_budget_bytes = 16 * core::kGiB;
    std::vector<double> times;
    plan::LayerwisePlan p;
    for (int r = 0; r < repeats; ++r) {
      const auto t0 = std::chrono::steady_clock::now();
      p = plan::plan_layerwise(m, c, o);
      times.push_back(std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count());
    }
    fmt::print("search bert-huge-48 ({} chain entries) on dgx-a100:8 (64 GPUs), gbs 512, 16 GiB: median {:.3f} s over {} "
               "runs (min {:.3f}, max {:.3f}); {} configurations, {} stage DPs; best {:.2f} samples/s pp{}\n",
               m.layers.size(), median(times), repeats, *std::min_element(times.begin(), times.end()),
               *std::max_element(times.begin(), times.end()), p.configs, p.dp_runs, rate(p), p.strategy.pp);
  }
  return table ? table_ii(catalog) : 0;
}

// The Table II acceptance table; 1 when an ordering fails.
int table_ii(const hw::Catalog& catalog) {
  const auto c = hw::resolve_cluster(std::string(STRATA_SOURCE_DIR) + "/examples/cluster_titan8_pcie.json", catalog);
  std::vector<std::vector<std::string>> rows;
  bool ok = true;
  int strictly = 0, strictly_1f1b = 0, cells = 0;
  std::vector<std::string> swin_lines;
  for (double gib : {8.0, 12.0, 16.0}) {
    for (const char* name : {"bert-huge-32", "t5-large-32", "vit-huge-32", "swin-huge-32"}) {
      const auto m = model::zoo_model(name);
      plan::LayerwiseOptions o;
      o.dtype = hw::Dtype::fp16;
      o.cost.memory_budget_bytes = gib * core::kGiB;
      plan::LayerwiseOptions dptp = o, dppp = o;
      dptp.space = {.sdp = false, .ckpt = false, .tp = true, .strided = false};
      dptp.max_pp = 1;
      dptp.zero2 = dppp.zero2 = false;  // Galvatron's DP+TP / DP+PP baselines: no ZeRO
      dppp.space = {.sdp = false, .ckpt = false, .tp = false};
      const auto a = plan::plan_layerwise(m, c, dptp);
      const auto b = plan::plan_layerwise(m, c, dppp);
      const auto lw = plan::plan_layerwise(m, c, o);
      plan::PlanOptions po;
      po.dtype = hw::Dtype::fp16;
      po.cost = o.cost;
      po.baselines = false;
      const auto uni = plan::plan_auto_gbs(m, c, po);
      const double ur = uni ? uni->top.front().estimate.samples_per_s : 0.0;
      po.max_v = 1;  // the uniform plans of Galvatron's schedule family (1F1B, no interleaving)
      const auto uni1 = plan::plan_auto_gbs(m, c, po);
      const double u1 = uni1 ? uni1->top.front().estimate.samples_per_s : 0.0;
      if (rate(lw) > u1 * (1 + 1e-9)) ++strictly_1f1b;
      const std::int64_t ug = uni ? uni->top.front().strategy.global_batch : 0;
      // BMW = the better of the per-layer DP plan and the uniform plan (the per-layer space contains uniform plans).
      const double bmw = std::max(rate(lw), ur);
      ++cells;
      if (rate(lw) > ur * (1 + 1e-9)) ++strictly;
      if (bmw < ur || ur < std::max(rate(a), rate(b)) * (1 - 1e-9)) ok = false;
      const double bmw_final = std::max(rate(lw), ur);
      rows.push_back({fmt::format("{:g}G", gib), name, cell(rate(a), a.strategy.global_batch),
                      cell(rate(b), b.strategy.global_batch), cell(u1, uni1 ? uni1->top.front().strategy.global_batch : 0),
                      cell(ur, ug),
                      cell(rate(lw), lw.strategy.global_batch), fmt::format("{:.2f}", bmw_final),
                      u1 > 0 && rate(lw) > 0 ? fmt::format("{:.2f}x", rate(lw) / u1) : "-",
                      ur > 0 && rate(lw) > 0 ? fmt::format("{:.2f}x", rate(lw) / ur) : "-",
                      fmt::format("{:.2f}", lw.search_time_s)});
      if (std::string(name) == "swin-huge-32" && lw.found) {
        swin_lines.push_back(fmt::format("swin-huge-32 at {:g} GiB (gbs {}, mbs {}):", gib, lw.strategy.global_batch,
                                         lw.strategy.micro_batch));
        for (const auto& l : plan::describe_layer_choices(lw.strategy)) swin_lines.push_back("  " + l);
      }
      std::fflush(stdout);
    }
  }
  fmt::print("\nTable II setting: 8x TITAN RTX (PCIe 3.0), fp16, --gbs auto; samples/s (global batch)\n{}\n",
             core::render_table({"budget", "model", "DP+TP", "DP+PP", "uniform 1F1B", "uniform best",
                                 "per-layer DP", "BMW", "DP/1F1B", "DP/uniform", "search s"},
                                rows));
  fmt::print("per-layer DP plan strictly faster than the best uniform plan in {} of {} cells, than the best uniform "
             "1F1B plan (no interleaving) in {} of {}; ordering BMW >= uniform best >= DP+TP/DP+PP {}\n"
             "(BMW = the faster of the per-layer DP plan and the uniform plan: `strata plan --layerwise`'s best)\n\n",
             strictly, cells, strictly_1f1b, cells, ok ? "holds" : "FAILS");
  for (const auto& l : swin_lines) fmt::print("{}\n", l);
  return ok ? 0 : 1;
}
