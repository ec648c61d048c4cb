// exec/run: the executor's public interface — run a strategy for real on local processes (libtorch + c10d
// ProcessGroupGloo, CPU fp32) and get the measured record back. No torch types here: modules above exec (cli,
// plan --trials, bench) include this without compiling libtorch headers. How it works: docs/executor.md.
#pragma once
#include <cstdint>
#include <stdexcept>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "strata/core/json.hpp"
#include "strata/cost/program.hpp"
#include "strata/cost/strategy.hpp"
#include "strata/model/model.hpp"

namespace strata::exec {

// A run that failed at run time (a rank died, timed out, a collective failed). Not an InputError: the input was
// fine, the machine or a peer was not. The message is one line naming the rank(s) and the cause.
struct ExecError : std::runtime_error {
  using std::runtime_error::runtime_error;
};

// The GPT decoder the runtime trains: embedding (+ learned positions) → `layers` blocks (LayerNorm, causal MHA,
// LayerNorm, GELU MLP) → final LayerNorm + LM head, cross-entropy. Dropout is off (p = 0) so runs are exact.
struct GptDims {
  std::string name;
  int layers = 0;
  std::int64_t hidden = 0, heads = 0, ffn = 0, vocab = 0, seq = 0;
  bool tied_embeddings = true;    // head shares the embedding matrix (Megatron: a copy on the last stage whose
                                  // gradient is summed with the embedding's over the first/last-stage group)
  bool bias = true;               // linear layers carry biases
  bool learned_positions = true;  // embedding adds a seq×hidden position table
  int chain_length() const { return layers + 2; }  // embedding, blocks, head: the cost::Strategy split units
};
// The runtime's view of a model::Model; InputError naming the model when it is not a GPT-style decoder the
// runtime can train (GELU + LayerNorm + MHA, no MoE, an embedding → blocks → lm_head chain).
GptDims gpt_dims_of(const model::Model& m);
nlohmann::ordered_json to_json(const GptDims& d);
GptDims gpt_dims_from_json(const nlohmann::json& j, const core::JsonWhere& where);

enum class Optimizer { sgd, adam };
std::string_view to_string(Optimizer o);
Optimizer parse_optimizer(std::string_view text, const std::string& where);

// Test hook: make one rank fail on purpose at the start of a step ("kill" = SIGKILL itself, "hang" = stop
// making progress, "exit" = exit(5)).
struct FaultSpec {
  int rank = -1;   // -1 = no fault
  int step = 0;
  std::string mode = "kill";
};
FaultSpec parse_fault(std::string_view text, const std::string& where);  // "RANK:STEP[:kill|hang|exit]"

struct RunOptions {
  GptDims model;
  cost::Strategy strategy;        // complete (cost::complete_strategy): degrees, split and placement filled
  int steps = 5;                  // optimizer steps (iterations) to run in this invocation
  std::uint64_t seed = 1;         // data stream and initial weights
  Optimizer optimizer = Optimizer::adam;
  double lr = 1e-3;
  double timeout_s = 60;          // collective / p2p / rendezvous timeout (the TCPStore start-up meeting gets
                                  // at least 30 s); also the launcher's grace period
  std::string checkpoint_dir;     // save a sharded checkpoint here after the last step ("" = none)
  std::string resume_dir;         // resume from this checkpoint ("" = start from step 0)
  int threads = 1;                // intra-op threads per rank (at::set_num_threads)
  double bucket_bytes = 1 << 20;  // data-parallel gradient bucket size
  std::string worker_exe;         // binary with the `exec-worker` sub-command ("" = /proc/self/exe)
  bool progress = false;          // the last rank prints one line per step on stderr
  bool record_ops = false;        // every rank records the pipeline-program ops it executed (RankRecord)
  FaultSpec fault;
  // Per-layer strategy (Galvatron-BMW, issue 16): one choice per chain entry (data parallel dp/sdp and recompute
  // of each layer; tp = the stage's), or empty = every layer follows `strategy`. When set, `strategy` is its
  // uniform stand-in (layer_plan.cpp) and the worker takes zero = 3 and recompute from here, per layer.
  std::vector<cost::LayerChoice> layer_choices;
};
nlohmann::ordered_json to_json(const RunOptions& o);
RunOptions run_options_from_json(const nlohmann::json& j, const std::string& origin);

// Builds run options for model `m` and a (possibly partial) strategy completed for `world_size` local CPU ranks
// (world_size 0 = dp·tp·pp of the strategy, which must then be given). Checks what the runtime supports
// (InputError naming the rule otherwise).
RunOptions make_run_options(const model::Model& m, cost::Strategy s, int world_size);
// A complete per-layer strategy (cost::is_layerwise) as the runtime runs it: its uniform stand-in (same dp, tp, pp,
// split; zero capped at 2 for the DP layers, recompute = the layers' least-memory mode for host_memory_need) and
// the per-chain-entry choices. InputError (one line naming the stage and layer) for what the runtime cannot run:
// a layer tp differing from its stage's, strided tp, overlapped tp, recompute=oases, pipedream/2bw, checkpoints.
void split_layer_choices(const model::Model& m, const cost::Strategy& s, const hw::Cluster& c, RunOptions& o);
// The cost::Cluster stand-in for N local CPU ranks, used to complete strategies (one node, N "cpu" devices).
hw::Cluster local_cpu_cluster(int world_size);
// Rules of the runtime on top of cost::complete_strategy (e.g. ZeRO with PipeDream, seq % tp with sp). Empty
// string = supported.
std::string unsupported_reason(const GptDims& d, const cost::Strategy& s);

// What one rank measured.
struct RankRecord {
  int rank = 0, stage = 0, dp_rank = 0, tp_rank = 0;
  std::vector<double> iteration_times_s;  // per step, on this rank
  double compute_s = 0;                   // forward/backward compute, all steps
  double wait_s = 0;                      // blocked in p2p receives and collectives, all steps
  double peak_rss_bytes = 0;              // getrusage ru_maxrss
  int dp_buckets = 0;                     // data-parallel gradient buckets all-reduced (all steps)
  int dp_buckets_overlapped = 0;          // ... of which launched from backward hooks, before backward ended
  std::vector<cost::ProgramOp> executed_ops;  // with RunOptions::record_ops: the program ops run, in order
};

struct StageRecord {
  int stage = 0;
  double compute_s_per_iter = 0;          // mean over the stage's ranks
  double wait_s_per_iter = 0;
};

struct RunRecord {
  nlohmann::ordered_json plan;            // model dims + strategy + options
  int world_size = 0;
  int first_step = 0;                     // global index of the first step run (> 0 after --resume)
  std::vector<double> losses;             // one per step: mean token cross-entropy of the global batch
  std::vector<double> iteration_times_s;  // per step, max over ranks
  double iteration_time_s = 0;            // median of the steady steps (all but the first when steps >= 2)
  std::vector<StageRecord> stages;
  std::vector<RankRecord> ranks;
};
nlohmann::ordered_json to_json(const RunRecord& r);
RunRecord run_record_from_json(const nlohmann::json& j, const std::string& origin);
// Median of the steady iterations (drops the first one when there are two or more).
double steady_median(const std::vector<double>& times);

// Spawns dp·tp·pp local processes (fork + exec of worker_exe with torchrun-style env), waits for them and
// returns rank 0's merged record. ExecError when a rank fails; every child is reaped (SIGKILL after the grace
// period), none is left behind. This is what `strata run` and `strata plan --trials` call.
RunRecord run_local(const RunOptions& o);
// Trains in this process (the strategy must have dp = tp = pp = 1): the single-process reference of the tests.
RunRecord run_in_process(const RunOptions& o);

// Host memory a run needs (bytes), counted as the executor allocates it (src/exec/host_memory.cpp gives the
// terms and sources): a lower bound, so a run it refuses cannot fit.
struct HostMemoryNeed {
  double largest_rank_bytes = 0;  // the rank of the heaviest stage
  double all_ranks_bytes = 0;     // summed over all dp·tp·pp ranks
};
HostMemoryNeed host_memory_need(const RunOptions& o);
// MemAvailable of /proc/meminfo in bytes; -1 when it cannot be read.
double available_host_memory_bytes();
// InputError (one line with both figures) when the `local_ranks` ranks of this host need more than
// MemAvailable. run_local checks all ranks; under torchrun each process checks its host's LOCAL_WORLD_SIZE share.
void check_host_memory(const RunOptions& o, int local_ranks);

// Rank environment of a worker (torchrun's variables).
struct DistEnv {
  int rank = 0, world_size = 1, local_rank = 0;
  int local_world_size = 1;  // LOCAL_WORLD_SIZE (ranks on this host); 1 when unset
  std::string master_addr = "127.0.0.1";
  int master_port = 0;
  bool loopback = false;  // spawned by run_local: bind Gloo to 127.0.0.1
};
// Reads RANK, WORLD_SIZE, LOCAL_RANK, MASTER_ADDR, MASTER_PORT (and STRATA_EXEC_LOOPBACK); nullopt-like
// world_size 0 when RANK/WORLD_SIZE are not set.
DistEnv dist_env_from_environment();
// One rank's whole life: rendezvous, process groups, training, record. Rank 0 writes the merged record to
// `result_path` ("" = none) and returns it; other ranks return their own. Throws on failure.
RunRecord worker_run(const RunOptions& o, const DistEnv& env, const std::string& result_path);
// The `strata exec-worker` entry: runs worker_run, prints a one-line error naming the rank on failure, and
// terminates the process without running destructors (Gloo threads may be stuck on a dead peer). Never returns.
[[noreturn]] void worker_process_main(const std::string& config_path, const std::string& result_path);

}  // namespace strata::exec
