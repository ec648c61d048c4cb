// cost/strategy_stage_rules: the validity rules and defaults of per-stage strategies (devices, GPU types, layer
// counts, batch divisibility, per-layer choices), the per-stage view of a strategy of either form, the conversions
// between the uniform and the per-stage form, and the one check consumers of the uniform form call
// (docs/strategy.md "Per-stage strategies").
#include <fmt/format.h>

#include <algorithm>
#include <stdexcept>

#include "strata/core/error.hpp"
#include "strata/core/text.hpp"
#include "strategy_text.hpp"

namespace strata::cost {
namespace {

using detail::field_rule_error;
using detail::rule_error;

std::string stage_field(std::size_t i, std::string_view key) { return fmt::format("stages[{}].{}", i, key); }

std::vector<std::string> cluster_gpu_names(const hw::Cluster& c) {
  std::vector<std::string> names;
  for (const auto& g : c.gpu_types) names.push_back(g.name);
  return names;
}

// The cluster GPU type a stage names: its exact name, or the one type whose name is "<name>-…" (a100 →
// a100-40gb). Rule 'GPU type in the cluster' otherwise.
int resolve_gpu_type(const hw::Cluster& c, const std::string& name, const std::string& field) {
  std::vector<int> prefixed;
  for (std::size_t t = 0; t < c.gpu_types.size(); ++t) {
    const auto& type = c.gpu_types[t].name;
    if (core::to_lower(type) == name) return static_cast<int>(t);
    if (core::to_lower(type).starts_with(name + "-")) prefixed.push_back(static_cast<int>(t));
  }
  if (prefixed.size() == 1) return prefixed.front();
  field_rule_error(field, "GPU type in the cluster",
                   fmt::format("'{}' {} of cluster {} (its GPU types: {})", name,
                               prefixed.empty() ? "is not a GPU type" : "names more than one GPU type", c.name,
                               core::join(cluster_gpu_names(c))));
}

// Checks a stage's explicit devices (exist, dp·tp of them, the named type, none used twice) and marks them used.
void claim_explicit_devices(StageChoice& st, std::size_t i, const hw::Cluster& c, std::vector<char>& used) {
  const std::int64_t want = static_cast<std::int64_t>(st.dp) * st.tp;
  if (static_cast<std::int64_t>(st.devices.size()) != want)
    field_rule_error(stage_field(i, "devices"), "stage has dp·tp devices",
                     fmt::format("{} devices listed for dp·tp = {}·{} = {}", st.devices.size(), st.dp, st.tp, want));
  const int type = st.gpu.empty() ? -1 : resolve_gpu_type(c, st.gpu, stage_field(i, "gpu"));
  for (int d : st.devices) {
    if (d < 0 || d >= c.num_devices())
      field_rule_error(stage_field(i, "devices"), "stage devices exist",
                       fmt::format("device {} does not exist (cluster {} has devices 0..{})", d, c.name,
                                   c.num_devices() - 1));
    if (type >= 0 && c.devices[d].gpu_type != type)
      field_rule_error(stage_field(i, "devices"), "stage devices have the named GPU type",
                       fmt::format("device {} is a {}, not a {}", d, c.gpu_of(d).name, c.gpu_types[type].name));
    if (used[d]) field_rule_error(stage_field(i, "devices"), "no device used twice", fmt::format("device {}", d));
    used[d] = 1;
  }
  // Name the stage's type when all its devices share one (the canonical, complete form names it).
  const int first = c.devices[st.devices.front()].gpu_type;
  const bool one_type = std::all_of(st.devices.begin(), st.devices.end(),
                                    [&](int d) { return c.devices[d].gpu_type == first; });
  st.gpu = type >= 0 ? c.gpu_types[type].name : (one_type ? c.gpu_types[first].name : std::string());
}

// Gives a stage named only by GPU type the next dp·tp free devices of that type, in node-major order.
void allocate_devices(StageChoice& st, std::size_t i, const hw::Cluster& c, std::vector<char>& used) {
  const int type = resolve_gpu_type(c, st.gpu, stage_field(i, "gpu"));
  st.gpu = c.gpu_types[type].name;
  const std::int64_t want = static_cast<std::int64_t>(st.dp) * st.tp;
  for (int d = 0; d < c.num_devices() && static_cast<std::int64_t>(st.devices.size()) < want; ++d)
    if (!used[d] && c.devices[d].gpu_type == type) st.devices.push_back(d);
  if (static_cast<std::int64_t>(st.devices.size()) < want)
    field_rule_error(stage_field(i, "gpu"), "enough free devices of the GPU type",
                     fmt::format("dp·tp = {}·{} = {} {} devices wanted, {} left after the stages before and the "
                                 "stages that list their devices",
                                 st.dp, st.tp, want, st.gpu, st.devices.size()));
  for (int d : st.devices) used[d] = 1;
}

// Top-level fields that the per-stage form does not use, and the fields all stages share.
void check_shared_fields(Strategy& s) {
  if (s.dp != 0) field_rule_error("dp", "stages exclude dp, tp, split and place", "each stage gives its own dp");
  if (s.tp != 0) field_rule_error("tp", "stages exclude dp, tp, split and place", "each stage gives its own tp");
  if (!s.split.empty())
    field_rule_error("split", "stages exclude dp, tp, split and place", "each stage gives its own layer count");
  if (!s.placement.empty())
    field_rule_error("place", "stages exclude dp, tp, split and place", "each stage gives its own devices");
  if (s.pp != 0 && s.pp != static_cast<int>(s.stages.size()))
    field_rule_error("pp", "pp = number of stages", fmt::format("pp = {} with {} stages", s.pp, s.stages.size()));
  s.pp = static_cast<int>(s.stages.size());
  if (s.virtual_stages != 1 || s.schedule == Schedule::interleaved)
    field_rule_error(s.virtual_stages != 1 ? "v" : "schedule", "stages need v = 1",
                     "a per-stage strategy runs one chunk per stage (no interleaved schedule)");
  if (s.micro_batch < 1) rule_error("mbs >= 1", fmt::format("mbs = {}", s.micro_batch));
  if (s.global_batch < 1) rule_error("gbs given", "gbs (global batch size) is required, e.g. gbs=512");
  if (s.zero_stage < 0 || s.zero_stage > 3) rule_error("zero in 0..3", fmt::format("zero = {}", s.zero_stage));
}

// Layers sum to the chain; every stage's replicas get whole micro-batches.
void check_layers_and_batches(const Strategy& s, const model::Model& m) {
  std::int64_t sum = 0;
  for (const auto& st : s.stages) sum += st.layers;
  if (sum != static_cast<std::int64_t>(m.layers.size()))
    field_rule_error("stages[].layers", "stage layers sum to the chain length",
                     fmt::format("the stages hold {} layers but model {} has {} (embedding and head included)", sum,
                                 m.name, m.layers.size()));
  for (std::size_t i = 0; i < s.stages.size(); ++i) {
    const std::int64_t per_micro = static_cast<std::int64_t>(s.stages[i].dp) * s.micro_batch;
    if (s.global_batch % per_micro != 0)
      field_rule_error(stage_field(i, "dp"), "gbs divisible by each stage's dp·mbs",
                       fmt::format("gbs {} is not divisible by dp·mbs = {}·{} = {}", s.global_batch, s.stages[i].dp,
                                   s.micro_batch, per_micro));
  }
}

// Per-layer choices of stage i (whose layers start at chain entry `first`): one per layer, tp filled and valid.
void check_layer_choices(StageChoice& st, std::size_t i, int first, const model::Model& m) {
  const int group = st.dp * st.tp;
  if (st.layer_choices.empty()) {
    for (int l = first; l < first + st.layers; ++l)
      if (const auto problem = model::tensor_parallel_problem(m.layers[l], st.tp); !problem.empty())
        field_rule_error(stage_field(i, "tp"), "tp divides heads", problem);
    return;
  }
  if (static_cast<int>(st.layer_choices.size()) != st.layers)
    field_rule_error(stage_field(i, "layer_choices"), "one layer choice per layer of the stage",
                     fmt::format("{} choices for {} layers", st.layer_choices.size(), st.layers));
  for (int j = 0; j < st.layers; ++j) {
    auto& lc = st.layer_choices[j];
    const std::string field = fmt::format("stages[{}].layer_choices[{}]", i, j);
    if (lc.tp == 0) lc.tp = st.tp;
    if (group % lc.tp != 0)
      field_rule_error(field + ".tp", "layer tp divides the stage group",
                       fmt::format("tp {} does not divide the stage's dp·tp = {}·{} = {} devices", lc.tp, st.dp,
                                   st.tp, group));
    if (const auto problem = model::tensor_parallel_problem(m.layers[first + j], lc.tp); !problem.empty())
      field_rule_error(field + ".tp", "tp divides heads", problem);
    if (lc.tp_order == TpOrder::strided && (lc.tp == 1 || lc.tp == group))
      field_rule_error(field + ".tp_order", "strided tp needs 1 < tp < stage group",
                       fmt::format("tp {} in a group of {}: consecutive and strided are the same groups", lc.tp,
                                   group));
    if (lc.overlap_tp && lc.tp == 1)
      field_rule_error(field + ".overlap_tp", "overlapped TP needs tp > 1", "tp = 1 has no TP collectives");
  }
}

// rlayers of a per-stage strategy: one entry per stage, at most the layers it holds.
void check_stage_recompute_layers(const Strategy& s) {
  if (s.recompute_layers.empty()) return;
  if (s.recompute_layers.size() != s.stages.size())
    rule_error("rlayers has pp entries",
               fmt::format("recompute_layers has {} entries, expected pp = {}", s.recompute_layers.size(), s.pp));
  if (s.recompute == model::Recompute::none)
    rule_error("rlayers needs recompute", "recompute_layers given with recompute=none");
  for (std::size_t i = 0; i < s.stages.size(); ++i) {
    if (!s.stages[i].layer_choices.empty())
      field_rule_error(stage_field(i, "layer_choices"), "rlayers and layer choices exclusive",
                       "a stage with per-layer choices gives each layer's recompute itself");
    if (s.recompute_layers[i] > s.stages[i].layers)
      rule_error("rlayers <= layers of the stage", fmt::format("stage {} recomputes {} layers but holds {}", i,
                                                               s.recompute_layers[i], s.stages[i].layers));
  }
}

// attention=flash needs FlashAttention on every device a stage uses (idle devices do not matter).
void check_attention(const Strategy& s, const hw::Cluster& c) {
  if (!s.attention) return;
  for (std::size_t i = 0; i < s.stages.size(); ++i)
    for (int d : s.stages[i].devices)
      if (const std::string why = attention_unsupported(*s.attention, c.gpu_of(d), s.dtype); !why.empty())
        field_rule_error(stage_field(i, "devices"), "fused attention needs an sm80+ GPU and a 16-bit dtype", why);
}

// What a layer of a stage without per-layer choices does (docs/strategy.md): the stage's tp, ZeRO-3 iff zero=3,
// the strategy's recompute, consecutive tp groups, no overlap.
LayerChoice stage_default_choice(const Strategy& s, const StageChoice& st) {
  LayerChoice lc;
  lc.tp = st.tp;
  lc.data_parallel = s.zero_stage == 3 ? LayerDataParallel::sdp : LayerDataParallel::dp;
  lc.recompute = s.recompute;
  return lc;
}

int common_gpu_type(const hw::Cluster& c, const std::vector<int>& devices) {
  if (devices.empty()) return -1;
  const int t = c.devices[devices.front()].gpu_type;
  for (int d : devices)
    if (c.devices[d].gpu_type != t) return -1;
  return t;
}

}  // namespace

namespace detail {

Strategy complete_stage_strategy(Strategy s, const model::Model& m, const hw::Cluster& c) {
  if (c.num_devices() <= 0) rule_error("cluster has devices", "the cluster has no devices");
  if (m.layers.empty()) rule_error("model has layers", "the model has no layers");
  check_shared_fields(s);
  std::vector<char> used(c.num_devices(), 0);
  for (std::size_t i = 0; i < s.stages.size(); ++i)
    if (!s.stages[i].devices.empty()) claim_explicit_devices(s.stages[i], i, c, used);
  for (std::size_t i = 0; i < s.stages.size(); ++i)
    if (s.stages[i].devices.empty()) allocate_devices(s.stages[i], i, c, used);
  check_attention(s, c);
  check_layers_and_batches(s, m);
  int first = 0;
  for (std::size_t i = 0; i < s.stages.size(); ++i) {
    check_layer_choices(s.stages[i], i, first, m);
    first += s.stages[i].layers;
  }
  check_stage_recompute_layers(s);
  // Canonical form: a stage whose every layer choice is the stage's default has none.
  for (auto& st : s.stages) {
    const auto def = stage_default_choice(s, st);
    if (std::all_of(st.layer_choices.begin(), st.layer_choices.end(), [&](const LayerChoice& lc) { return lc == def; }))
      st.layer_choices.clear();
  }
  if (auto uniform = collapse_to_uniform(s, c)) return complete_strategy(std::move(*uniform), m, c);
  return s;
}

}  // namespace detail

bool is_uniform(const Strategy& s) { return s.stages.empty(); }

void require_uniform(const Strategy& s, std::string_view doing) {
  if (is_uniform(s)) return;
  const auto& st0 = s.stages.front();
  for (const auto& st : s.stages)
    if (st.dp != st0.dp || st.tp != st0.tp)
      throw core::InputError(fmt::format(
          "strategy: per-stage (dp, tp) differs between stages: {} such strategies is not supported yet (`strata "
          "estimate` costs them and `strata plan --per-stage` searches them)", doing));
  for (const auto& st : s.stages)
    if (!st.layer_choices.empty())
      throw core::InputError(fmt::format("strategy: per-layer choices (layers=): {} them is not supported yet "
                                         "(Galvatron-BMW per-layer strategies, Oases overlapped TP)",
                                         doing));
  throw core::InputError(fmt::format("strategy: the stages use {} devices and leave the rest of the cluster idle: {} "
                                     "such strategies is not supported yet (`strata estimate` costs them and "
                                     "`strata plan --per-stage` searches them)",
                                     devices_used(s), doing));
}

int devices_used(const Strategy& s) {
  if (is_uniform(s)) return s.num_devices();
  int n = 0;
  for (const auto& st : s.stages) n += st.dp * st.tp;
  return n;
}

std::vector<StageView> stage_views(const Strategy& s, const hw::Cluster& c) {
  const auto bounds = chunk_boundaries(s);
  std::vector<StageView> views(static_cast<std::size_t>(s.pp));
  const bool uniform = is_uniform(s);
  const int chunks = uniform ? s.pp * s.virtual_stages : s.pp;
  if (static_cast<int>(bounds.size()) != chunks + 1 || s.pp < 1 ||
      (uniform && static_cast<int>(s.placement.size()) != s.num_devices()))
    throw std::invalid_argument("stage_views: strategy is not complete (call complete_strategy first)");
  for (int st = 0; st < s.pp; ++st) {
    auto& v = views[st];
    v.dp = uniform ? s.dp : s.stages[st].dp;
    v.tp = uniform ? s.tp : s.stages[st].tp;
    v.cp = uniform ? s.cp : 1;
    const std::ptrdiff_t group = static_cast<std::ptrdiff_t>(v.dp) * v.cp * v.tp;
    if (uniform)
      v.devices.assign(s.placement.begin() + st * group, s.placement.begin() + (st + 1) * group);
    else
      v.devices = s.stages[st].devices, v.layer_choices = s.stages[st].layer_choices;
    if (static_cast<std::ptrdiff_t>(v.devices.size()) != group)
      throw std::invalid_argument("stage_views: strategy is not complete (stage devices)");
    v.gpu_type = common_gpu_type(c, v.devices);
    for (int ch = st; ch < chunks; ch += s.pp) {
      v.chunks.push_back({ch, bounds[ch], bounds[ch + 1] - bounds[ch]});
      v.num_layers += bounds[ch + 1] - bounds[ch];
    }
    v.recompute_layers = s.recompute_layers.empty() ? -1 : s.recompute_layers[st];
    v.micro_batches = s.global_batch / (static_cast<std::int64_t>(v.dp) * s.micro_batch);
  }
  return views;
}

Strategy to_per_stage(const Strategy& s, const hw::Cluster& c) {
  if (!is_uniform(s)) return s;
  if (s.virtual_stages != 1 || s.schedule == Schedule::interleaved)
    field_rule_error("v", "stages need v = 1", "a per-stage strategy runs one chunk per stage (no interleaving)");
  if (s.cp != 1) field_rule_error("cp", "stages need cp = 1", "per-stage strategies have no context parallelism");
  Strategy out = s;
  for (const auto& v : stage_views(s, c)) {
    StageChoice st;
    st.gpu = v.gpu_type >= 0 ? c.gpu_types[v.gpu_type].name : std::string();
    st.devices = v.devices;
    st.dp = v.dp;
    st.tp = v.tp;
    st.layers = v.num_layers;
    out.stages.push_back(std::move(st));
  }
  out.dp = out.tp = 0;
  out.split.clear();
  out.placement.clear();
  return out;
}

std::optional<Strategy> collapse_to_uniform(const Strategy& s, const hw::Cluster& c) {
  if (is_uniform(s)) return s;
  const auto& st0 = s.stages.front();
  for (const auto& st : s.stages)
    if (st.dp != st0.dp || st.tp != st0.tp || !st.layer_choices.empty() ||
        static_cast<int>(st.devices.size()) != st.dp * st.tp)
      return std::nullopt;
  if (devices_used(s) != c.num_devices()) return std::nullopt;
  Strategy u = s;
  u.dp = st0.dp;
  u.tp = st0.tp;
  u.pp = static_cast<int>(s.stages.size());
  u.virtual_stages = 1;
  for (const auto& st : s.stages) {
    u.split.push_back(st.layers);
    u.placement.insert(u.placement.end(), st.devices.begin(), st.devices.end());
  }
  u.stages.clear();
  return u;
}

}  // namespace strata::cost
