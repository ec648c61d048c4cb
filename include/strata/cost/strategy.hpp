// cost/strategy: what a parallel training strategy is — plain, JSON-serialisable data — plus its CLI syntax,
// documented defaults (uniform Megatron split, Megatron placement) and the validity rules. It lives in `cost`
// (not `plan`) because the cost model evaluates it and every module above reads it (see docs/ARCHITECTURE.md).
#pragma once
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include <nlohmann/json.hpp>

#include "strata/hw/cluster.hpp"
#include "strata/hw/hardware.hpp"
#include "strata/model/layer.hpp"
#include "strata/model/model.hpp"

namespace strata::cost {

enum class Schedule { gpipe, one_f_one_b, interleaved, pipedream, two_bw };
std::string_view to_string(Schedule s);                                     // "gpipe", "1f1b", "interleaved", ...
Schedule parse_schedule(std::string_view text, const std::string& where);  // InputError otherwise

struct Strategy {
  int dp = 1, tp = 1, pp = 1;
  std::int64_t micro_batch = 1;          // mbs
  std::int64_t global_batch = 1;         // gbs; micro-batches per pipeline m = gbs / (dp·mbs)
  int virtual_stages = 1;                // v: model chunks per device (interleaved schedule)
  Schedule schedule = Schedule::one_f_one_b;
  int zero_stage = 0;                    // 0..3 (3 = sharded data parallel / FSDP)
  model::Recompute recompute = model::Recompute::none;
  // Optional per-stage number of recomputed layers (size pp); empty = every layer follows `recompute`.
  std::vector<int> recompute_layers;
  bool sequence_parallel = false;
  hw::Dtype dtype = hw::Dtype::bf16;     // compute dtype (mixed precision)
  // Attention kernel; unset = the default of each stage's GPU (attention_kernel_for: flash where supported).
  std::optional<model::AttentionKernel> attention;
  // Layers per pipeline chunk, in chain order (size pp·v), counting entries of the model's layer chain
  // (embedding and head included). Empty = default: blocks spread evenly, embedding with the first chunk, head
  // with the last (Megatron).
  std::vector<int> split;
  // placement[r] = physical device of rank r, where r = (stage·dp + dp_rank)·tp + tp_rank (tp fastest, then dp,
  // then pp: Megatron's order). Empty = identity on the cluster's node-major device order.
  std::vector<int> placement;

  std::int64_t num_micro_batches() const { return global_batch / (static_cast<std::int64_t>(dp) * micro_batch); }
  int num_devices() const { return dp * tp * pp; }
  int device(int stage, int dp_rank, int tp_rank) const { return placement[(stage * dp + dp_rank) * tp + tp_rank]; }
};

// CLI syntax: "dp=8,tp=8,pp=16,mbs=1,gbs=1536,v=3,schedule=interleaved,zero=1,recompute=full,sp=on,
// split=6+6+…,rlayers=2+2+…,dtype=bf16,place=0+1+2…". InputError naming the key on anything invalid.
// `where` = "--strategy". Keys not given are left for complete_strategy: dp/tp/pp/gbs come back as 0 (= unset),
// the rest with the struct's defaults (docs/strategy.md). strategy_from_json does the same for JSON.
Strategy parse_strategy(std::string_view text, const std::string& where = "--strategy");
std::string to_cli_string(const Strategy& s);
nlohmann::ordered_json to_json(const Strategy& s);
Strategy strategy_from_json(const nlohmann::json& j, const std::string& origin);
// Reads a strategy file, or a plan file (takes its "best" entry's strategy).
Strategy load_strategy_file(const std::string& path);

// Fills documented defaults (split, placement, pp=devices/(dp·tp) when dp·tp·pp is short...) and checks every
// rule: dp·tp·pp = devices, gbs divisible by dp·mbs, tp divides heads, v ≥ 1 and interleaving needs m % pp == 0,
// stages ≤ layers, split sums to the layer count, placement is a permutation... InputError naming the rule.
Strategy complete_strategy(Strategy s, const model::Model& m, const hw::Cluster& c);

// The attention kernel a stage on `gpu` runs: the strategy's choice, else flash on GPUs with bf16 tensor cores
// (FlashAttention 2 needs Ampere/Hopper-class GPUs (sm80+) or AMD MI200+; all of them, and only they in the
// catalog, list bf16), eager elsewhere (V100, T4, CPU). docs/strategy.md.
model::AttentionKernel attention_kernel_for(const Strategy& s, const hw::GpuSpec& gpu);

// The first layer index of each chunk (size pp·v + 1; last entry = number of layers).
std::vector<int> chunk_boundaries(const Strategy& s);
// The Megatron default split of `num_chunks` chunks over the model's chain.
std::vector<int> default_split(const model::Model& m, int num_chunks);

}  // namespace strata::cost
