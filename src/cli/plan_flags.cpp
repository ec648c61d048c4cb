// cli/plan_flags: which search `strata plan` runs and the table of which flag applies to which search
// (plan_flags.hpp). A flag the table does not name applies to every search but --space sbp, so a new flag is
// refused there until its row says otherwise (no hand-kept list of flags to check).
#include "plan_flags.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <array>
#include <string_view>

#include "plan_layerwise.hpp"
#include "strata/core/error.hpp"

namespace strata::cli {
namespace {

constexpr unsigned kU = 1, kP = 2, kL = 4, kA = 8, kO = 16, kS = 32;
constexpr unsigned kAll = kU | kP | kL | kA | kO | kS;
constexpr unsigned kNotSbp = kAll & ~kS;      // what a flag the table does not name applies to
constexpr unsigned kPlanFile = kU | kP | kL | kA;  // the searches that write a plan file (one shape, issue 41)

constexpr const char* kStackForms =
    "plan: --earlystop and --fp8-cast apply to the strategy search (not to --oases-blocks, --layerwise, --per-stage "
    "or --gbs auto)";
constexpr const char* kPerStageOption = "plan: --objective/--budget/--stage-schedule/--price: need --per-stage";

struct FlagRule {
  const char* flag;
  unsigned applies;  // PlanSearch bits
  // A value flag counts as given only when its value is not the default (`--elementwise fused` is the default
  // written out, accepted everywhere); nullptr: given when it is on the command line.
  std::string (*value)(const PlanArgs&) = nullptr;
  const char* default_value = "";
  // The refusal outside --space sbp, with {flag} (and its value) and {search}; nullptr: the generic one.
  const char* why = nullptr;
  // Flags it contradicts whatever the search (each counts as given as its own row says).
  std::array<const char*, 3> excludes{};
};

// clang-format off
const FlagRule kRules[] = {
    {"--model", kAll}, {"--cluster", kAll}, {"--space", kAll}, {"--dtype", kAll}, {"--seq", kAll},
    {"--memory-headroom", kAll},
    {"--gbs", kL | kA, [](const PlanArgs& a) { return std::string(a.gbs == 0 ? "auto" : ""); }},
    {"--json", kAll & ~kO},
    {"--report", kPlanFile}, {"--export", kPlanFile}, {"--compare-to", kPlanFile}, {"--trials", kPlanFile},
    {"--trial-steps", kPlanFile}, {"--trial-timeout", kPlanFile}, {"--explain", kPlanFile},
    {"--per-stage", kP}, {"--layerwise", kL}, {"--oases-blocks", kO},
    {"--placement", kNotSbp & ~kL, [](const PlanArgs& a) { return a.placement; }, "hetero",
     "plan: {flag} does not apply to {search} (the per-layer search lays its stages out on consecutive devices)"},
    {"--elementwise", kU | kP, [](const PlanArgs& a) { return a.elementwise; }, "fused",
     "plan: {flag} applies to the strategy search and --per-stage (not to --oases-blocks, --layerwise or --gbs auto)"},
    {"--earlystop", kU, nullptr, "", kStackForms},
    {"--fp8-cast", kU, [](const PlanArgs& a) { return a.fp8_cast; }, "fused", kStackForms},
    {"--optim", kU, [](const PlanArgs& a) { return a.optim; }, "fused",
     "plan: --optim applies to the strategy search (not to --oases-blocks, --layerwise, --per-stage or --gbs auto)"},
    {"--engine", kU, nullptr, "",
     "plan: --engine sets the element-wise, early-stop and fp8-cast forms itself and applies to the strategy search "
     "(not with --elementwise, --earlystop, --fp8-cast, --oases-blocks, --layerwise, --per-stage or --gbs auto)",
     {"--elementwise", "--earlystop", "--fp8-cast"}},
    {"--budget", kP, nullptr, "", kPerStageOption}, {"--stage-schedule", kP, nullptr, "", kPerStageOption},
    {"--price", kP, nullptr, "", kPerStageOption},
};
// clang-format on

const FlagRule* rule_of(std::string_view flag) {
  for (const auto& r : kRules)
    if (flag == r.flag) return &r;
  return nullptr;
}

bool given(const PlanArgs& a, const FlagRule& r) {
  if (r.value) return r.value(a) != r.default_value;
  return std::find(a.given.begin(), a.given.end(), r.flag) != a.given.end();
}

// "--placement anneal" for a value flag, the flag alone otherwise.
std::string shown(const PlanArgs& a, const FlagRule& r) {
  return r.value ? fmt::format("{} {}", r.flag, r.value(a)) : std::string(r.flag);
}

[[noreturn]] void refuse(const PlanArgs& a, const FlagRule& r, PlanSearch s) {
  const std::string flag = shown(a, r);
  if (s == PlanSearch::sbp || !r.why) {
    const char* note = s == PlanSearch::sbp            ? " (strata sbp --help)"
                       : s == PlanSearch::oases_blocks ? " (it prints Oases' per-block tp chain and ablation, not a "
                                                         "strategy plan file)"
                                                       : "";
    throw core::InputError(fmt::format("plan: {} does not apply to {}{}", flag, search_name(s), note));
  }
  throw core::InputError(
      fmt::format(fmt::runtime(r.why), fmt::arg("flag", flag), fmt::arg("search", search_name(s))));
}

}  // namespace

const char* search_name(PlanSearch s) {
  switch (s) {
    case PlanSearch::uniform: return "the strategy search";
    case PlanSearch::per_stage: return "--per-stage";
    case PlanSearch::layerwise: return "--layerwise";
    case PlanSearch::gbs_auto: return "--gbs auto";
    case PlanSearch::oases_blocks: return "--oases-blocks";
    case PlanSearch::sbp: return "--space sbp";
  }
  return "?";
}

std::vector<std::string> given_flags(const CLI::App& cmd) {
  std::vector<std::string> out;
  for (const CLI::Option* o : cmd.get_options())
    if (o->count() > 0 && !o->get_lnames().empty()) out.push_back("--" + o->get_lnames().front());
  return out;
}

PlanSearch select_search(PlanArgs& a) {
  a.gbs = parse_gbs_flag(a.gbs_text, "plan: --gbs");  // 0 = auto (the --gbs auto sweep)
  if (a.space == "sbp") return PlanSearch::sbp;
  if (a.oases_blocks) return PlanSearch::oases_blocks;
  if (a.per_stage.enabled) return PlanSearch::per_stage;
  if (a.layerwise) return PlanSearch::layerwise;
  return a.gbs == 0 ? PlanSearch::gbs_auto : PlanSearch::uniform;
}

void check_flag_rules(const PlanArgs& a, PlanSearch search) {
  const unsigned bit = static_cast<unsigned>(search);
  for (const auto& r : kRules)
    if (given(a, r) && !(r.applies & bit)) refuse(a, r, search);
  for (const auto& f : a.given)
    if (!rule_of(f) && !(kNotSbp & bit)) refuse(a, FlagRule{f.c_str(), kNotSbp}, search);
  for (const auto& r : kRules) {
    if (!given(a, r)) continue;
    for (const char* other : r.excludes)
      if (const FlagRule* o = other ? rule_of(other) : nullptr; o && given(a, *o)) refuse(a, r, search);
  }
}

}  // namespace strata::cli
