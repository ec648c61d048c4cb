// cli/io: what several sub-commands share — output paths ('-' = stdout, checked before the work starts) and the
// model/cluster/seq a plan file names (so `estimate --strategy-file PLAN` and `simulate --plan PLAN` need no
// flags).
#pragma once
#include <cstdint>
#include <optional>
#include <string>

#include <CLI/CLI.hpp>

#include "strata/core/numbers.hpp"
#include "strata/hw/cluster.hpp"
#include "strata/model/model.hpp"

namespace strata::cli {

// InputError "<flag>: cannot write '<path>' (<why>)" unless `path` is "-" (stdout) or a file that can be created
// or overwritten: its directory exists and is writable, and it is not itself a directory. Call it before the
// work, so a typo in the path does not cost a whole search.
void check_output_path(const std::string& path, const std::string& flag);
// Writes `text` to `path` ("-" = stdout); InputError naming `flag` on failure.
void write_output(const std::string& path, const std::string& text, const std::string& flag);

// What a plan file (`strata plan --json`) says about its inputs; empty fields when the file is not a plan or
// does not say. Flags given on the command line override these.
struct PlanInputs {
  std::string model, cluster;
  std::optional<std::int64_t> seq;
};
PlanInputs plan_file_inputs(const std::string& path);
// The flags given next to a plan file. A --model other than the plan's model is an InputError (the plan's split
// and placement are its model's chain); a --cluster other than the plan's is allowed (the same strategy on other
// hardware) and noted on stderr, never silent.
struct PlanFlags {
  std::string command;          // "estimate"
  std::string plan_path;        // the plan file
  const model::Model* model = nullptr;  // the model given by --model (resolved), or null
  std::string cluster;          // --cluster as given, or ""
};
void check_plan_agrees(const PlanInputs& in, const PlanFlags& f);

// `--memory-headroom GIB|PCT` on plan, estimate and simulate: stores the text in *value and sets *given (also for
// an empty value, which cost::parse_memory_headroom then rejects). `effect` ends the help: what the headroom does
// in that command.
void add_memory_headroom_option(CLI::App* cmd, std::string* value, bool* given, const std::string& effect);

// "" when every GPU type of `c` has a native `dtype` path; else one line (ending in '\n') naming each type that
// runs it on a fallback path and at what rate — fp8 on an A100 at its bf16 rate, bf16 on a V100 at its fp16 rate
// (docs/hardware.md §The peak fallback rule) — which the printed numbers otherwise do not show.
std::string dtype_fallback_note(const hw::Cluster& c, hw::Dtype dtype);

// CLI11 checks for a numeric flag, run when the command line is parsed (before any work): the text must be a
// finite number (no nan/inf) / a plain integer inside `r`, else the flag error "--flag: must be a finite number
// >= LO and <= HI, got X" (core/numbers.hpp: the same words as the Python keywords). Every numeric flag of every
// sub-command carries one.
CLI::Validator number_in(core::Range r);
CLI::Validator integer_in(core::Range r);

// `export --out DIR`, `run --checkpoint DIR`: InputError "<flag>: cannot write into '<dir>' (<why>)" unless `dir`
// is "-", an existing writable directory, or a new one whose parent exists and is writable (created one level
// deep only, as the file outputs need their directory to exist).
void check_output_dir(const std::string& dir, const std::string& flag);

// Parses the command line and runs the chosen sub-command under the one error policy: an InputError or a flag
// error (unknown flag, failed check) → one line on stderr (control characters escaped, cut at 2000 bytes) and exit 2; any other exception →
// "internal error" and exit 1. Both binaries' main() return this.
int parse_and_run(CLI::App& app, int argc, char** argv);

// A signed percentage rounded to one decimal for "{:+.1f}%": a tiny negative value prints "+0.0", not "-0.0"
// (−0.0 + 0.0 = +0.0 in IEEE arithmetic), so equal numbers always read the same.
inline double rounded_percent(double pct) {
  return static_cast<double>(static_cast<long long>(pct * 10.0 + (pct < 0 ? -0.5 : 0.5))) / 10.0 + 0.0;
}

}  // namespace strata::cli
