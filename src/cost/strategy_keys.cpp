// cost/strategy_keys: the table of strategy keys (strategy_keys.hpp) — one row per `--strategy` key — and what is
// produced from it: the valid-key list, the help, the planner's cache key and copy, the Python keyword setter.
// strategy.cpp's parser, printers and JSON reader walk the same rows.
//
// HOW TO ADD A KEY (e.g. `loss=fused|fp32`; the `elementwise` row is a two-valued model to copy):
//   1. Its field in cost::Strategy (include/strata/cost/strategy.hpp) with the default that costs nothing new, and
//      (for an enum) its to_string / parse_* next to OptimizerStep's.
//   2. One row in kKeys below, just before "stages": name, values, default_text, rule ("" if none), help,
//      json_name, python_name, json_rank (after the last shared key's, before split's 180), searched (true
//      only if plan/ enumerates it), plan_option (true if `strata plan` takes the user's value: then also a
//      PlanOptions field set in plan/unit_memo.cpp and plan/baselines.cpp, a `strata plan --<key>` flag in
//      cli/cmd_plan.cpp and the strata.plan keyword copy in python/plan.cpp set_plan_keys), enters_cost (true when
//      it changes a time or a memory), and the accessors: parse, text and write_json returning nothing for the
//      default (old outputs stay byte-identical), read_json, cost_values and copy (cost_field / copy_field<&F>).
//      A rule beyond the value goes into complete_strategy (src/cost/strategy.cpp), its text also in `rule`.
//   3. Its cost where the cost model computes that fact; tests (tests/cost/test_strategy_keys.cpp: a non-default
//      value in other_values(), which fails until the new key has one); the docs/strategy.md row; the keyword in
//      python/strata/__init__.pyi's estimate() (and plan() if plan_option; tests/python/test_api_keys.py checks).
//   Everything else follows from the row: the --strategy parser, the text and JSON forms, the JSON reader, the
//   valid-key lists of errors, `strata estimate --help`, the planner's copy and cache key (plan/eval.cpp), the
//   strata.estimate keywords and the generated docstrings.
#include "strata/cost/strategy_keys.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <type_traits>

#include "strata/core/error.hpp"
#include "strata/core/text.hpp"
#include "strategy_text.hpp"

