// exec/options: the torch-free side of the executor's interface — model/strategy → run options, the runtime's
// support rules, and the JSON forms of the options (the parent → worker config file) and of the run record.
#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <limits>

#include "strata/cost/per_stage.hpp"
#include "strata/core/error.hpp"
#include "strata/core/json.hpp"
#include "strata/core/text.hpp"
#include "strata/exec/run.hpp"
#include "strata/hw/cluster.hpp"
#include "strata/hw/hardware.hpp"

namespace strata::exec {
namespace {
using core::InputError;
using core::JsonWhere;

std::vector<double> number_list(const core::Json& obj, std::string_view key, const JsonWhere& w) {
  std::vector<double> out;
  if (!core::has_field(obj, key)) return out;
  const auto& arr = obj.at(std::string(key));
  core::expect_array(arr, w.field(key));
  for (std::size_t i = 0; i < arr.size(); ++i) {
    // null: a non-finite value (a diverged loss), which JSON cannot hold and nlohmann writes as null.
    if (arr[i].is_null()) {
      out.push_back(std::numeric_limits<double>::quiet_NaN());
      continue;
    }
    if (!arr[i].is_number()) core::fail(w.field(key).index(i), "must be a number");
    out.push_back(arr[i].get<double>());
  }
  return out;
}

int int_field(const core::Json& obj, std::string_view key, const JsonWhere& w, int fallback) {
  if (!core::has_field(obj, key)) return fallback;
  return static_cast<int>(core::get_int(obj, key, w));
}

}  // namespace

GptDims gpt_dims_of(const model::Model& m) {
  const auto bad = [&](const std::string& why) {
    return InputError(fmt::format("model '{}': the executor trains GPT-style decoders only: {}", m.name, why));
  };
  if (m.layers.size() < 3) throw bad("needs embedding, at least one block and an lm_head");
  const auto& emb = m.layers.front();
  const auto& head = m.layers.back();
  if (emb.kind != model::LayerKind::embedding) throw bad("the first layer is not an embedding");
  if (head.kind != model::LayerKind::lm_head) throw bad("the last layer is not an lm_head");
  GptDims d;
  d.name = m.name;
  d.layers = static_cast<int>(m.layers.size()) - 2;
  const auto& b0 = m.layers[1];
  for (std::size_t i = 1; i + 1 < m.layers.size(); ++i) {
    const auto& b = m.layers[i];
    if (b.kind != model::LayerKind::transformer) throw bad(fmt::format("layer '{}' is not a transformer block", b.name));
    if (b.hidden != b0.hidden || b.heads != b0.heads || b.ffn != b0.ffn || b.bias != b0.bias)
      throw bad(fmt::format("layer '{}' differs from the first block (all blocks must be alike)", b.name));
    if (b.activation != model::Activation::gelu) throw bad(fmt::format("layer '{}' is not a GELU MLP", b.name));
    if (b.norm != model::Norm::layernorm) throw bad(fmt::format("layer '{}' does not use LayerNorm", b.name));
    if (b.kv_heads != 0 && b.kv_heads != b.heads) throw bad(fmt::format("layer '{}' uses GQA/MQA", b.name));
    if (b.experts > 0) throw bad(fmt::format("layer '{}' is a mixture of experts", b.name));
  }
  d.hidden = b0.hidden;
  d.heads = b0.heads;
  d.ffn = b0.ffn > 0 ? b0.ffn : 4 * b0.hidden;
  d.vocab = emb.vocab > 0 ? emb.vocab : m.vocab;
  d.seq = m.seq;
  d.tied_embeddings = head.tied_embeddings;
  d.bias = b0.bias;
  d.learned_positions = emb.learned_positions;
  if (d.hidden <= 0 || d.heads <= 0 || d.hidden % d.heads != 0 || d.vocab <= 0 || d.seq <= 0)
    throw bad("hidden, heads, vocab and seq must be positive with heads dividing hidden");
  return d;
}

std::string_view to_string(Optimizer o) { return o == Optimizer::sgd ? "sgd" : "adam"; }

Optimizer parse_optimizer(std::string_view text, const std::string& where) {
  const auto t = core::to_lower(text);
  if (t == "sgd") return Optimizer::sgd;
  if (t == "adam") return Optimizer::adam;
  throw InputError(fmt::format("{}: unknown optimizer '{}' (valid: adam, sgd)", where, text));
}

FaultSpec parse_fault(std::string_view text, const std::string& where) {
  FaultSpec f;
  const auto parts = [&] {
    std::vector<std::string> out;
    std::string cur;
    for (char c : text) {
      if (c == ':') {
        out.push_back(cur);
        cur.clear();
      } else {
        cur += c;
      }
    }
    out.push_back(cur);
    return out;
  }();
  if (parts.size() < 2 || parts.size() > 3)
    throw InputError(fmt::format("{}: expected RANK:STEP[:kill|hang|exit], got '{}'", where, text));
  try {
    f.rank = std::stoi(parts[0]);
    f.step = std::stoi(parts[1]);
  } catch (const std::exception&) {
    throw InputError(fmt::format("{}: RANK and STEP must be integers, got '{}'", where, text));
  }
  if (parts.size() == 3) f.mode = parts[2];
  if (f.mode != "kill" && f.mode != "hang" && f.mode != "exit")
    throw InputError(fmt::format("{}: unknown fault mode '{}' (valid: kill, hang, exit)", where, f.mode));
  return f;
}

hw::Cluster local_cpu_cluster(int world_size) {
  // The catalog's cpu-local node type (placeholder cpu devices on loopback) with world_size devices, built by
  // hw::add_nodes like every other cluster (so its derived fields, e.g. has_oversubscribed_cpu_node, hold).
  const auto catalog = hw::builtin_catalog();
  hw::NodeSpec node = catalog.node("cpu-local", "executor: local cluster");
  node.gpus = world_size;
  hw::Cluster c;
  c.name = fmt::format("cpu-local:{}", world_size);
  hw::add_nodes(c, node, 1, catalog);
  return c;
}

std::string unsupported_reason(const GptDims& d, const cost::Strategy& s) {
  if (!cost::is_uniform(s)) {
    // Per-stage (issues 14, 41): flush schedules, each stage its own dp, tp and ZeRO shards, every stage run as its
    // own uniform view; the boundary transfers re-shard between stages of different dp and tp (worker_p2p).
    for (const auto& st : s.stages)
      if (!st.layer_choices.empty())
        return "per-layer choices (layers=) in a per-stage strategy whose stages differ in (dp, tp) or leave devices "
               "idle (per-layer choices run when every stage has one dp and tp and all devices are used)";
    if (s.schedule != cost::Schedule::gpipe && s.schedule != cost::Schedule::one_f_one_b)
      return "per-stage strategies run gpipe or 1f1b (PipeDream's replicated async mode is not built)";
    for (int i = 0; i < static_cast<int>(s.stages.size()); ++i)
      if (auto why = unsupported_reason(d, cost::stage_local_strategy(s, i)); !why.empty())
        return fmt::format("stage {}: {}", i, why);
    return "";
  }
  if (d.heads % s.tp != 0) return fmt::format("tp = {} does not divide the {} heads", s.tp, d.heads);
  if (d.ffn % s.tp != 0) return fmt::format("tp = {} does not divide ffn = {}", s.tp, d.ffn);
  if (s.sequence_parallel && d.seq % s.tp != 0)
    return fmt::format("sequence parallelism needs tp = {} to divide seq = {}", s.tp, d.seq);
  const bool async = s.schedule == cost::Schedule::pipedream || s.schedule == cost::Schedule::two_bw;
  if (async && s.virtual_stages != 1) return "pipedream/2bw run one chunk per stage (v = 1)";
  if (async && s.zero_stage != 0) return "pipedream/2bw keep whole weight versions per stage (zero = 0)";
  if (s.schedule == cost::Schedule::two_bw && s.num_micro_batches() < s.pp)
    return fmt::format("2bw needs at least pp = {} micro-batches per step so that two weight versions suffice, "
                       "got m = {}",
                       s.pp, s.num_micro_batches());
  // Oases' overlapped TP runs on all-reduces (exec/nn_overlap.cpp); sp's ring reduce-scatter is blocking.
  if (s.tp_overlap && s.sequence_parallel)
    return "overlap=on with sp=on (the executor overlaps the all-reduces of tensor parallelism, not sp's "
           "reduce-scatter/all-gather: docs/executor.md)";
  if (s.tp_overlap && s.recompute == model::Recompute::full)
    return "overlap=on with recompute=full (the executor's overlapped schedule keeps its graphs: use selective)";
  if (s.tp_async) return "overlap=async (the chunked collective matmul: costed and exported, not run: docs/executor.md)";
  if (s.recompute == model::Recompute::oases) return "recompute=oases (costed and planned, not run: docs/executor.md)";
  if (s.recompute == model::Recompute::op) return "recompute=op (torchtitan's per-op checkpointing: costed, not run)";
  if (static_cast<int>(s.split.size()) != s.pp * s.virtual_stages) return "the strategy is not complete (split)";
  int total = 0;
  for (int x : s.split) total += x;
  if (total != d.chain_length())
    return fmt::format("split sums to {} but the model chain has {} entries", total, d.chain_length());
  return "";
}

RunOptions make_run_options(const model::Model& m, cost::Strategy s, int world_size) {
  if (world_size <= 0 && !s.stages.empty()) world_size = cost::devices_used(s);  // per-stage form: Σ dp_i·tp_i
  if (s.cp > 1) throw InputError("--strategy: cp: the executor does not run context parallelism (use cp=1)");
  if (world_size <= 0) {
    // docs/strategy.md: tp and pp default to 1 and dp to the devices left, so a strategy that leaves some out runs
    // on the product of the ones it gives (`pp=2,gbs=8` → 2 ranks, `gbs=8` → 1).
    const auto given = [](int x) { return x > 0 ? static_cast<std::int64_t>(x) : 1; };
    const std::int64_t n = given(s.dp) * given(s.tp) * given(s.pp);
    world_size = static_cast<int>(std::min<std::int64_t>(n, 1 << 20));
  }
  if (world_size > 64) throw InputError(fmt::format("--world-size: {} local processes is too many (max 64)", world_size));
  RunOptions o;
  o.model = gpt_dims_of(m);
  o.strategy = cost::complete_strategy(std::move(s), m, local_cpu_cluster(world_size));
  split_layer_choices(m, o.strategy, local_cpu_cluster(world_size), o);  // per-layer form: issue 16
  if (!cost::is_uniform(o.strategy) && cost::devices_used(o.strategy) != world_size)
    throw InputError(fmt::format("--strategy: the stages use {} of the {} local processes (idle ranks are not run: "
                                 "give --world-size {})", cost::devices_used(o.strategy), world_size,
                                 cost::devices_used(o.strategy)));
  if (const auto why = unsupported_reason(o.model, o.strategy); !why.empty())
    throw InputError("--strategy: the executor does not support this: " + why);
  return o;
}

nlohmann::ordered_json to_json(const GptDims& d) {
  return {{"name", d.name}, {"layers", d.layers}, {"hidden", d.hidden}, {"heads", d.heads},
          {"ffn", d.ffn},   {"vocab", d.vocab},   {"seq", d.seq},       {"tied_embeddings", d.tied_embeddings},
          {"bias", d.bias}, {"learned_positions", d.learned_positions}};
}

GptDims gpt_dims_from_json(const nlohmann::json& m, const core::JsonWhere& mw) {
  GptDims d;
  d.name = core::get_string(m, "name", mw);
  d.layers = static_cast<int>(core::get_positive_int(m, "layers", mw));
  d.hidden = core::get_positive_int(m, "hidden", mw);
  d.heads = core::get_positive_int(m, "heads", mw);
  d.ffn = core::get_positive_int(m, "ffn", mw);
  d.vocab = core::get_positive_int(m, "vocab", mw);
  d.seq = core::get_positive_int(m, "seq", mw);
  d.tied_embeddings = core::get_bool(m, "tied_embeddings", mw);
  d.bias = core::get_bool(m, "bias", mw);
  d.learned_positions = core::get_bool(m, "learned_positions", mw);
  return d;
}

nlohmann::ordered_json to_json(const RunOptions& o) {
  nlohmann::ordered_json j;
  j["model"] = to_json(o.model);
  j["strategy"] = cost::to_json(o.strategy);
  j["steps"] = o.steps;
  j["seed"] = o.seed;
  j["optimizer"] = std::string(to_string(o.optimizer));
  j["lr"] = o.lr;
  j["timeout_s"] = o.timeout_s;
  j["checkpoint_dir"] = o.checkpoint_dir;
  j["resume_dir"] = o.resume_dir;
  j["threads"] = o.threads;
  j["bucket_bytes"] = o.bucket_bytes;
  j["worker_exe"] = o.worker_exe;
  j["progress"] = o.progress;
  j["record_ops"] = o.record_ops;
  j["fault"] = {{"rank", o.fault.rank}, {"step", o.fault.step}, {"mode", o.fault.mode}};
  auto layers = nlohmann::ordered_json::array();
  for (const auto& lc : o.layer_choices)
    layers.push_back({{"data_parallel", std::string(cost::to_string(lc.data_parallel))},
                      {"recompute", std::string(model::to_string(lc.recompute))}});
  j["layer_choices"] = layers;
  return j;
}

RunOptions run_options_from_json(const nlohmann::json& j, const std::string& origin) {
  const JsonWhere w{origin, ""};
  core::expect_object(j, w);
  RunOptions o;
  const auto& m = core::require_field(j, "model", w);
  const auto mw = w.field("model");
  o.model = gpt_dims_from_json(m, mw);
  o.strategy = cost::strategy_from_json(core::require_field(j, "strategy", w), origin + ": strategy");
  o.steps = static_cast<int>(core::get_positive_int(j, "steps", w));
  o.seed = static_cast<std::uint64_t>(core::get_int(j, "seed", w));
  o.optimizer = parse_optimizer(core::get_string(j, "optimizer", w), w.field("optimizer").str());
  o.lr = core::get_positive_number(j, "lr", w);
  o.timeout_s = core::get_positive_number(j, "timeout_s", w);
  o.checkpoint_dir = core::opt_string(j, "checkpoint_dir", w).value_or("");
  o.resume_dir = core::opt_string(j, "resume_dir", w).value_or("");
  o.threads = int_field(j, "threads", w, 1);
  o.bucket_bytes = core::opt_positive_number(j, "bucket_bytes", w).value_or(o.bucket_bytes);
  o.worker_exe = core::opt_string(j, "worker_exe", w).value_or("");
  o.progress = core::opt_bool(j, "progress", w).value_or(false);
  o.record_ops = core::opt_bool(j, "record_ops", w).value_or(false);
  if (core::has_field(j, "fault")) {
    const auto& f = j.at("fault");
    const auto fw = w.field("fault");
    o.fault.rank = int_field(f, "rank", fw, -1);
    o.fault.step = int_field(f, "step", fw, 0);
    o.fault.mode = core::opt_string(f, "mode", fw).value_or("kill");
  }
  if (core::has_field(j, "layer_choices")) {
    const auto& arr = j.at("layer_choices");
    const auto lw = w.field("layer_choices");
    core::expect_array(arr, lw);
    for (std::size_t i = 0; i < arr.size(); ++i) {
      cost::LayerChoice lc;
      lc.tp = o.strategy.tp;
      const auto dpw = lw.index(i);
      const auto dp = core::get_string(arr[i], "data_parallel", dpw);
      if (dp != "dp" && dp != "sdp") core::fail(dpw.field("data_parallel"), "must be dp or sdp");
      lc.data_parallel = dp == "sdp" ? cost::LayerDataParallel::sdp : cost::LayerDataParallel::dp;
      lc.recompute = model::parse_recompute(core::get_string(arr[i], "recompute", dpw), dpw.field("recompute").str());
      o.layer_choices.push_back(lc);
    }
  }
  if (o.threads < 1) core::fail(w.field("threads"), "must be >= 1");
  return o;
}

double steady_median(const std::vector<double>& times) {
  if (times.empty()) return 0;
  std::vector<double> t(times.begin() + (times.size() >= 2 ? 1 : 0), times.end());
  std::sort(t.begin(), t.end());
  const std::size_t n = t.size();
  return n % 2 ? t[n / 2] : 0.5 * (t[n / 2 - 1] + t[n / 2]);
}

nlohmann::ordered_json to_json(const RunRecord& r) {
  nlohmann::ordered_json j;
  j["plan"] = r.plan;
  j["world_size"] = r.world_size;
  j["first_step"] = r.first_step;
  j["losses"] = r.losses;
  j["iteration_time_s"] = r.iteration_time_s;
  j["iteration_times_s"] = r.iteration_times_s;
  auto stages = nlohmann::ordered_json::array();
  for (const auto& s : r.stages)
    stages.push_back({{"stage", s.stage}, {"compute_s_per_iter", s.compute_s_per_iter},
                      {"wait_s_per_iter", s.wait_s_per_iter}});
  j["stages"] = stages;
  auto ranks = nlohmann::ordered_json::array();
  for (const auto& k : r.ranks) {
    ranks.push_back({{"rank", k.rank},
                     {"stage", k.stage},
                     {"dp_rank", k.dp_rank},
                     {"tp_rank", k.tp_rank},
                     {"compute_s", k.compute_s},
                     {"wait_s", k.wait_s},
                     {"peak_rss_bytes", k.peak_rss_bytes},
                     {"dp_buckets", k.dp_buckets},
                     {"dp_buckets_overlapped", k.dp_buckets_overlapped},
                     {"iteration_times_s", k.iteration_times_s}});
    if (!k.executed_ops.empty()) {
      auto ops = nlohmann::ordered_json::array();
      for (const auto& op : k.executed_ops) ops.push_back(cost::to_json(op));
      ranks.back()["executed_ops"] = std::move(ops);
    }
  }
  j["ranks"] = ranks;
  return j;
}

RunRecord run_record_from_json(const nlohmann::json& j, const std::string& origin) {
  const JsonWhere w{origin, ""};
  core::expect_object(j, w);
  RunRecord r;
  if (core::has_field(j, "plan")) r.plan = j.at("plan");
  r.world_size = static_cast<int>(core::get_positive_int(j, "world_size", w));
  r.first_step = int_field(j, "first_step", w, 0);
  r.losses = number_list(j, "losses", w);
  r.iteration_time_s = core::get_nonnegative_number(j, "iteration_time_s", w);
  r.iteration_times_s = number_list(j, "iteration_times_s", w);
  if (core::has_field(j, "stages")) {
    const auto& arr = j.at("stages");
    core::expect_array(arr, w.field("stages"));
    for (std::size_t i = 0; i < arr.size(); ++i) {
      const auto sw = w.field("stages").index(i);
      StageRecord s;
      s.stage = int_field(arr[i], "stage", sw, 0);
      s.compute_s_per_iter = core::get_number(arr[i], "compute_s_per_iter", sw);
      s.wait_s_per_iter = core::get_number(arr[i], "wait_s_per_iter", sw);
      r.stages.push_back(s);
    }
  }
  if (core::has_field(j, "ranks")) {
    const auto& arr = j.at("ranks");
    core::expect_array(arr, w.field("ranks"));
    for (std::size_t i = 0; i < arr.size(); ++i) {
      const auto rw = w.field("ranks").index(i);
      RankRecord k;
      k.rank = int_field(arr[i], "rank", rw, 0);
      k.stage = int_field(arr[i], "stage", rw, 0);
      k.dp_rank = int_field(arr[i], "dp_rank", rw, 0);
      k.tp_rank = int_field(arr[i], "tp_rank", rw, 0);
      k.compute_s = core::get_number(arr[i], "compute_s", rw);
      k.wait_s = core::get_number(arr[i], "wait_s", rw);
      k.peak_rss_bytes = core::get_number(arr[i], "peak_rss_bytes", rw);
      k.dp_buckets = int_field(arr[i], "dp_buckets", rw, 0);
      k.dp_buckets_overlapped = int_field(arr[i], "dp_buckets_overlapped", rw, 0);
      k.iteration_times_s = number_list(arr[i], "iteration_times_s", rw);
      if (core::has_field(arr[i], "executed_ops")) {
        const auto& ops = arr[i].at("executed_ops");
        core::expect_array(ops, rw.field("executed_ops"));
        for (std::size_t o = 0; o < ops.size(); ++o)
          k.executed_ops.push_back(cost::program_op_from_json(ops[o], rw.field("executed_ops").index(o)));
      }
      r.ranks.push_back(k);
    }
  }
  return r;
}

}  // namespace strata::exec
