// export/internal: helpers shared by the engine writers and readers (not part of the public API).
#pragma once
#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "strata/export/export.hpp"

namespace strata::exporter::detail {

// Transformer blocks per pipeline chunk (chain order), i.e. the split without the embedding (chunk 0) and the
// head (last chunk). The split must be complete.
std::vector<int> blocks_per_chunk(const cost::Strategy& s);
// The inverse: chain entries per chunk.
std::vector<int> split_from_blocks(std::vector<int> blocks);
// Chunk blocks of a Megatron-style split: `first`/`last` blocks on pipeline stage 0 / pp−1 (0 = share evenly),
// the rest spread evenly; each stage's blocks spread evenly over its v chunks. Empty when not divisible.
std::vector<int> megatron_stage_blocks(int layers, int pp, int v, int first, int last);

// The Megatron memory knobs (gradbuf=bf16, lpweights=on, offload=N) an engine's config cannot carry: the first one
// set, named for `engine` ("" = none); clear_memory_knobs resets them (the closest plan of such an engine).
std::string memory_knob_problem(const cost::Strategy& s, std::string_view engine);
void clear_memory_knobs(cost::Strategy& s);

// Per-engine: the first unexpressible feature ("" = none) and the nearest expressible strategy (not completed).
std::string megatron_problem(const model::Model& m, const cost::Strategy& s);
void megatron_closest(const model::Model& m, cost::Strategy& s);
std::string torchtitan_problem(const model::Model& m, const cost::Strategy& s);
void torchtitan_closest(const model::Model& m, cost::Strategy& s);
// torchtitan's start-up refusals and its fp32 fallback (DDP with tp/pp, AMP without FSDP, cp without FSDP).
std::string torchtitan_runtime_problem(const cost::Strategy& s);
// torchtitan's pipeline_parallel_schedule name of the strategy's schedule (TOML and Python configs alike).
std::string torchtitan_schedule_name(const cost::Strategy& s);
std::string deepspeed_problem(const model::Model& m, const cost::Strategy& s);
void deepspeed_closest(const model::Model& m, cost::Strategy& s);
std::string launch_problem(const hw::Cluster& c, const cost::Strategy& s);
void launch_closest(cost::Strategy& s);
// Per-stage and per-layer strategies (export/per_stage.cpp): "" when `s` is uniform, else what no engine can
// express; per_stage_closest turns a per-layer plan of alike stages over every device into the uniform plan of its
// stages' layouts (true), and leaves any other per-stage strategy as it is (false).
std::string per_stage_problem(const hw::Cluster& c, const cost::Strategy& s);
bool per_stage_closest(const model::Model& m, const hw::Cluster& c, cost::Strategy& s);

// Writers (the strategy complete and expressible).
std::vector<std::string> megatron_arg_list(const model::Model& m, const cost::Strategy& s);  // flag, value, ...
std::string megatron_args_text(const model::Model& m, const hw::Cluster& c, const cost::Strategy& s);
std::string torchtitan_toml(const model::Model& m, const hw::Cluster& c, const cost::Strategy& s);
// The current torchtitan (b5bcd76c) config: a Python module whose function returns a Trainer.Config.
std::string torchtitan_py(const model::Model& m, const hw::Cluster& c, const cost::Strategy& s);
std::string torchtitan_py_problem(const model::Model& m, const cost::Strategy& s);
std::string deepspeed_json(const model::Model& m, const hw::Cluster& c, const cost::Strategy& s);
std::string launch_script(Engine e, const model::Model& m, const hw::Cluster& c, const cost::Strategy& s);

// Shell-like tokens: whitespace-separated, '…' and "…" quotes, backslash-newline continuations, # comments.
std::vector<std::string> shell_tokens(std::string_view text);
// Integer of a flag or key value; InputError "<origin>: <name>: ..." otherwise (and when < min).
std::int64_t parse_int(std::string_view text, const std::string& origin, std::string_view name, std::int64_t min);

}  // namespace strata::exporter::detail
