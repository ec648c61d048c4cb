// exec/train: one rank of a run — rendezvous (TCPStore), the process groups of the plan, the pipeline program
// (cost/program) built and checked once and handed to the rank's interpreter (exec/worker*), and the measured
// record gathered on rank 0. docs/executor.md explains the design.
#include <fmt/format.h>
#include <sys/resource.h>
#include <torch/csrc/distributed/c10d/PrefixStore.hpp>
#include <torch/csrc/distributed/c10d/ProcessGroupGloo.hpp>
#include <torch/csrc/distributed/c10d/TCPStore.hpp>
#include <unistd.h>

#include <algorithm>
#include <cstdlib>
#include <fstream>
#include <limits>
#include <map>

#include "strata/cost/per_stage.hpp"
#include "strata/core/error.hpp"
#include "strata/core/json.hpp"
#include "worker.hpp"

namespace strata::exec {
using namespace rt;

nlohmann::ordered_json Worker::rank_json() const {
  rusage ru{};
  getrusage(RUSAGE_SELF, &ru);
  nlohmann::ordered_json j;
  j["rank"] = L.rank;
  j["stage"] = L.stage;
  j["dp_rank"] = L.dp_rank;
  j["tp_rank"] = L.tp_rank;
  j["compute_s"] = compute_s;
  j["wait_s"] = stats.wait_s;
  j["peak_rss_bytes"] = static_cast<double>(ru.ru_maxrss) * 1024.0;
  j["iteration_times_s"] = iter_times;
  j["dp_buckets"] = buckets_total;
  j["dp_buckets_overlapped"] = buckets_overlapped;
  if (holds_loss) j["losses"] = losses;
  if (opt.record_ops) {
    auto ops = nlohmann::ordered_json::array();
    for (const auto& op : executed) ops.push_back(cost::to_json(op));
    j["executed_ops"] = std::move(ops);
  }
  return j;
}


namespace {

// Least time the processes get to start and meet at the TCPStore (seconds), whatever --timeout says.
constexpr double kRendezvousFloorS = 30;

RunRecord merge_records(const RunOptions& o, const std::vector<nlohmann::json>& ranks, int first_step) {
  RunRecord r;
  r.plan = {{"model", to_json(o)["model"]},
            {"strategy", cost::to_json(o.strategy)},
            {"strategy_cli", cost::to_cli_string(o.strategy)},
            {"optimizer", std::string(to_string(o.optimizer))},
            {"lr", o.lr},
            {"seed", o.seed},
            {"steps", o.steps},
            {"runtime_dtype", "fp32"}};
  if (!o.layer_choices.empty()) r.plan["layer_choices"] = to_json(o)["layer_choices"];  // per-layer (issue 16)
  r.world_size = static_cast<int>(ranks.size());
  r.first_step = first_step;
  std::map<int, std::pair<double, double>> stage_sum;
  std::map<int, int> stage_n;
  for (const auto& j : ranks) {
    RankRecord k;
    const core::JsonWhere w{"rank record", ""};
    k.rank = static_cast<int>(core::get_int(j, "rank", w));
    k.stage = static_cast<int>(core::get_int(j, "stage", w));
    k.dp_rank = static_cast<int>(core::get_int(j, "dp_rank", w));
    k.tp_rank = static_cast<int>(core::get_int(j, "tp_rank", w));
    k.compute_s = core::get_number(j, "compute_s", w);
    k.wait_s = core::get_number(j, "wait_s", w);
    k.peak_rss_bytes = core::get_number(j, "peak_rss_bytes", w);
    k.iteration_times_s = j.at("iteration_times_s").get<std::vector<double>>();
    k.dp_buckets = j.value("dp_buckets", 0);
    k.dp_buckets_overlapped = j.value("dp_buckets_overlapped", 0);
    if (j.contains("losses")) {
      // A diverged loss (nan/inf) travels as JSON null: read back as NaN, reported by the caller with its step.
      r.losses.clear();
      for (const auto& x : j.at("losses"))
        r.losses.push_back(x.is_number() ? x.get<double>() : std::numeric_limits<double>::quiet_NaN());
    }
    if (j.contains("executed_ops"))
      for (const auto& op : j.at("executed_ops")) k.executed_ops.push_back(cost::program_op_from_json(op, w));
    if (r.iteration_times_s.size() < k.iteration_times_s.size()) r.iteration_times_s.resize(k.iteration_times_s.size(), 0);
    for (std::size_t i = 0; i < k.iteration_times_s.size(); ++i)
      r.iteration_times_s[i] = std::max(r.iteration_times_s[i], k.iteration_times_s[i]);
    stage_sum[k.stage].first += k.compute_s;
    stage_sum[k.stage].second += k.wait_s;
    ++stage_n[k.stage];
    r.ranks.push_back(k);
  }
  std::sort(r.ranks.begin(), r.ranks.end(), [](const auto& a, const auto& b) { return a.rank < b.rank; });
  const double steps = std::max(1, o.steps);
  for (const auto& [s, sum] : stage_sum)
    r.stages.push_back({s, sum.first / stage_n[s] / steps, sum.second / stage_n[s] / steps});
  r.iteration_time_s = steady_median(r.iteration_times_s);
  return r;
}

std::shared_ptr<gloo::transport::Device> make_device(const DistEnv& env) {
  if (env.loopback) return c10d::ProcessGroupGloo::createDeviceForHostname("127.0.0.1");
  if (const char* ifname = std::getenv("GLOO_SOCKET_IFNAME"); ifname && *ifname)
    return c10d::ProcessGroupGloo::createDeviceForInterface(ifname);
  return c10d::ProcessGroupGloo::createDefaultDevice();
}

}  // namespace

RunRecord worker_run(const RunOptions& o, const DistEnv& env, const std::string& result_path) {
  const auto& s = o.strategy;
  if (const auto why = unsupported_reason(o.model, s); !why.empty())
    throw core::InputError("the executor does not support this strategy: " + why);
  if (!o.layer_choices.empty() && static_cast<int>(o.layer_choices.size()) != o.model.chain_length())
    throw core::InputError(fmt::format("layer_choices: {} entries for a model chain of {}", o.layer_choices.size(),
                                       o.model.chain_length()));
  const int world = cost::devices_used(s);
  if (env.world_size != world)
    throw core::InputError(fmt::format("WORLD_SIZE is {} but the strategy needs dp·tp·pp = {} ranks", env.world_size, world));
  at::set_num_threads(o.threads);
  torch::manual_seed(o.seed);
  Worker w;
  w.opt = o;
  w.L = make_layout(s, env.rank);
  // Per-stage strategies (issue 14): the rank runs its stage with the stage-local view (its dp, tp and m_i).
  if (!cost::is_uniform(s)) w.opt.strategy = cost::stage_local_strategy(s, w.L.stage);
  const auto timeout = std::chrono::milliseconds(static_cast<std::int64_t>(o.timeout_s * 1000));
  c10::intrusive_ptr<c10d::Store> store;
  std::shared_ptr<gloo::transport::Device> device;
  const auto make_group = [&](const std::string& name, std::vector<int> members) {
    Group g;
    g.name = name;
    g.timeout = timeout;
    g.stats = &w.stats;
    g.size = static_cast<int>(members.size());
    g.rank = static_cast<int>(std::find(members.begin(), members.end(), env.rank) - members.begin());
    if (g.size <= 1) return g;
    std::string prefix = name;
    for (int r : members) prefix += "_" + std::to_string(r);
    auto opts = c10d::ProcessGroupGloo::Options::create(timeout);
    opts->devices.push_back(device);
    opts->threads = 2;
    try {
      g.pg = c10::make_intrusive<c10d::ProcessGroupGloo>(c10::make_intrusive<c10d::PrefixStore>(prefix, store), g.rank,
                                                          g.size, opts);
    } catch (const std::exception& e) {
      throw ExecError(fmt::format("creating the {} process group failed (a peer did not join within {} s): {}", name,
                                  o.timeout_s, e.what()));
    }
    return g;
  };
  const Layout& L = w.L;
  if (world > 1) {
    c10d::TCPStoreOptions so;
    so.port = static_cast<std::uint16_t>(env.master_port);
    so.isServer = env.rank == 0;
    so.numWorkers = world;
    so.waitWorkers = true;
    // The store rendezvous waits for every process to start (loading libtorch takes seconds on a busy machine),
    // which is not what --timeout bounds (a collective or p2p step): it gets at least kRendezvousFloorS.
    so.timeout = std::max(timeout, std::chrono::milliseconds(static_cast<std::int64_t>(kRendezvousFloorS * 1000)));
    try {
      store = c10::make_intrusive<c10d::TCPStore>(env.master_addr, so);
    } catch (const std::exception& e) {
      throw ExecError(fmt::format("TCPStore rendezvous at {}:{} failed: {}", env.master_addr, env.master_port, e.what()));
    }
    device = make_device(env);
    std::vector<int> all(world), tpm, dpm, ppm;
    for (int r = 0; r < world; ++r) all[r] = r;
    for (int t = 0; t < L.tp; ++t) tpm.push_back(L.rank_of(L.stage, L.dp_rank, t));
    for (int d = 0; d < L.dp; ++d) dpm.push_back(L.rank_of(L.stage, d, L.tp_rank));
    for (int st = 0; st < L.pp && !L.per_stage(); ++st) ppm.push_back(L.rank_of(st, L.dp_rank, L.tp_rank));
    if (L.per_stage()) ppm = {env.rank};  // per-stage p2p goes over the world group (peers depend on the micro-batch)
    // Same creation order on every rank (world, tp, dp, pp, embedding): each rank is in exactly one group of
    // each kind, so the blocking Gloo rendezvous of every group completes.
    w.world = make_group("world", all);
    w.tp = make_group("tp", tpm);
    w.dp = make_group("dp", dpm);
    w.pp = make_group("pp", ppm);
    if (o.model.tied_embeddings && L.pp > 1 && (L.stage == 0 || L.stage == L.pp - 1)) {
      std::vector<int> emb = {L.rank_of(0, L.dp_rank, L.tp_rank), L.rank_of(L.pp - 1, L.dp_rank, L.tp_rank)};
      if (L.per_stage()) {  // every rank of the first and the last stage (sync_tied_per_stage scales the copies)
        emb.clear();
        for (int st : {0, L.pp - 1})
          for (int r = 0; r < L.stage_dp[st] * L.stage_tp[st]; ++r) emb.push_back(L.first_rank[st] + r);
      }
      w.emb = make_group("embedding", emb);
    }
  }
  w.build(cost::chunk_boundaries(s));
  if (!o.resume_dir.empty()) w.load_checkpoint(o.resume_dir);
  // The one schedule (cost/program): built for this run's steps from the first step (a resume continues the
  // global micro-batch and weight-version numbering) and validated before any rank starts.
  const auto prog = cost::build_program(cost::program_shape(w.S(), o.steps, w.first_step));
  if (const auto why = cost::check_program(prog); !why.empty())
    throw std::logic_error("the pipeline program is invalid: " + why);
  barrier(w.world, "start barrier");
  w.stats.wait_s = 0;
  w.run_program(prog);
  if (!o.checkpoint_dir.empty()) w.save_checkpoint(o.checkpoint_dir, w.first_step + o.steps);

  // Gather the rank records on rank 0 through the store (works for local and torchrun launches alike).
  std::vector<nlohmann::json> ranks{nlohmann::json::parse(w.rank_json().dump())};
  if (world > 1) {
    const std::string mine = w.rank_json().dump();
    store->set(fmt::format("strata/record/{}", env.rank), std::vector<std::uint8_t>(mine.begin(), mine.end()));
    if (env.rank != 0) {
      RunRecord own;
      own.world_size = world;
      return own;
    }
    ranks.clear();
    for (int r = 0; r < world; ++r) {
      const auto key = fmt::format("strata/record/{}", r);
      store->wait({key}, timeout);
      const auto bytes = store->get(key);
      ranks.push_back(nlohmann::json::parse(std::string(bytes.begin(), bytes.end())));
    }
  }
  RunRecord rec = merge_records(o, ranks, w.first_step);
  if (!result_path.empty()) {
    std::ofstream f(result_path);
    f << to_json(rec).dump(2) << "\n";
    if (!f) throw ExecError("cannot write " + result_path);
  }
  return rec;
}

RunRecord run_in_process(const RunOptions& o) {
  if (o.strategy.dp * o.strategy.tp * o.strategy.pp != 1)
    throw core::InputError("run_in_process: the strategy must have dp = tp = pp = 1");
  DistEnv env;
  env.world_size = 1;
  return worker_run(o, env, "");
}

void worker_process_main(const std::string& config_path, const std::string& result_path) {
  int rank = -1;
  std::string where;
  try {
    const RunOptions o = run_options_from_json(core::load_json_file(config_path), config_path);
    const DistEnv env = dist_env_from_environment();
    if (env.world_size == 0) throw core::InputError("exec-worker: RANK and WORLD_SIZE must be set");
    rank = env.rank;
    const Layout L = make_layout(o.strategy, rank);
    where = fmt::format(" (stage {}, dp {}, tp {})", L.stage, L.dp_rank, L.tp_rank);
    worker_run(o, env, result_path);
  } catch (const std::exception& e) {
    fmt::print(stderr, "strata: rank {}{}: error: {}\n", rank, where, e.what());
    std::fflush(stderr);
    std::fflush(stdout);
    ::_exit(3);
  }
  std::fflush(stdout);
  std::fflush(stderr);
  ::_exit(0);
}

}  // namespace strata::exec
