// exec/rt: torch-side internals shared by the executor's translation units (nn.cpp, train.cpp, profile.cpp):
// process-group wrappers with timeouts and wait accounting, the Megatron f/g and sequence-parallel autograd
// operators, activation recompute, and the GPT layers with tensor-parallel sharding. Never included by headers
// other modules see (keeps libtorch out of their compile).
#pragma once
#include <torch/csrc/distributed/c10d/ProcessGroup.hpp>
#include <torch/torch.h>

#include <chrono>
#include <functional>
#include <memory>
#include <string>
#include <vector>

#include "strata/exec/run.hpp"

namespace strata::exec::rt {

using torch::Tensor;
using PG = c10::intrusive_ptr<c10d::ProcessGroup>;
using WorkPtr = c10::intrusive_ptr<c10d::Work>;

// Accumulated time blocked in communication (p2p receives, collective waits).
struct CommStats {
  double wait_s = 0;
};

// One process group as this rank sees it; size 1 (pg null) means "no communication needed".
struct Group {
  PG pg;
  int rank = 0, size = 1;
  std::string name;                       // "tp", "dp", "pp", "world", "embedding"
  std::chrono::milliseconds timeout{60000};
  CommStats* stats = nullptr;
};

// Waits for `w` (timing it into g.stats); turns a Gloo failure or timeout into ExecError naming `what` and g.
void wait_work(const WorkPtr& w, const Group& g, const std::string& what);
void allreduce_sum(Tensor& t, const Group& g, const std::string& what);   // in place, blocking
WorkPtr allreduce_async(Tensor& t, const Group& g);                         // in place
// All-gather of equal-sized contiguous tensors into `outputs` (size g.size, outputs[g.rank] may alias input).
void allgather(const Tensor& input, std::vector<Tensor>& outputs, const Group& g, const std::string& what);
// Ring reduce-scatter over point-to-point messages (Gloo in libtorch 1.13 has no reduce_scatter): `chunks` are
// this rank's g.size equal contiguous pieces; returns the sum over ranks of piece g.rank. (n−1) steps, each
// sending one piece to the next rank and adding the one received from the previous (Patarasuk & Yuan ring).
Tensor reduce_scatter(const std::vector<Tensor>& chunks, const Group& g, const std::string& what);
void barrier(const Group& g, const std::string& what);

// Tensor-parallel context of the model's forward pass (pointer passed through autograd functions).
struct TpCtx {
  Group tp;
  bool sp = false;  // sequence parallel (Korthikanti et al. 2022): LayerNorm regions split along the sequence
  bool compute_only = false;  // profiler: shard shapes of tp.size ranks, but skip the communication
  bool overlap = false;       // Oases' overlapped schedule (cost::Strategy::tp_overlap; not with sp): nn_overlap.cpp
};

// Megatron-LM operators (Shoeybi et al. 2019, §3): f = identity forward / all-reduce backward, g = all-reduce
// forward / identity backward. Sequence-parallel variants (Korthikanti et al. 2022, §4.2.2): all-gather along
// the sequence forward / reduce-scatter backward, and the converse.
Tensor copy_to_tp(const Tensor& x, TpCtx* ctx);            // f
Tensor reduce_from_tp(const Tensor& x, TpCtx* ctx);        // g
Tensor gather_seq(const Tensor& x, TpCtx* ctx, bool tp_consumer);   // [b, s/t, h] → [b, s, h]
Tensor reduce_scatter_seq(const Tensor& x, TpCtx* ctx);    // [b, s, h] partial sums → [b, s/t, h]
Tensor scatter_seq(const Tensor& x, TpCtx* ctx);           // [b, s, h] replicated → own [b, s/t, h]

// Activation recompute (Chen et al. 2016; Korthikanti et al. 2022): runs fn(inputs) without storing its
// intermediates and re-runs it during backward. `fn` must outlive the backward pass.
using RecomputeFn = std::function<Tensor(const std::vector<Tensor>&)>;
Tensor checkpointed(const RecomputeFn* fn, const std::vector<Tensor>& inputs);

// ---- the GPT layers --------------------------------------------------------------------------------------------
// A chain entry's parameter as this tp rank stores it.
struct ParamInit {
  std::string name;          // "wte", "block3.w_qkv", ...
  Tensor value;              // local shard, fp32, contiguous
  bool sp_partial = false;   // replicated in tp but its gradient is partial under sequence parallelism
  bool tied_embedding = false;  // "wte" of the embedding or the head's tied copy of it
};
// Deterministic parameters of chain entry `entry` (0 = embedding, 1..layers = blocks, layers+1 = head), sliced
// for tp rank `tp_rank` of `tp`. Every full matrix is drawn from its own seeded generator, so any sharding
// holds exactly the same numbers as the single-process model.
std::vector<ParamInit> init_entry(const GptDims& d, int entry, int tp, int tp_rank, bool sp, std::uint64_t seed);

enum class RecomputeMode { none, selective, full };

// Runs chain entries [first, last) of the model on `x` (tokens [b, s] int64 when first == 0, else hidden
// [b, s, h]); `params[e]` are the parameter tensors of entry e in init_entry order. Returns the hidden state, or
// the loss (sum of token cross-entropies / normalizer) when the head is included.
struct ChunkRunner {
  GptDims dims;
  TpCtx* tp = nullptr;
  int first = 0, last = 0;
  std::vector<RecomputeMode> recompute;   // per entry (blocks only)
  Tensor run(const Tensor& x, const std::vector<std::vector<Tensor>>& params, const Tensor& labels,
             double normalizer) const;
  // internals, public so recompute closures can call them
  Tensor block(const Tensor& x, const std::vector<Tensor>& p, RecomputeMode mode) const;
  Tensor attention_core(const Tensor& q, const Tensor& k, const Tensor& v) const;
  // The tensor-parallel regions of a block, from the (replicated) LayerNorm output to this rank's partial sum
  // before the row-parallel all-reduce: QKV (column) → attention → W_o (row), and FC1 (column) → GeLU → FC2 (row).
  Tensor attention_partial(const Tensor& y, const Tensor& w_qkv, const Tensor& b_qkv, const Tensor& w_o,
                           RecomputeMode mode) const;
  Tensor mlp_partial(const Tensor& y, const Tensor& w_fc1, const Tensor& b_fc1, const Tensor& w_fc2) const;
  // Oases (nn_overlap.cpp): blocks [first_entry, end_entry) on two sub-batches, each one's TP all-reduces issued
  // asynchronously while the other computes, forward and backward. `params` are the chunk's (run's argument).
  bool overlapped() const { return tp->overlap && tp->tp.size > 1 && !tp->compute_only && !tp->sp; }
  Tensor overlapped_blocks(const Tensor& x, const std::vector<std::vector<Tensor>>& params, int first_entry,
                           int end_entry) const;
  std::vector<std::unique_ptr<RecomputeFn>> fns;   // one per entry, built by prepare()
  void prepare();
};

// The synthetic token stream: sample `n` (a global index) is seq+1 tokens from a seeded generator that follows a
// fixed affine rule 3/4 of the time (so the loss can fall), the rest uniform. Returns [count, seq+1] int64.
Tensor make_samples(const GptDims& d, std::uint64_t seed, std::int64_t first_sample, std::int64_t count);

// A seed derived from several integers (SplitMix64 finaliser).
std::uint64_t mix_seed(std::uint64_t a, std::uint64_t b, std::uint64_t c = 0);

}  // namespace strata::exec::rt
