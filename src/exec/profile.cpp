// exec/profile: `strata profile` — layer forward/backward timings (this process, one thread, compute only; the
// tensor-parallel shard shapes without the communication, which the collective rows cover) and Gloo collective
// timings on loopback (spawned ranks, each collective timed inside a compute loop as training meets it), in the
// profile format of cost/profile.hpp; plus the cluster file.
#include "strata/exec/profile.hpp"

#include <fmt/format.h>
#include <torch/csrc/distributed/c10d/PrefixStore.hpp>
#include <torch/csrc/distributed/c10d/ProcessGroupGloo.hpp>
#include <torch/csrc/distributed/c10d/TCPStore.hpp>
#include <sched.h>
#include <unistd.h>

#include <algorithm>
#include <cmath>
#include <fstream>
#include <optional>

#include "launch.hpp"
#include "rt.hpp"
#include "strata/core/error.hpp"
#include "strata/core/json.hpp"
#include "strata/cost/profile.hpp"
#include "strata/hw/cluster.hpp"
#include "strata/hw/hardware.hpp"

namespace strata::exec {
namespace {
using namespace rt;
using Clock = std::chrono::steady_clock;

double since(Clock::time_point t0) { return std::chrono::duration<double>(Clock::now() - t0).count(); }

double median(std::vector<double> v) {
  if (v.empty()) return 0;
  std::sort(v.begin(), v.end());
  const std::size_t n = v.size();
  return n % 2 ? v[n / 2] : 0.5 * (v[n / 2 - 1] + v[n / 2]);
}

struct Timed {
  double fwd_s = 0, bwd_s = 0;
};

// Median forward and backward time of chain entry `entry` for one micro-batch on one of `tp` ranks.
Timed time_entry(const GptDims& d, int entry, int tp, std::int64_t mbs, int repeats) {
  TpCtx ctx;
  ctx.tp.size = tp;
  ctx.compute_only = true;
  ChunkRunner r;
  r.dims = d;
  r.tp = &ctx;
  r.first = entry;
  r.last = entry + 1;
  r.recompute.assign(d.layers + 2, RecomputeMode::none);
  r.prepare();
  std::vector<Tensor> params;
  for (auto& p : init_entry(d, entry, tp, 0, false, 1)) params.push_back(p.value.requires_grad_(true));
  const std::vector<std::vector<Tensor>> by_entry{params};
  const Tensor labels = torch::randint(d.vocab, {mbs, d.seq}, torch::kInt64);
  std::vector<double> fwd, bwd;
  for (int i = 0; i <= repeats; ++i) {
    Tensor x = entry == 0 ? torch::randint(d.vocab, {mbs, d.seq}, torch::kInt64)
                          : torch::randn({mbs, d.seq, d.hidden}).requires_grad_(true);
    const auto t0 = Clock::now();
    Tensor y = r.run(x, by_entry, labels, 1.0);
    const double f = since(t0);
    const auto t1 = Clock::now();
    if (y.dim() == 0)
      y.backward();
    else
      y.backward(torch::ones_like(y));
    const double b = since(t1);
    for (auto& p : params) p.mutable_grad().reset();
    if (i > 0) {  // the first run warms up allocator and kernels
      fwd.push_back(f);
      bwd.push_back(b);
    }
  }
  return {median(fwd), median(bwd)};
}

double matmul_flops_per_s() {
  const std::int64_t n = 512;
  const Tensor a = torch::randn({n, n}), b = torch::randn({n, n});
  std::vector<double> t;
  for (int i = 0; i < 6; ++i) {
    const auto t0 = Clock::now();
    const Tensor c = torch::matmul(a, b);
    t.push_back(since(t0));
    (void)c;
  }
  t.erase(t.begin());
  return 2.0 * n * n * n / median(t);
}

// Compute between two timed collectives in the profile's training-like loop: about a tensor-parallel layer half of
// the CPU models the executor runs (small-gpt: 1–4 ms), long enough for ranks to drift apart as they do in training.
constexpr double kCommComputeBlock_s = 2e-3;

double copy_bytes_per_s() {
  const Tensor a = torch::randn({8 << 20}), b = torch::empty_like(a);
  std::vector<double> t;
  for (int i = 0; i < 6; ++i) {
    const auto t0 = Clock::now();
    b.copy_(a);
    t.push_back(since(t0));
  }
  t.erase(t.begin());
  return 2.0 * static_cast<double>(a.numel()) * 4.0 / median(t);  // read + write
}

}  // namespace

namespace {
nlohmann::ordered_json profile_layers_here(const ProfileOptions& o);
}

nlohmann::ordered_json profile_layers(const ProfileOptions& o) {
  if (o.concurrency <= 1) return profile_layers_here(o);
  detail::TempDir dir;
  const std::string config = dir.path + "/layers.json", result = dir.path + "/rows.json";
  {
    nlohmann::ordered_json j;
    j["model"] = to_json(o.model);
    j["tp"] = o.tp;
    j["mbs"] = o.mbs;
    j["repeats"] = o.repeats;
    j["threads"] = o.threads;
    std::ofstream f(config);
    f << j.dump(2);
  }
  if (o.progress)
    fmt::print(stderr, "strata profile: layers in {} concurrent processes\n", o.concurrency);
  const std::string exe = o.worker_exe.empty() ? detail::self_exe() : o.worker_exe;
  detail::spawn_and_wait(exe, {"exec-worker", "--profile-layers", "--config", config, "--result", result},
                         o.concurrency, o.timeout_s, "layer profiling");
  return nlohmann::ordered_json::parse(core::read_text_file(result));
}

void profile_layers_worker_main(const std::string& config_path, const std::string& result_path) {
  try {
    const auto cfg = core::load_json_file(config_path);
    const core::JsonWhere w{config_path, ""};
    ProfileOptions o;
    o.model = gpt_dims_from_json(core::require_field(cfg, "model", w), w.field("model"));
    o.tp = cfg.at("tp").get<std::vector<int>>();
    o.mbs = cfg.at("mbs").get<std::vector<std::int64_t>>();
    o.repeats = static_cast<int>(core::get_positive_int(cfg, "repeats", w));
    o.threads = static_cast<int>(core::get_positive_int(cfg, "threads", w));
    const auto rows = profile_layers_here(o);
    if (dist_env_from_environment().rank == 0) {
      std::ofstream f(result_path);
      f << rows.dump(2) << "\n";
      if (!f) throw ExecError("cannot write " + result_path);
    }
  } catch (const std::exception& e) {
    fmt::print(stderr, "strata: layer profiling rank: error: {}\n", e.what());
    std::fflush(stderr);
    ::_exit(3);
  }
  std::fflush(stdout);
  ::_exit(0);
}

namespace {
nlohmann::ordered_json profile_layers_here(const ProfileOptions& o) {
  at::set_num_threads(o.threads);
  torch::manual_seed(1);
  const GptDims& d = o.model;
  auto rows = nlohmann::ordered_json::array();
  const auto row = [&](const char* kind, int tp, std::int64_t mbs, const Timed& t) {
    nlohmann::ordered_json j;
    j["kind"] = kind;
    j["hidden"] = d.hidden;
    if (std::string(kind) == "transformer") {
      j["heads"] = d.heads;
      j["ffn"] = d.ffn;
    }
    j["seq"] = d.seq;
    j["tp"] = tp;
    j["mbs"] = mbs;
    j["fwd_s"] = std::max(t.fwd_s, 1e-9);
    j["bwd_s"] = std::max(t.bwd_s, 1e-9);
    j["includes_tp_comm"] = false;  // compute only: the collective rows price the TP all-reduces
    rows.push_back(j);
  };
  for (const auto mbs : o.mbs) {
    // The executor replicates embedding and head across tensor-parallel ranks, so their time does not depend
    // on tp: measured once, written for every tp.
    const Timed emb = time_entry(d, 0, 1, mbs, o.repeats);
    const Timed head = time_entry(d, d.layers + 1, 1, mbs, o.repeats);
    for (const int tp : o.tp) {
      if (d.heads % tp != 0 || d.ffn % tp != 0) continue;
      if (o.progress) fmt::print(stderr, "strata profile: layers tp={} mbs={}\n", tp, mbs);
      row("embedding", tp, mbs, emb);
      row("transformer", tp, mbs, time_entry(d, 1, tp, mbs, o.repeats));
      row("lm_head", tp, mbs, head);
    }
  }
  return rows;
}
}  // namespace

nlohmann::ordered_json profile_collectives(const ProfileOptions& o) {
  if (o.max_group < 2) return nlohmann::ordered_json::array();
  detail::TempDir dir;
  const std::string config = dir.path + "/profile.json", result = dir.path + "/collectives.json";
  {
    nlohmann::ordered_json j;
    j["max_group"] = o.max_group;
    j["message_bytes"] = o.message_bytes;
    j["repeats"] = o.comm_repeats;
    // The compute block between collectives: kCommComputeBlock_s of this machine's one-thread matmul speed.
    j["compute_block_flops"] = kCommComputeBlock_s * matmul_flops_per_s();
    j["timeout_s"] = o.timeout_s;
    std::ofstream f(config);
    f << j.dump(2);
  }
  if (o.progress)
    fmt::print(stderr, "strata profile: Gloo collectives on loopback, group sizes 2..{} ({} processes)\n", o.max_group,
               o.max_group);
  const std::string exe = o.worker_exe.empty() ? detail::self_exe() : o.worker_exe;
  detail::spawn_and_wait(exe, {"exec-worker", "--profile-comm", "--config", config, "--result", result}, o.max_group,
                         o.timeout_s + 2, "collective profiling");
  nlohmann::ordered_json rows = nlohmann::ordered_json::parse(core::read_text_file(result));
  return rows;
}

nlohmann::ordered_json run_profile(const ProfileOptions& o) {
  nlohmann::ordered_json j;
  j["source"] = fmt::format(
      "strata profile of {} on this machine ({} thread(s) per rank, layers timed in {} concurrent process(es), fp32, "
      "libtorch + Gloo; collectives timed in {} processes between {:g} ms compute blocks, loop time minus compute "
      "time)",
      o.model.name, o.threads, o.concurrency, o.max_group, kCommComputeBlock_s * 1e3);
  j["device"] = "cpu";
  j["dtype"] = "fp32";
  j["layers"] = profile_layers(o);
  j["collectives"] = profile_collectives(o);
  j["machine"] = {{"matmul_flops_per_s", matmul_flops_per_s()},
                  {"memory_bw_bytes_per_s", copy_bytes_per_s()},
                  {"memory_bytes", static_cast<double>(sysconf(_SC_PHYS_PAGES)) * static_cast<double>(sysconf(_SC_PAGE_SIZE))}};
  return j;
}

int usable_cpu_cores() {
  cpu_set_t set;
  CPU_ZERO(&set);
  if (sched_getaffinity(0, sizeof(set), &set) == 0) return std::max(1, CPU_COUNT(&set));
  return std::max(1L, sysconf(_SC_NPROCESSORS_ONLN));
}

nlohmann::ordered_json local_cluster_json(const nlohmann::json& profile, int devices, int cpu_cores) {
  // Loopback link from the p2p rows (time = α + bytes/B, fitted by the cost module's profile reader).
  const cost::Profile p = cost::profile_from_json(profile, "profile");
  double bw = 1e9, latency = 1e-5;
  for (const auto& f : p.fits)
    if (f.op == cost::Collective::p2p && f.group_size == 2) {
      if (f.beta_s_per_byte > 0) bw = 1.0 / f.beta_s_per_byte;
      latency = std::max(f.alpha_s, 1e-7);
    }
  const auto& machine = profile.contains("machine") ? profile.at("machine") : nlohmann::json::object();
  hw::Catalog local;
  hw::GpuSpec gpu;
  gpu.name = "cpu-local";
  gpu.display_name = "this machine's CPU, one executor rank";
  gpu.vendor = "cpu";
  gpu.memory_bytes = machine.value("memory_bytes", 16.0 * (1 << 30)) / std::max(1, devices);
  gpu.memory_bw_bytes_per_s = machine.value("memory_bw_bytes_per_s", 2e10);
  gpu.peak_flops[hw::Dtype::fp32] = machine.value("matmul_flops_per_s", 1e11);
  gpu.source = "measured by strata profile: 512^3 fp32 matmul, one thread; memory = RAM / devices";
  local.gpus.push_back(gpu);
  hw::LinkSpec link;
  link.name = "loopback";
  link.bw_bytes_per_s = bw;
  link.latency_s = latency;
  link.source = "measured by strata profile: Gloo p2p on 127.0.0.1, α–β fit";
  local.links.push_back(link);
  hw::NodeSpec node;
  node.name = "cpu-local";
  node.gpu = gpu.name;
  node.gpus = devices;
  node.intra_link = node.nic_link = link.name;
  node.nics = 1;
  node.cpu_cores = cpu_cores;
  node.source = "strata profile of this machine";
  // Built with hw's builder, so a file the loader would reject is never written (InputError here instead).
  hw::Cluster check;
  check.name = "cpu-local";
  hw::add_nodes(check, node, 1, local);
  nlohmann::ordered_json j;
  j["name"] = check.name;
  j["gpus"] = {hw::to_json(gpu)};
  j["links"] = {hw::to_json(link)};
  j["nodes"] = {hw::to_json(node)};
  j["nodes"][0]["count"] = 1;
  return j;
}

void profile_worker_main(const std::string& config_path, const std::string& result_path) {
  int rank = -1;
  try {
    const auto cfg = core::load_json_file(config_path);
    const core::JsonWhere w{config_path, ""};
    const int max_group = static_cast<int>(core::get_positive_int(cfg, "max_group", w));
    const int repeats = static_cast<int>(core::get_positive_int(cfg, "repeats", w));
    const double timeout_s = core::get_positive_number(cfg, "timeout_s", w);
    const auto sizes = cfg.at("message_bytes").get<std::vector<double>>();
    const double block_flops = core::get_positive_number(cfg, "compute_block_flops", w);
    const DistEnv env = dist_env_from_environment();
    rank = env.rank;
    at::set_num_threads(1);
    const auto timeout = std::chrono::milliseconds(static_cast<std::int64_t>(timeout_s * 1000));
    c10d::TCPStoreOptions so;
    so.port = static_cast<std::uint16_t>(env.master_port);
    so.isServer = env.rank == 0;
    so.numWorkers = env.world_size;
    so.timeout = timeout;
    auto store = c10::make_intrusive<c10d::TCPStore>(env.master_addr, so);
    auto device = c10d::ProcessGroupGloo::createDeviceForHostname("127.0.0.1");
    CommStats stats;
    // Group `block` of n consecutive ranks (ranks block·n .. block·n + n − 1).
    const auto group = [&](int n, int block) {
      Group g;
      g.name = fmt::format("profile{}-{}", n, block);
      g.size = n;
      g.rank = env.rank - block * n;
      g.timeout = timeout;
      g.stats = &stats;
      auto opts = c10d::ProcessGroupGloo::Options::create(timeout);
      opts->devices.push_back(device);
      g.pg = c10::make_intrusive<c10d::ProcessGroupGloo>(c10::make_intrusive<c10d::PrefixStore>(g.name, store), g.rank,
                                                          n, opts);
      return g;
    };
    const Group world = group(env.world_size, 0);
    // Compute block: fixed-size 256×256 matmuls worth compute_block_flops (the same on every rank).
    const Tensor ma = torch::randn({256, 256}), mb = torch::randn({256, 256});
    const int mm_count = std::max(1, static_cast<int>(std::lround(block_flops / (2.0 * 256 * 256 * 256))));
    const auto compute = [&] {
      for (int i = 0; i < mm_count; ++i) (void)torch::mm(ma, mb);
    };
    // Mean seconds per (compute block; op) iteration on this rank, after two warm-up iterations.
    const auto loop_time = [&](const std::function<void()>& op) {
      for (int i = 0; i < 2; ++i) {
        compute();
        if (op) op();
      }
      const auto t0 = Clock::now();
      for (int i = 0; i < repeats; ++i) {
        compute();
        if (op) op();
      }
      return since(t0) / repeats;
    };
    // Time of `op` = median over three rounds of (op loop − compute-only loop), the two loops of a round run
    // back to back so that drifts of the host's load cancel.
    const auto op_time = [&](const std::function<void()>& op) {
      std::vector<double> d;
      for (int round = 0; round < 3; ++round) {
        const double base = loop_time({});
        d.push_back(loop_time(op) - base);
      }
      return median(d);
    };
    auto rows = nlohmann::ordered_json::array();
    const auto add_row = [&](const char* op, int n, double bytes, double t) {
      if (env.rank == 0)
        rows.push_back({{"op", op}, {"group_size", n}, {"bytes", bytes}, {"time_s", std::max(t, 1e-7)}});
    };
    for (int n = 2; n <= max_group; ++n) {
      // Every rank takes part: groups of n consecutive ranks run the collective at once (as the dp/tp groups of a
      // plan do); ranks left over only compute. Time of a collective = loop time − compute-only loop time.
      const int groups = env.world_size / n;
      const bool member = env.rank < groups * n;
      std::optional<Group> g;
      if (member) g = n == env.world_size ? world : group(n, env.rank / n);
      barrier(world, "profile barrier");
      for (const double bytes : sizes) {
        const std::int64_t numel = std::max<std::int64_t>(n, static_cast<std::int64_t>(bytes / 4) / n * n);
        const double actual = static_cast<double>(numel) * 4;
        if (!member) {  // keep the host as busy as the members' loops would find it
          for (int k = 0; k < 6 * (n == 2 ? 4 : 3); ++k) (void)loop_time({});
          continue;
        }
        Tensor buf = torch::ones({numel});
        add_row("allreduce", n, actual, op_time([&] { allreduce_sum(buf, *g, "profile all-reduce"); }));
        std::vector<Tensor> outs;
        for (int r = 0; r < n; ++r) outs.push_back(torch::empty({numel / n}));
        const Tensor part = torch::ones({numel / n});
        add_row("allgather", n, actual, op_time([&] { allgather(part, outs, *g, "profile all-gather"); }));
        std::vector<Tensor> chunks;
        for (const auto& c : buf.chunk(n)) chunks.push_back(c.contiguous());
        add_row("reduce_scatter", n, actual,
                op_time([&] { (void)reduce_scatter(chunks, *g, "profile reduce-scatter"); }));
        if (n == 2) {
          // One-way p2p time = half an exchange (send then receive back).
          Tensor msg = torch::ones({numel});
          const double exchange = op_time([&] {
            std::vector<Tensor> v{msg};
            if (g->rank == 0) {
              wait_work(g->pg->send(v, 1, 1), *g, "profile send");
              wait_work(g->pg->recv(v, 1, 2), *g, "profile recv");
            } else {
              wait_work(g->pg->recv(v, 0, 1), *g, "profile recv");
              wait_work(g->pg->send(v, 0, 2), *g, "profile send");
            }
          });
          add_row("p2p", 2, actual, exchange / 2);
        }
      }
      barrier(world, "profile barrier");
    }
    if (env.rank == 0) {
      std::ofstream f(result_path);
      f << rows.dump(2) << "\n";
      if (!f) throw ExecError("cannot write " + result_path);
    }
    barrier(world, "profile end barrier");
  } catch (const std::exception& e) {
    fmt::print(stderr, "strata: profile rank {}: error: {}\n", rank, e.what());
    std::fflush(stderr);
    ::_exit(3);
  }
  std::fflush(stdout);
  ::_exit(0);
}

}  // namespace strata::exec