namespace strata::cost {
namespace {

using core::InputError;
using core::Json;
using core::JsonWhere;
using J = nlohmann::ordered_json;

bool parse_on_off(std::string_view text, const std::string& where, std::string_view key) {
  const auto t = core::to_lower(text);
  if (t == "on" || t == "true" || t == "1" || t == "yes") return true;
  if (t == "off" || t == "false" || t == "0" || t == "no") return false;
  throw InputError(fmt::format("{}: {}: '{}' is not on/off", where, key, text));
}

// `overlap`: off | on (Oases' two sub-batches) | async (chunked collective matmul); on/off spellings as for sp.
void parse_overlap(Strategy& s, std::string_view text, const std::string& where) {
  if (core::to_lower(text) == "async") {
    s.tp_async = true;
    s.tp_overlap = false;
    return;
  }
  if (core::to_lower(text) == "oases") text = "on";
  try {
    s.tp_overlap = parse_on_off(text, where, "overlap");
  } catch (const InputError&) {
    throw InputError(fmt::format("{}: overlap: '{}' is not off, on (Oases' two sub-batches) or async (chunked "
                                 "collective matmul)", where, text));
  }
  s.tp_async = false;
}

// A two-valued key: `off_word` (false, the default) | `on_word` (true).
bool parse_choice(std::string_view text, const std::string& where, std::string_view key, std::string_view off_word,
                  std::string_view on_word) {
  const auto t = core::to_lower(text);
  if (t == off_word) return false;
  if (t == on_word) return true;
  throw InputError(fmt::format("{}: {}: '{}' is not {} or {}", where, key, text, off_word, on_word));
}

// "flash" | "eager" | ... | "auto" (= unset: the GPU's default).
std::optional<model::AttentionKernel> parse_attention_value(std::string_view text, const std::string& where) {
  if (core::to_lower(text) == "auto") return std::nullopt;
  return model::parse_attention_kernel(text, where);
}

// --- accessors shared by several rows -----------------------------------------------------------------------
template <auto F>
void copy_field(const Strategy& from, Strategy& to) {
  to.*F = from.*F;
}
template <auto F>
void cost_field(const Strategy& s, std::vector<double>& key) {
  using T = std::remove_cvref_t<decltype(s.*F)>;
  if constexpr (std::is_enum_v<T>)
    key.push_back(static_cast<double>(static_cast<int>(s.*F)));
  else
    key.push_back(static_cast<double>(s.*F));
}
template <auto F>
std::optional<std::string> int_text(const Strategy& s) {
  return std::to_string(s.*F);
}
template <auto F, int Min>
void parse_int_key(Strategy& s, std::string_view key, std::string_view v, const std::string& where, KeyParseState&) {
  s.*F = detail::parse_small_int(v, where, std::string(key), Min);
}
template <auto F>
void parse_list_key(Strategy& s, std::string_view key, std::string_view v, const std::string& where, KeyParseState&) {
  s.*F = detail::parse_int_list(v, where, std::string(key), 0);
}
// pp is printed in the per-stage form only when given (> 0); the uniform form always prints it.
bool pp_left_out(const Strategy& s) { return !s.stages.empty() && s.pp <= 0; }

// --- the table ------------------------------------------------------------------------------------------------
// Rows in the order the text form prints them; json_rank orders the JSON form. Keep "stages" and "layers" last.
const StrategyKey kKeys[] = {
    {.name = "dp", .values = "N", .default_text = "the devices left", .rule = "dp·cp·tp·pp = devices",
     .help = "data-parallel degree", .json_name = "dp", .python_name = "dp", .json_rank = 10, .uniform_only = true,
     .searched = true, .enters_cost = true, .parse = parse_int_key<&Strategy::dp, 1>,
     .text = int_text<&Strategy::dp>,
     .write_json = [](const Strategy& s, J& j) { j["dp"] = s.dp; },
     .read_json = [](const Json& j, const JsonWhere& w, Strategy& s) {
       s.dp = detail::json_small_int(j, "dp", w, 1, 0);
     },
     .cost_values = cost_field<&Strategy::dp>, .copy = copy_field<&Strategy::dp>},
    {.name = "tp", .values = "N", .default_text = "1", .rule = "tp divides the heads",
     .help = "tensor-parallel degree", .json_name = "tp", .python_name = "tp", .json_rank = 20, .uniform_only = true,
     .searched = true, .enters_cost = true, .parse = parse_int_key<&Strategy::tp, 1>,
     .text = int_text<&Strategy::tp>,
     .write_json = [](const Strategy& s, J& j) { j["tp"] = s.tp; },
     .read_json = [](const Json& j, const JsonWhere& w, Strategy& s) {
       s.tp = detail::json_small_int(j, "tp", w, 1, 0);
     },
     .cost_values = cost_field<&Strategy::tp>, .copy = copy_field<&Strategy::tp>},
    {.name = "pp", .values = "N", .default_text = "1 (the devices left when dp is given)", .rule = "pp·v <= layers",
     .help = "pipeline stages", .json_name = "pp", .python_name = "pp", .json_rank = 30, .searched = true,
     .enters_cost = true, .parse = parse_int_key<&Strategy::pp, 1>,
     .text = [](const Strategy& s) -> std::optional<std::string> {
       if (pp_left_out(s)) return std::nullopt;
       return std::to_string(s.pp);
     },
     .write_json = [](const Strategy& s, J& j) { if (!pp_left_out(s)) j["pp"] = s.pp; },
     .read_json = [](const Json& j, const JsonWhere& w, Strategy& s) {
       s.pp = detail::json_small_int(j, "pp", w, 1, 0);
     },
     .cost_values = cost_field<&Strategy::pp>, .copy = copy_field<&Strategy::pp>},
    {.name = "mbs", .values = "N", .default_text = "1", .rule = "gbs divisible by dp·mbs",
     .help = "micro-batch size in samples", .json_name = "mbs", .python_name = "mbs", .json_rank = 50,
     .searched = true, .enters_cost = true,
     .parse = [](Strategy& s, std::string_view k, std::string_view v, const std::string& where, KeyParseState&) {
       s.micro_batch = detail::parse_small_int(v, where, std::string(k), 1);
     },
     .text = int_text<&Strategy::micro_batch>,
     .write_json = [](const Strategy& s, J& j) { j["mbs"] = s.micro_batch; },
     .read_json = [](const Json& j, const JsonWhere& w, Strategy& s) {
       s.micro_batch = detail::json_small_int(j, "mbs", w, 1, 1);
     },
     .cost_values = cost_field<&Strategy::micro_batch>, .copy = copy_field<&Strategy::micro_batch>},
    {.name = "gbs", .values = "N", .default_text = "required", .rule = "gbs divisible by dp·mbs",
     .help = "global batch size in samples per iteration", .json_name = "gbs", .python_name = "gbs",
     .json_rank = 60, .plan_option = true, .enters_cost = true,
     .parse = [](Strategy& s, std::string_view k, std::string_view v, const std::string& where, KeyParseState&) {
       s.global_batch = detail::parse_int(v, where, std::string(k));
       if (s.global_batch < 1 || s.global_batch > (std::int64_t{1} << 40))
         throw InputError(fmt::format("{}: gbs: {} is out of range (must be >= 1)", where, s.global_batch));
     },
     .text = int_text<&Strategy::global_batch>,
     .write_json = [](const Strategy& s, J& j) { j["gbs"] = s.global_batch; },
     .read_json = [](const Json& j, const JsonWhere& w, Strategy& s) {
       s.global_batch = 0;
       if (!core::has_field(j, "gbs")) return;
       s.global_batch = core::get_positive_int(j, "gbs", w);
       if (s.global_batch > (std::int64_t{1} << 40)) core::fail(w.field("gbs"), "out of range");
     },
     .cost_values = cost_field<&Strategy::global_batch>, .copy = copy_field<&Strategy::global_batch>},
    {.name = "v", .values = "N", .default_text = "1", .rule = "v > 1 needs schedule=interleaved and m % pp == 0",
     .help = "model chunks per device (interleaved schedule)", .json_name = "v", .python_name = "v",
     .json_rank = 70, .uniform_only = true, .searched = true, .enters_cost = true,
     .parse = parse_int_key<&Strategy::virtual_stages, 1>, .text = int_text<&Strategy::virtual_stages>,
     .write_json = [](const Strategy& s, J& j) { j["v"] = s.virtual_stages; },
     .read_json = [](const Json& j, const JsonWhere& w, Strategy& s) {
       s.virtual_stages = detail::json_small_int(j, "v", w, 1, 1);
     },
     .cost_values = cost_field<&Strategy::virtual_stages>, .copy = copy_field<&Strategy::virtual_stages>},
    {.name = "schedule", .values = "gpipe|1f1b|interleaved|pipedream|2bw",
     .default_text = "1f1b (interleaved when v > 1)",
     .rule = "", .help = "pipeline schedule", .json_name = "schedule", .python_name = "schedule", .json_rank = 80,
     .searched = true, .enters_cost = true,
     .parse = [](Strategy& s, std::string_view, std::string_view v, const std::string& where, KeyParseState& st) {
       s.schedule = parse_schedule(v, where + ": schedule");
       st.schedule_given = true;
     },
     .text = [](const Strategy& s) -> std::optional<std::string> { return std::string(to_string(s.schedule)); },
     .write_json = [](const Strategy& s, J& j) { j["schedule"] = std::string(to_string(s.schedule)); },
     .read_json = [](const Json& j, const JsonWhere& w, Strategy& s) {
       if (auto sch = core::opt_string(j, "schedule", w)) s.schedule = parse_schedule(*sch, w.field("schedule").str());
       else if (s.virtual_stages > 1) s.schedule = Schedule::interleaved;
     },
     .cost_values = cost_field<&Strategy::schedule>, .copy = copy_field<&Strategy::schedule>},
    {.name = "zero", .values = "0..3", .default_text = "0", .rule = "",
     .help = "ZeRO stage (1 optimizer states, 2 + gradients, 3 + weights sharded over dp·cp)", .json_name = "zero",
     .python_name = "zero", .json_rank = 90, .searched = true, .enters_cost = true,
     .parse = [](Strategy& s, std::string_view k, std::string_view v, const std::string& where, KeyParseState&) {
       s.zero_stage = detail::parse_small_int(v, where, std::string(k), 0);
       if (s.zero_stage > 3)
         throw InputError(fmt::format("{}: zero: {} is not a ZeRO stage (0..3)", where, s.zero_stage));
     },
     .text = int_text<&Strategy::zero_stage>,
     .write_json = [](const Strategy& s, J& j) { j["zero"] = s.zero_stage; },
     .read_json = [](const Json& j, const JsonWhere& w, Strategy& s) {
       s.zero_stage = detail::json_small_int(j, "zero", w, 0, 0);
       if (s.zero_stage > 3) core::fail(w.field("zero"), "must be a ZeRO stage 0..3");
     },
     .cost_values = cost_field<&Strategy::zero_stage>, .copy = copy_field<&Strategy::zero_stage>},
    {.name = "recompute", .values = "none|selective|full", .default_text = "none", .rule = "",
     .help = "activation recomputation", .json_name = "recompute", .python_name = "recompute", .json_rank = 100,
     .searched = true, .enters_cost = true,
     .parse = [](Strategy& s, std::string_view, std::string_view v, const std::string& where, KeyParseState&) {
       s.recompute = model::parse_recompute(v, where + ": recompute");
     },
     .text = [](const Strategy& s) -> std::optional<std::string> { return std::string(model::to_string(s.recompute)); },
     .write_json = [](const Strategy& s, J& j) { j["recompute"] = std::string(model::to_string(s.recompute)); },
     .read_json = [](const Json& j, const JsonWhere& w, Strategy& s) {
       if (auto rc = core::opt_string(j, "recompute", w))
         s.recompute = model::parse_recompute(*rc, w.field("recompute").str());
     },
     .cost_values = cost_field<&Strategy::recompute>, .copy = copy_field<&Strategy::recompute>},
    {.name = "sp", .values = "on|off", .default_text = "off", .rule = "",
     .help = "sequence parallelism (Megatron)", .json_name = "sp", .python_name = "sp", .json_rank = 130,
     .searched = true, .enters_cost = true,
     .parse = [](Strategy& s, std::string_view k, std::string_view v, const std::string& where, KeyParseState&) {
       s.sequence_parallel = parse_on_off(v, where, k);
     },
     .text = [](const Strategy& s) -> std::optional<std::string> { return s.sequence_parallel ? "on" : "off"; },
     .write_json = [](const Strategy& s, J& j) { j["sp"] = s.sequence_parallel; },
     .read_json = [](const Json& j, const JsonWhere& w, Strategy& s) {
       if (auto sp = core::opt_bool(j, "sp", w)) s.sequence_parallel = *sp;
     },
     .cost_values = cost_field<&Strategy::sequence_parallel>, .copy = copy_field<&Strategy::sequence_parallel>},
    {.name = "dtype", .values = "fp32|tf32|fp16|bf16|fp8|mxfp8|fp4", .default_text = "bf16", .rule = "",
     .help = "compute dtype (mixed precision)", .json_name = "dtype", .python_name = "dtype", .json_rank = 140,
     .plan_option = true, .enters_cost = true,
     .parse = [](Strategy& s, std::string_view, std::string_view v, const std::string& where, KeyParseState&) {
       s.dtype = hw::parse_dtype(v, where + ": dtype");
     },
     .text = [](const Strategy& s) -> std::optional<std::string> { return std::string(hw::to_string(s.dtype)); },
     .write_json = [](const Strategy& s, J& j) { j["dtype"] = std::string(hw::to_string(s.dtype)); },
     .read_json = [](const Json& j, const JsonWhere& w, Strategy& s) {
       if (auto dt = core::opt_string(j, "dtype", w)) s.dtype = hw::parse_dtype(*dt, w.field("dtype").str());
     },
     .cost_values = cost_field<&Strategy::dtype>, .copy = copy_field<&Strategy::dtype>},
    {.name = "rlayers", .values = "a+b+..", .default_text = "every layer follows recompute",
     .rule = "pp entries, needs recompute, <= the stage's layers", .help = "recomputed layers per stage",
     .json_name = "recompute_layers", .python_name = "rlayers", .json_rank = 110, .enters_cost = true,
     .parse = parse_list_key<&Strategy::recompute_layers>,
     .text = [](const Strategy& s) -> std::optional<std::string> {
       if (s.recompute_layers.empty()) return std::nullopt;
       return detail::join_ints(s.recompute_layers, '+');
     },
     .write_json = [](const Strategy& s, J& j) { j["recompute_layers"] = s.recompute_layers; },
     .read_json = [](const Json& j, const JsonWhere& w, Strategy& s) {
       s.recompute_layers = detail::json_int_list(j, "recompute_layers", w, 0);
     },
     .cost_values = [](const Strategy& s, std::vector<double>& key) {
       key.push_back(static_cast<double>(s.recompute_layers.size()));
       for (int x : s.recompute_layers) key.push_back(x);
     },
     .copy = copy_field<&Strategy::recompute_layers>},
    {.name = "earlystop", .values = "on|off", .default_text = "off (Megatron)", .rule = "on needs recompute=full",
     .help = "full recompute ends before each block's last GEMM, as PyTorch's non-reentrant checkpoint does",
     .json_name = "recompute_early_stop", .python_name = "earlystop", .json_rank = 120, .plan_option = true,
     .enters_cost = true,
     .parse = [](Strategy& s, std::string_view k, std::string_view v, const std::string& where, KeyParseState&) {
       s.recompute_early_stop = parse_on_off(v, where, k);
     },
     .text = [](const Strategy& s) -> std::optional<std::string> {
       if (!s.recompute_early_stop) return std::nullopt;
       return "on";
     },
     .write_json = [](const Strategy& s, J& j) { if (s.recompute_early_stop) j["recompute_early_stop"] = true; },
     .read_json = [](const Json& j, const JsonWhere& w, Strategy& s) {
       if (auto es = core::opt_bool(j, "recompute_early_stop", w)) s.recompute_early_stop = *es;
     },
     .cost_values = cost_field<&Strategy::recompute_early_stop>, .copy = copy_field<&Strategy::recompute_early_stop>},
    {.name = "split", .values = "a+b+..", .default_text = "Megatron's: blocks even, embedding first, head last",
     .rule = "pp·v entries >= 1 summing to the layer count", .help = "layers per pipeline chunk (embedding and head "
     "included)", .json_name = "split", .python_name = "split", .json_rank = 180, .uniform_only = true,
     .searched = true,
     .parse = [](Strategy& s, std::string_view k, std::string_view v, const std::string& where, KeyParseState&) {
       s.split = detail::parse_int_list(v, where, std::string(k), 1);
     },
     .text = [](const Strategy& s) -> std::optional<std::string> {
       if (s.split.empty()) return std::nullopt;
       return detail::join_ints(s.split, '+');
     },
     .write_json = [](const Strategy& s, J& j) { j["split"] = s.split; },
     .read_json = [](const Json& j, const JsonWhere& w, Strategy& s) {
       s.split = detail::json_int_list(j, "split", w, 1);
     },
     .copy = copy_field<&Strategy::split>},
    {.name = "place", .values = "a+b+..", .default_text = "identity (node-major device order)",
     .rule = "a permutation of the devices", .help = "device of each rank (tp fastest, then cp, dp, pp)",
     .json_name = "placement", .python_name = "place", .json_rank = 190, .uniform_only = true, .searched = true,
     .parse = parse_list_key<&Strategy::placement>,
     .text = [](const Strategy& s) -> std::optional<std::string> {
       // The identity placement is the default: left out (same strategy after complete_strategy, shorter line).
       bool identity = true;
       for (std::size_t i = 0; i < s.placement.size(); ++i)
         identity = identity && s.placement[i] == static_cast<int>(i);
       if (identity) return std::nullopt;
       return detail::join_ints(s.placement, '+');
     },
     .write_json = [](const Strategy& s, J& j) { j["placement"] = s.placement; },
     .read_json = [](const Json& j, const JsonWhere& w, Strategy& s) {
       s.placement = detail::json_int_list(j, "placement", w, 0);
     },
     .copy = copy_field<&Strategy::placement>},
    {.name = "attention", .values = "eager|flash|flash1|cudnn|efficient|auto", .default_text = "auto: flash where the GPU has "
     "bf16 tensor cores, else eager", .rule = "flash, flash1 and cudnn need such a GPU and 16-bit inputs; efficient runs any dtype", .help = "attention kernel",
     .json_name = "attention", .python_name = "attention", .json_rank = 200, .enters_cost = true,
     .parse = [](Strategy& s, std::string_view, std::string_view v, const std::string& where, KeyParseState&) {
       s.attention = parse_attention_value(v, where + ": attention");
     },
     .text = [](const Strategy& s) -> std::optional<std::string> {
       if (!s.attention) return std::nullopt;
       return std::string(model::to_string(*s.attention));
     },
     .write_json = [](const Strategy& s, J& j) {
       if (s.attention) j["attention"] = std::string(model::to_string(*s.attention));
     },
     .read_json = [](const Json& j, const JsonWhere& w, Strategy& s) {
       if (auto at = core::opt_string(j, "attention", w))
         s.attention = parse_attention_value(*at, w.field("attention").str());
     },
     .cost_values = [](const Strategy& s, std::vector<double>& key) {
       key.push_back(s.attention ? static_cast<double>(static_cast<int>(*s.attention)) : -1.0);
     },
     .copy = copy_field<&Strategy::attention>},
    {.name = "overlap", .values = "off|on|async", .default_text = "off (Megatron: blocking TP)",
     .rule = "on: tp >= 2 and an even mbs; async: tp >= 2 and sp=on",
     .help = "TP collectives overlapped: on = Oases' two sub-batches, async = chunked collective matmul",
     .json_name = "overlap", .python_name = "overlap", .json_rank = 150, .searched = true, .enters_cost = true,
     .parse = [](Strategy& s, std::string_view, std::string_view v, const std::string& where, KeyParseState&) {
       parse_overlap(s, v, where);
     },
     .text = [](const Strategy& s) -> std::optional<std::string> {
       if (s.tp_overlap) return "on";
       if (s.tp_async) return "async";
       return std::nullopt;
     },
     .write_json = [](const Strategy& s, J& j) {
       if (s.tp_overlap) j["overlap"] = true;
       if (s.tp_async) j["overlap"] = "async";
     },
     .read_json = [](const Json& j, const JsonWhere& w, Strategy& s) {
       if (j.contains("overlap") && j["overlap"].is_string())
         parse_overlap(s, j["overlap"].get<std::string>(), w.str());  // "async" (or "on"/"off")
       else if (auto ov = core::opt_bool(j, "overlap", w))
         s.tp_overlap = *ov;
     },
     .cost_values = [](const Strategy& s, std::vector<double>& key) {
       key.push_back(s.tp_overlap);
       key.push_back(s.tp_async);
     },
     .copy = [](const Strategy& from, Strategy& to) {
       to.tp_overlap = from.tp_overlap;
       to.tp_async = from.tp_async;
     }},
    {.name = "elementwise", .values = "fused|eager", .default_text = "fused",
     .rule = "", .help = "element-wise kernels: fused (Megatron-core, torch.compile) or one PyTorch kernel per op",
     .json_name = "elementwise", .python_name = "elementwise", .json_rank = 160, .plan_option = true,
     .enters_cost = true,
     .parse = [](Strategy& s, std::string_view k, std::string_view v, const std::string& where, KeyParseState&) {
       s.eager_elementwise = parse_choice(v, where, k, "fused", "eager");
     },
     .text = [](const Strategy& s) -> std::optional<std::string> {
       if (!s.eager_elementwise) return std::nullopt;
       return "eager";
     },
     .write_json = [](const Strategy& s, J& j) { if (s.eager_elementwise) j["elementwise"] = "eager"; },
     .read_json = [](const Json& j, const JsonWhere& w, Strategy& s) {
       if (auto ew = core::opt_string(j, "elementwise", w))
         s.eager_elementwise = parse_choice(*ew, w.str(), "elementwise", "fused", "eager");
     },
     .cost_values = cost_field<&Strategy::eager_elementwise>, .copy = copy_field<&Strategy::eager_elementwise>},
    {.name = "loss", .values = "fused|fp32", .default_text = "fused",
     .rule = "", .help = "the LM head's loss path: Megatron's fused vocab-parallel cross-entropy or "
     "cross_entropy(logits.float()) (fp32 logits, log-softmax and gradient kept per micro-batch)",
     .json_name = "loss", .python_name = "loss", .json_rank = 165, .enters_cost = true,
     .parse = [](Strategy& s, std::string_view k, std::string_view v, const std::string& where, KeyParseState&) {
       s.fp32_loss = parse_choice(v, where, k, "fused", "fp32");
     },
     .text = [](const Strategy& s) -> std::optional<std::string> {
       if (!s.fp32_loss) return std::nullopt;
       return "fp32";
     },
     .write_json = [](const Strategy& s, J& j) { if (s.fp32_loss) j["loss"] = "fp32"; },
     .read_json = [](const Json& j, const JsonWhere& w, Strategy& s) {
       if (auto l = core::opt_string(j, "loss", w)) s.fp32_loss = parse_choice(*l, w.str(), "loss", "fused", "fp32");
     },
     .cost_values = cost_field<&Strategy::fp32_loss>, .copy = copy_field<&Strategy::fp32_loss>},
    {.name = "fp8cast", .values = "fused|separate", .default_text = "fused (TransformerEngine)",
     .rule = "separate needs dtype=fp8", .help = "fp8 casts: fused into the neighbouring ops or torchao's per-operand "
     "amax + cast", .json_name = "fp8_cast", .python_name = "fp8_cast", .json_rank = 170, .plan_option = true,
     .enters_cost = true,
     .parse = [](Strategy& s, std::string_view k, std::string_view v, const std::string& where, KeyParseState&) {
       s.fp8_separate_casts = parse_choice(v, where, k, "fused", "separate");
     },
     .text = [](const Strategy& s) -> std::optional<std::string> {
       if (!s.fp8_separate_casts) return std::nullopt;
       return "separate";
     },
     .write_json = [](const Strategy& s, J& j) { if (s.fp8_separate_casts) j["fp8_cast"] = "separate"; },
     .read_json = [](const Json& j, const JsonWhere& w, Strategy& s) {
       if (auto fc = core::opt_string(j, "fp8_cast", w))
         s.fp8_separate_casts = parse_choice(*fc, w.str(), "fp8cast", "fused", "separate");
     },
     .cost_values = cost_field<&Strategy::fp8_separate_casts>, .copy = copy_field<&Strategy::fp8_separate_casts>},
    {.name = "cp", .values = "N", .default_text = "1", .rule = "seq divisible by 2·cp; the uniform form",
     .help = "context parallelism (ring attention over cp ranks)", .json_name = "cp", .python_name = "cp",
     .json_rank = 40, .uniform_only = true, .searched = true, .enters_cost = true,
     .parse = parse_int_key<&Strategy::cp, 1>,
     .text = [](const Strategy& s) -> std::optional<std::string> {
       if (s.cp <= 1) return std::nullopt;  // cp = 1 (the default) is left out
       return std::to_string(s.cp);
     },
     .write_json = [](const Strategy& s, J& j) { if (s.cp > 1) j["cp"] = s.cp; },
     .read_json = [](const Json& j, const JsonWhere& w, Strategy& s) {
       s.cp = detail::json_small_int(j, "cp", w, 1, 1);
     },
     .cost_values = cost_field<&Strategy::cp>, .copy = copy_field<&Strategy::cp>},
    {.name = "optim", .values = "fused|foreach|forloop", .default_text = "fused",
     .rule = "", .help = "how AdamW's step runs (torch.optim.AdamW fused=True, foreach=True, or the for-loop): "
     "foreach holds a temporary of the states' size during the step",
     .json_name = "optim", .python_name = "optim", .json_rank = 175, .plan_option = true,
     .enters_cost = true,
     .parse = [](Strategy& s, std::string_view, std::string_view v, const std::string& where, KeyParseState&) {
       s.optim = parse_optimizer_step(v, where + ": optim");
     },
     .text = [](const Strategy& s) -> std::optional<std::string> {
       if (s.optim == OptimizerStep::fused) return std::nullopt;
       return std::string(to_string(s.optim));
     },
     .write_json = [](const Strategy& s, J& j) {
       if (s.optim != OptimizerStep::fused) j["optim"] = std::string(to_string(s.optim));
     },
     .read_json = [](const Json& j, const JsonWhere& w, Strategy& s) {
       if (auto o = core::opt_string(j, "optim", w)) s.optim = parse_optimizer_step(*o, w.field("optim").str());
     },
     .cost_values = cost_field<&Strategy::optim>, .copy = copy_field<&Strategy::optim>},
    {.name = "grads", .values = "persistent|ondemand|ddp", .default_text = "persistent",
     .rule = "", .help = "where gradients live: a persistent buffer (Megatron, DeepSpeed, FSDP), allocated on "
     "demand in backward and freed by zero_grad(set_to_none=True) (a one-process PyTorch loop), or DDP's buckets "
     "besides on-demand .grad tensors; set by --engine",
     .json_name = "grads", .python_name = "grads", .json_rank = 176, .enters_cost = true,
     .parse = [](Strategy& s, std::string_view, std::string_view v, const std::string& where, KeyParseState&) {
       s.grads = parse_grad_buffer(v, where + ": grads");
     },
     .text = [](const Strategy& s) -> std::optional<std::string> {
       if (s.grads == GradBuffer::persistent) return std::nullopt;
       return std::string(to_string(s.grads));
     },
     .write_json = [](const Strategy& s, J& j) {
       if (s.grads != GradBuffer::persistent) j["grads"] = std::string(to_string(s.grads));
     },
     .read_json = [](const Json& j, const JsonWhere& w, Strategy& s) {
       if (auto o = core::opt_string(j, "grads", w)) s.grads = parse_grad_buffer(*o, w.field("grads").str());
     },
     .cost_values = cost_field<&Strategy::grads>, .copy = copy_field<&Strategy::grads>},
    {.name = "gradbuf", .values = "fp32|bf16", .default_text = "fp32", .rule = "", .help = "gradient buffer and "
     "its DP reduction: fp32 (4 B/param, Megatron-LM's --bf16 default) or bf16 (2 B/param, --grad-reduce-in-bf16)",
     .json_name = "grad_buffer", .python_name = "gradbuf", .json_rank = 177, .enters_cost = true,
     .parse = detail::parse_gradbuf, .text = detail::gradbuf_text, .write_json = detail::write_gradbuf_json,
     .read_json = detail::read_gradbuf_json,
     .cost_values = cost_field<&Strategy::grad_buffer_bf16>, .copy = copy_field<&Strategy::grad_buffer_bf16>},
    {.name = "lpweights", .values = "on|off", .default_text = "off",
     .rule = "needs dtype fp8, mxfp8 or fp4 and zero >= 1",
     .help = "keep the compute weights only in the low-precision dtype and gather them in it (Megatron "
     "--fp8-param-gather / --fp4-param-gather): 1 B/param for fp8, 1 + 1/32 for mxfp8, 0.5625 for fp4 instead of 2",
     .json_name = "low_precision_weights", .python_name = "lpweights", .json_rank = 178, .enters_cost = true,
     .parse = detail::parse_lpweights, .text = detail::lpweights_text, .write_json = detail::write_lpweights_json,
     .read_json = detail::read_lpweights_json, .cost_values = cost_field<&Strategy::low_precision_weights>,
     .copy = copy_field<&Strategy::low_precision_weights>},
    {.name = "offload", .values = "N (blocks)", .default_text = "0", .rule = "pp = 1, no recompute, N < blocks",
     .help = "activations of N transformer blocks per stage kept in host memory between forward and backward "
     "(Megatron --cpu-offloading-num-layers N; the copies overlap compute)",
     .json_name = "activation_offload_layers", .python_name = "offload", .json_rank = 179, .enters_cost = true,
     .parse = parse_int_key<&Strategy::activation_offload_layers, 0>, .text = detail::offload_text,
     .write_json = detail::write_offload_json, .read_json = detail::read_offload_json,
     .cost_values = cost_field<&Strategy::activation_offload_layers>,
     .copy = copy_field<&Strategy::activation_offload_layers>},
    // The per-stage form: last, in this order (stages= before layers=).
    {.name = "stages", .values = "GPU[@DEV+..]:dpN:tpN:LAYERS/..", .default_text = "the uniform form",
     .rule = "devices exist and are used once; layers sum to the chain", .help = "per-stage strategy: each stage "
     "its GPU type or devices, dp, tp and layer count (docs/strategy.md Per-stage strategies)",
     .json_name = "stages", .python_name = "stages", .json_rank = 210, .searched = true,
     .parse = [](Strategy& s, std::string_view, std::string_view v, const std::string& where, KeyParseState&) {
       s.stages = detail::parse_stages(v, where);
     },
     .text = [](const Strategy& s) -> std::optional<std::string> {
       if (s.stages.empty()) return std::nullopt;
       return detail::stages_to_cli(s.stages);
     },
     .write_json = [](const Strategy& s, J& j) {
       if (!s.stages.empty()) j["stages"] = detail::stages_to_json(s.stages);
     },
     .read_json = [](const Json& j, const JsonWhere& w, Strategy& s) {
       if (core::has_field(j, "stages")) s.stages = detail::stages_from_json(j.at("stages"), w.field("stages"));
     },
     .copy = copy_field<&Strategy::stages>},
    {.name = "layers", .values = "tpN[.sdp][.full][.strided][.overlap][*N]+../-/..", .default_text = "each layer "
     "follows its stage", .rule = "needs stages=; one group per stage", .help = "per-layer choices of each stage",
     .json_name = "", .python_name = "layers", .json_rank = 0, .searched = true,
     .parse = [](Strategy&, std::string_view, std::string_view v, const std::string& where, KeyParseState& st) {
       st.layer_groups = detail::parse_layer_groups(v, where);
     },
     .text = [](const Strategy& s) -> std::optional<std::string> {
       auto layers = detail::layer_groups_to_cli(s.stages);
       if (layers.empty()) return std::nullopt;
       return layers;
     }},
};

}  // namespace

std::string_view to_string(OptimizerStep o) {
  switch (o) {
    case OptimizerStep::fused: return "fused";
    case OptimizerStep::foreach: return "foreach";
    case OptimizerStep::forloop: return "forloop";
  }
  return "fused";
}

std::string_view to_string(GradBuffer g) {
  switch (g) {
    case GradBuffer::persistent: return "persistent";
    case GradBuffer::ondemand: return "ondemand";
    case GradBuffer::ddp: return "ddp";
  }
  return "persistent";
}

GradBuffer parse_grad_buffer(std::string_view text, const std::string& where) {
  const auto t = core::to_lower(text);
  if (t == "persistent") return GradBuffer::persistent;
  if (t == "ondemand" || t == "on-demand") return GradBuffer::ondemand;
  if (t == "ddp") return GradBuffer::ddp;
  throw InputError(fmt::format("{}: '{}' is not persistent, ondemand or ddp", where, text));
}

OptimizerStep parse_optimizer_step(std::string_view text, const std::string& where) {
  const auto t = core::to_lower(text);
  if (t == "fused") return OptimizerStep::fused;
  if (t == "foreach") return OptimizerStep::foreach;
  if (t == "forloop" || t == "for-loop") return OptimizerStep::forloop;
  throw InputError(fmt::format("{}: '{}' is not fused, foreach or forloop", where, text));
}

std::span<const StrategyKey> strategy_keys() { return kKeys; }

const StrategyKey* find_strategy_key(std::string_view name) {
  for (const auto& k : kKeys)
    if (k.name == name) return &k;
  return nullptr;
}

std::string strategy_key_list() {
  std::vector<std::string> names;
  for (const auto& k : kKeys) names.emplace_back(k.name);
  return core::join(names);
}

std::string strategy_keys_help() {
  std::string out = "Strategy keys (--strategy \"key=value,...\"; docs/strategy.md):\n";
  for (const auto& k : kKeys) {
    out += fmt::format("  {}={}: {} (default {}", k.name, k.values, k.help, k.default_text);
    if (!k.rule.empty()) out += fmt::format("; rule: {}", k.rule);
    out += ")\n";
  }
  return out;
}

void append_cost_key(const Strategy& s, std::vector<double>& key) {
  for (const auto& k : kKeys)
    if (k.enters_cost) k.cost_values(s, key);
}

void copy_unsearched_keys(const Strategy& from, Strategy& to) {
  for (const auto& k : kKeys)
    if (!k.searched) k.copy(from, to);
}

void set_strategy_key(Strategy& s, std::string_view key, std::string_view value, const std::string& where) {
  for (const auto& k : kKeys) {
    if (k.name != key && k.python_name != key) continue;
    KeyParseState st;
    k.parse(s, k.name, value, where, st);
    if (st.layer_groups) detail::attach_layer_groups(s.stages, std::move(*st.layer_groups), where);
    return;
  }
  throw InputError(fmt::format("{}: unknown key '{}' (valid keys: {})", where, key, strategy_key_list()));
}

}  // namespace strata::cost
