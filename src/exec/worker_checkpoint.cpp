// exec/worker_checkpoint: sharded checkpoints — each rank saves its chunks' weights (ZeRO-3: its shard), Adam
// states and step count (PipeDream/2BW: the previous weight version too); rank 0 writes meta.json with a key that
// a resume must match (model, strategy, world, seed, optimizer), so a resumed run continues bit-identically.
#include <fmt/format.h>

#include <filesystem>
#include <fstream>

#include "strata/core/error.hpp"
#include "strata/core/json.hpp"
#include "worker.hpp"

namespace strata::exec {

std::string Worker::meta_key() const {
  std::string layers;  // per-layer strategy: data parallel and recompute of each entry
  for (const auto& lc : opt.layer_choices)
    layers += fmt::format("{}{}.{}", layers.empty() ? " layers=" : "+", cost::to_string(lc.data_parallel),
                          model::to_string(lc.recompute));
  return fmt::format("model={} strategy={}{} world={} seed={} optimizer={}", opt.model.name,
                     cost::to_cli_string(S()), layers, L.world, opt.seed, to_string(opt.optimizer));
}

void Worker::save_checkpoint(const std::string& dir, int steps_done) {
  std::filesystem::create_directories(dir);
  std::vector<Tensor> ts;
  for (auto& c : chunks) {
    // Weights: the DP region, the SDP region's shard, or both concatenated (per-layer strategies).
    if (c->meta.sdp_elems == 0)
      ts.push_back(c->main->flat);
    else if (c->meta.dp_elems == 0)
      ts.push_back(c->shard);
    else
      ts.push_back(torch::cat({c->main->flat, c->shard}));
    ts.push_back(c->exp_avg.defined() ? c->exp_avg : torch::zeros({0}));
    ts.push_back(c->exp_avg_sq.defined() ? c->exp_avg_sq : torch::zeros({0}));
    ts.push_back(torch::tensor({c->opt_step}, torch::kInt64));
    if (async) {
      // 2BW needs W(t−1) as well as W(t) to continue exactly.
      Tensor prev = torch::zeros({0});
      if (c->versions.size() >= 2) prev = std::prev(c->versions.end(), 2)->second->flat;
      ts.push_back(prev);
    }
  }
  torch::save(ts, fmt::format("{}/rank{}.pt", dir, L.rank));
  if (L.rank == 0) {
    std::ofstream f(dir + "/meta.json");
    nlohmann::ordered_json j;
    j["steps_done"] = steps_done;
    j["key"] = meta_key();
    f << j.dump(2) << "\n";
    if (!f) throw ExecError("cannot write " + dir + "/meta.json");
  }
}

void Worker::load_checkpoint(const std::string& dir) {
  const std::string meta = dir + "/meta.json";
  const auto j = core::load_json_file(meta);
  const core::JsonWhere w{meta, ""};
  const auto key = core::get_string(j, "key", w);
  if (key != meta_key())
    throw core::InputError(fmt::format("--resume {}: the checkpoint was written by '{}', this run is '{}'", dir, key,
                                       meta_key()));
  first_step = static_cast<int>(core::get_int(j, "steps_done", w));
  std::vector<Tensor> ts;
  const std::string path = fmt::format("{}/rank{}.pt", dir, L.rank);
  if (!std::filesystem::exists(path)) throw core::InputError(fmt::format("--resume {}: {} is missing", dir, path));
  torch::load(ts, path);
  const std::size_t per = async ? 5 : 4;
  if (ts.size() != per * chunks.size())
    throw core::InputError(fmt::format("--resume {}: {} holds {} tensors, expected {}", dir, path, ts.size(),
                                       per * chunks.size()));
  for (std::size_t i = 0; i < chunks.size(); ++i) {
    Chunk& c = *chunks[i];
    const Tensor* t = &ts[i * per];
    const std::int64_t D = c.meta.dp_elems;
    if (t[0].numel() != D + (c.meta.sdp_elems > 0 ? c.shard.numel() : 0))
      throw core::InputError(fmt::format("--resume {}: {} holds weights of another layout", dir, path));
    if (D > 0) c.main->flat.copy_(t[0].narrow(0, 0, D));
    if (c.meta.sdp_elems > 0) c.shard.copy_(t[0].narrow(0, D, c.shard.numel()));
    if (c.exp_avg.defined()) {
      c.exp_avg.copy_(t[1]);
      c.exp_avg_sq.copy_(t[2]);
    }
    c.opt_step = t[3].item<std::int64_t>();
    if (async) {
      const std::int64_t u = S().schedule == Schedule::two_bw ? first_step : static_cast<std::int64_t>(first_step) * m;
      c.versions.clear();
      c.versions[u] = c.main;
      if (t[4].numel() > 0) c.versions[u - 1] = make_buf(c, t[4].clone());
    }
  }
}

}  // namespace strata::exec
