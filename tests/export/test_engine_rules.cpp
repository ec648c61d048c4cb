// tests/export/test_engine_rules: every rule of data/engines/rules.json (found by running the engines' own
// validators, scripts/engine_check) holds on strata's exports of a set of plans, without the engine sources;
// CUDA_DEVICE_MAX_CONNECTIONS per plan, context parallelism out and back, torchtitan's DDP/fp32 rules, DeepSpeed's
// tp > 1 refusal and the current torchtitan config format (export and exact round trip).
#include <gtest/gtest.h>

#include <fstream>
#include <regex>

#include "rule_eval.hpp"
#include "strata/core/error.hpp"
#include "strata/export/export.hpp"
#include "strata/export/toml.hpp"
#include "../../src/export/internal.hpp"

namespace ex = strata::exporter;
namespace cost = strata::cost;
namespace model = strata::model;
namespace hw = strata::hw;
namespace dt = strata::exporter::detail;
using nlohmann::json;

namespace {

struct Built {
  model::Model m;
  hw::Cluster c;
  cost::Strategy s;
};
Built build(const char* m, const char* c, const char* s) {
  Built b{model::zoo_model(m), hw::resolve_cluster(c, hw::builtin_catalog()), {}};
  b.s = cost::complete_strategy(cost::parse_strategy(s), b.m, b.c);
  return b;
}

// Plans over ZeRO 0-3, tp, pp, cp, dtypes and recompute, A100/H100/mixed, 8 to 1024 GPUs.
const char* const kPlans[][3] = {
    {"llama3-8b", "dgx-a100:1", "tp=1,pp=1,mbs=1,gbs=64,zero=0"},
    {"llama3-8b", "dgx-a100:1", "tp=2,pp=1,mbs=1,gbs=64,zero=1,sp=on"},
    {"llama3-8b", "dgx-h100:1", "tp=8,pp=1,mbs=1,gbs=32,zero=0,sp=on,dtype=fp32"},
    {"llama3-8b", "dgx-h100:2", "tp=2,pp=1,cp=2,mbs=1,gbs=64,zero=3,sp=on"},
    {"llama3-8b", "dgx-a100:2+dgx-h100:2", "tp=4,pp=2,mbs=1,gbs=64,zero=1,sp=on,recompute=full"},
    {"llama3-70b", "dgx-h100:8", "tp=2,pp=4,cp=2,mbs=1,gbs=512,zero=1,sp=on"},
    {"llama3-70b", "dgx-h100:8", "tp=8,pp=1,mbs=1,gbs=512,zero=3,sp=on,recompute=full,overlap=async"},
    {"llama3-70b", "dgx-a100:16", "tp=8,pp=4,mbs=1,gbs=512,zero=0,sp=on"},
    {"llama3-405b", "dgx-h100:128", "tp=8,pp=8,cp=2,mbs=1,gbs=2048,zero=1,sp=on,recompute=full"},
    {"llama2-7b", "dgx-a100:4", "tp=1,pp=1,mbs=2,gbs=256,zero=2"},
    {"llama2-70b", "dgx-a100:8+dgx-h100:8", "tp=8,pp=2,mbs=1,gbs=512,zero=3,sp=on"},
    {"gpt3-175b", "dgx-a100:128", "tp=8,pp=16,mbs=1,gbs=1536,zero=1,sp=on,recompute=full"},
    {"mpt-7b", "dgx-h100:4", "tp=2,pp=1,mbs=1,gbs=256,zero=0,sp=on"},
};

json load_rules() {
  std::ifstream in(std::string(STRATA_SOURCE_DIR) + "/data/engines/rules.json");
  return json::parse(in);
}

json scalar(const std::string& v) {
  if (!v.empty() && v.find_first_not_of("-0123456789") == std::string::npos) return std::stoll(v);
  return v;
}

std::map<std::string, json> flat_args(const std::vector<std::string>& a) {
  std::map<std::string, json> f;
  for (std::size_t i = 0; i < a.size(); ++i) {
    const bool has_value = i + 1 < a.size() && a[i + 1].rfind("--", 0) != 0;
    f[a[i]] = has_value ? scalar(a[i + 1]) : json(true);
    if (has_value) ++i;
  }
  return f;
}

std::map<std::string, json> flat_launch(const std::string& text) {
  const auto at = text.find("local args=(");
  auto f = flat_args(dt::shell_tokens(text.substr(at + 12, text.find("\n  )", at) - at - 12)));
  std::smatch mt;
  if (std::regex_search(text, mt, std::regex(R"(\n\s*export CUDA_DEVICE_MAX_CONNECTIONS=(\S+))")))
    f["env.CUDA_DEVICE_MAX_CONNECTIONS"] = mt[1].str();
  return f;
}

void flatten(const json& j, const std::string& prefix, std::map<std::string, json>& out) {
  for (const auto& [k, v] : j.items()) {
    if (v.is_object()) flatten(v, prefix + k + ".", out);
    else out[prefix + k] = v;
  }
}

std::map<std::string, json> flat_py(const std::string& text) {
  std::map<std::string, json> f;
  static const std::regex line(R"(\n\s*config\.([a-z_]+\.[a-z_0-9]+) = (.+))");
  for (auto it = std::sregex_iterator(text.begin(), text.end(), line); it != std::sregex_iterator(); ++it) {
    std::string lit = std::regex_replace((*it)[2].str(), std::regex(R"(\bTrue\b)"), "true");
    f[(*it)[1].str()] = json::parse(std::regex_replace(lit, std::regex(R"(\bFalse\b)"), "false"));
  }
  std::smatch mt;
  if (std::regex_search(text, mt, std::regex(R"re(\n\s*config\.model_spec = model_registry\("(\w+)"\))re"))) f["model_spec"] = mt[1].str();
  return f;
}

// Every format's export of a plan, after that engine's nearest-expressible adjustment; a format is left out when
// the plan (even adjusted) is not expressible there (the rules are about what strata writes).
std::map<std::string, std::map<std::string, json>> exports_of(const Built& b) {
  std::map<std::string, std::map<std::string, json>> out;
  auto adjusted = [&](void (*closest)(const model::Model&, cost::Strategy&)) {
    auto s = b.s;
    closest(b.m, s);
    s.split.clear();
    return cost::complete_strategy(s, b.m, b.c);
  };
  if (const auto s = adjusted(dt::megatron_closest); dt::megatron_problem(b.m, s).empty()) {
    out["megatron_args"] = flat_args(dt::megatron_arg_list(b.m, s));
    out["launch"] = flat_launch(dt::launch_script(ex::Engine::torchrun, b.m, b.c, s));
  }
  if (const auto s = adjusted(dt::torchtitan_closest); dt::torchtitan_problem(b.m, s).empty()) {
    const json doc = ex::parse_toml(dt::torchtitan_toml(b.m, b.c, s), "t");  // kept alive for items()
    for (const auto& [sec, keys] : doc.items())
      for (const auto& [k, v] : keys.items()) out["torchtitan_toml"][sec + "." + k] = v;
    if (dt::torchtitan_py_problem(b.m, s).empty()) out["torchtitan_py"] = flat_py(dt::torchtitan_py(b.m, b.c, s));
  }
  if (const auto s = adjusted(dt::deepspeed_closest); dt::deepspeed_problem(b.m, s).empty())
    flatten(json::parse(dt::deepspeed_json(b.m, b.c, s)), "", out["deepspeed_json"]);
  return out;
}

TEST(EngineRules, EveryEncodedRuleHoldsOnTheExportsOfEveryPlan) {
  const json rules = load_rules();
  ASSERT_GE(rules.at("rules").size(), 20u);
  std::map<std::string, int> fired;  // rule id -> plans where its `when` held
  std::map<std::string, int> formats;
  for (const auto& p : kPlans) {
    const auto b = build(p[0], p[1], p[2]);
    for (const auto& [format, values] : exports_of(b)) {
      ++formats[format];
      strata_test::FlatConfig f{values, {}};
      for (const auto& [k, v] : rules.at("defaults").at(format).items()) f.defaults[k] = v;
      f.values["world"] = b.c.num_devices();
      for (const auto& r : rules.at("rules")) {
        if (r.at("format") != format || !strata_test::holds(r.at("when"), f)) continue;
        ++fired[r.at("id").get<std::string>()];
        EXPECT_TRUE(strata_test::holds(r.at("require"), f))
            << r.at("id") << " (" << r.at("cite") << ") fails for " << p[0] << " " << p[1] << " " << p[2] << " as " << format;
      }
    }
  }
  for (const auto& r : rules.at("rules")) {
    EXPECT_GT(fired[r.at("id").get<std::string>()], 0) << "no plan exercises rule " << r.at("id");
    EXPECT_TRUE(r.contains("cite") && r.contains("engine") && rules.at("engines").size() == 4u);
  }
  for (const char* fm : {"megatron_args", "launch", "torchtitan_toml", "torchtitan_py", "deepspeed_json"})
    EXPECT_GE(formats[fm], 5) << fm;
}

TEST(EngineRules, TheEvaluatorCatchesTheDefectsTheEnginesRejected) {
  const json rules = load_rules();
  auto rule = [&](const std::string& id) {
    for (const auto& r : rules.at("rules"))
      if (r.at("id") == id) return r;
    throw std::runtime_error("no rule " + id);
  };
  // The old launch script: Megatron-FSDP with CUDA_DEVICE_MAX_CONNECTIONS=1.
  strata_test::FlatConfig fsdp{{{"--use-megatron-fsdp", true}, {"env.CUDA_DEVICE_MAX_CONNECTIONS", "1"}}, {}};
  const auto r1 = rule("megatron_fsdp_cuda_max_conn");
  EXPECT_TRUE(strata_test::holds(r1.at("when"), fsdp));
  EXPECT_FALSE(strata_test::holds(r1.at("require"), fsdp));
  // The old torchtitan TOML: DDP × TP in bfloat16.
  strata_test::FlatConfig ddp{{{"parallelism.data_parallel_replicate_degree", 4}, {"parallelism.data_parallel_shard_degree", 1},
                               {"parallelism.tensor_parallel_degree", 2}, {"training.mixed_precision_param", "bfloat16"}},
                              {{"parallelism.context_parallel_degree", 1}, {"parallelism.pipeline_parallel_degree", 1}}};
  for (const char* id : {"torchtitan_ddp_1d", "torchtitan_amp_needs_fsdp"}) {
    EXPECT_TRUE(strata_test::holds(rule(id).at("when"), ddp)) << id;
    EXPECT_FALSE(strata_test::holds(rule(id).at("require"), ddp)) << id;
  }
  // The old DeepSpeed tp > 1 file: dp = world / (tp·pp) in the batch identity.
  strata_test::FlatConfig ds{{{"train_batch_size", 64}, {"train_micro_batch_size_per_gpu", 1}, {"gradient_accumulation_steps", 16},
                              {"tensor_parallel.autotp_size", 2}, {"world", 8}},
                             {{"pipeline.stages", 1}}};
  EXPECT_FALSE(strata_test::holds(rule("deepspeed_batch_identity").at("require"), ds));
  EXPECT_FALSE(strata_test::holds(rule("deepspeed_tp_needs_mpu").at("require"), ds));
}

TEST(EngineRules, CudaDeviceMaxConnectionsFollowsThePlan) {
  struct Want {
    const char* strategy;
    const char* line;
  };
  const Want cases[] = {
      {"tp=8,pp=1,mbs=1,gbs=32,zero=3,sp=on", "unset CUDA_DEVICE_MAX_CONNECTIONS"},     // Megatron-FSDP: never 1
      {"tp=1,pp=1,mbs=1,gbs=32,zero=2", "unset CUDA_DEVICE_MAX_CONNECTIONS"},
      {"tp=2,pp=2,mbs=1,gbs=32,zero=1,sp=on", "export CUDA_DEVICE_MAX_CONNECTIONS=1"},  // tp > 1, no FSDP
      {"tp=1,pp=1,cp=2,mbs=1,gbs=32,zero=0", "export CUDA_DEVICE_MAX_CONNECTIONS=1"},   // cp > 1, no FSDP
      {"tp=1,pp=2,mbs=1,gbs=32,zero=1", "unset CUDA_DEVICE_MAX_CONNECTIONS"},           // not needed
  };
  for (const auto& w : cases) {
    const auto b = build("llama3-8b", "dgx-h100:1", w.strategy);
    const auto script = dt::launch_script(ex::Engine::slurm, b.m, b.c, b.s);
    EXPECT_NE(script.find(w.line), std::string::npos) << w.strategy << "\n" << script;
    const bool one = std::string(w.line).find("=1") != std::string::npos;
    EXPECT_EQ(ex::cuda_device_max_connections(b.s).has_value(), one) << w.strategy;
    EXPECT_EQ(script.find("export CUDA_DEVICE_MAX_CONNECTIONS=1") != std::string::npos, one) << w.strategy;
  }
}

void expect_same(const cost::Strategy& back, const cost::Strategy& s, const std::string& text) {
  EXPECT_EQ(cost::to_json(back).dump(), cost::to_json(s).dump()) << text;
}

TEST(EngineRules, ContextParallelismIsWrittenAndReadBackExactly) {
  const auto b = build("llama3-70b", "dgx-h100:8", "tp=2,pp=4,cp=2,mbs=1,gbs=512,zero=1,sp=on");
  ASSERT_EQ(dt::megatron_problem(b.m, b.s), "");
  const auto args = dt::megatron_args_text(b.m, b.c, b.s);
  EXPECT_NE(args.find("--context-parallel-size 2"), std::string::npos);
  EXPECT_NE(args.find("world / (tp·pp·cp)"), std::string::npos);
  auto im = ex::import_megatron_args(args, "t");
  EXPECT_EQ(im.strategy.cp, 2);
  im.strategy.placement = b.s.placement;
  expect_same(cost::complete_strategy(im.strategy, b.m, b.c), b.s, args);
  // The launch script carries the placement itself.
  const auto script = dt::launch_script(ex::Engine::torchrun, b.m, b.c, b.s);
  expect_same(cost::complete_strategy(ex::import_launch_script(script, "t", b.c).strategy, b.m, b.c), b.s, script);
  // torchtitan: cp shards (FSDP over dp_shard·cp), so only ZeRO-2/3 plans carry it.
  const auto z0 = build("llama3-70b", "dgx-h100:8", "tp=2,pp=4,cp=2,mbs=1,gbs=512,zero=0,sp=on");
  EXPECT_NE(dt::torchtitan_problem(z0.m, z0.s).find("context parallelism without ZeRO-2/3"), std::string::npos);
  const auto t = build("llama3-70b", "dgx-h100:8", "tp=2,pp=4,cp=2,mbs=1,gbs=512,zero=3,sp=on,recompute=full,earlystop=on");
  ASSERT_EQ(dt::torchtitan_problem(t.m, t.s), "");
  const auto toml = dt::torchtitan_toml(t.m, t.c, t.s);
  EXPECT_NE(toml.find("context_parallel_degree = 2"), std::string::npos);
  auto tm = ex::import_torchtitan_toml(toml, "t");
  tm.strategy.placement = t.s.placement;
  expect_same(cost::complete_strategy(tm.strategy, t.m, t.c), t.s, toml);
  const auto py = ex::export_torchtitan_py(t.m, t.c, t.s).text;
  EXPECT_NE(py.find("config.parallelism.context_parallel_degree = 2"), std::string::npos);
  auto pm = ex::import_torchtitan_py(py, "t");
  pm.strategy.placement = t.s.placement;
  expect_same(cost::complete_strategy(pm.strategy, t.m, t.c), t.s, py);
  // DeepSpeed has no ring attention: refused, and its nearest plan folds cp into dp.
  EXPECT_NE(dt::deepspeed_problem(b.m, b.s), "");
}

TEST(EngineRules, TorchtitanRefusesDdpWithTpAndNeverWritesBf16ForAnFp32Run) {
  const auto ddp = build("llama3-8b", "dgx-a100:1", "tp=2,pp=1,mbs=1,gbs=64,zero=0,sp=on");  // dp 4 × tp 2, DDP
  EXPECT_NE(dt::torchtitan_problem(ddp.m, ddp.s).find("DDP has not supported"), std::string::npos);
  EXPECT_THROW(ex::export_strategy(ex::Engine::torchtitan, ddp.m, ddp.c, ddp.s), strata::core::InputError);
  const auto near = ex::closest_expressible(ex::Engine::torchtitan, ddp.m, ddp.c, ddp.s);
  EXPECT_EQ(near.zero_stage, 2);  // FSDP without resharding: no more memory than DDP
  EXPECT_EQ(near.dtype, hw::Dtype::bf16);
  const auto bf16 = build("llama3-8b", "dgx-h100:1", "tp=8,pp=1,mbs=1,gbs=32,zero=0,sp=on");  // dp 1, no FSDP
  EXPECT_NE(dt::torchtitan_problem(bf16.m, bf16.s).find("trains in fp32"), std::string::npos);
  const auto fp32 = ex::closest_expressible(ex::Engine::torchtitan, bf16.m, bf16.c, bf16.s);
  EXPECT_EQ(fp32.dtype, hw::Dtype::fp32);  // costed as what torchtitan runs
  const auto text = ex::export_strategy(ex::Engine::torchtitan, bf16.m, bf16.c, fp32).text;
  EXPECT_NE(text.find("mixed_precision_param = \"float32\""), std::string::npos) << text;
  EXPECT_EQ(text.find("bfloat16"), std::string::npos) << text;
  // The current torchtitan always applies FSDP's mixed-precision policy and has no DDP path: both run there.
  EXPECT_EQ(dt::torchtitan_py_problem(ddp.m, ddp.s), "");
  EXPECT_EQ(dt::torchtitan_py_problem(bf16.m, bf16.s), "");
}

TEST(EngineRules, DeepSpeedRefusesTensorParallelismAndItsNearestPlanCountsDpAsDeepSpeedDoes) {
  const auto b = build("llama3-8b", "dgx-a100:2", "tp=2,pp=2,mbs=1,gbs=64,zero=1");
  try {
    ex::export_strategy(ex::Engine::deepspeed, b.m, b.c, b.s);
    ADD_FAILURE() << "tp > 1 exported to DeepSpeed";
  } catch (const strata::core::InputError& e) {
    // The profile's rule names the feature (data/engines/deepspeed.json max_tp: no mpu in a JSON config).
    EXPECT_NE(std::string(e.what()).find("tensor parallelism tp = 2"), std::string::npos) << e.what();
  }
  const auto near = ex::closest_expressible(ex::Engine::deepspeed, b.m, b.c, b.s);
  EXPECT_EQ(near.tp, 1);
  EXPECT_EQ(near.dp, 8);  // world / pp: the PipelineModule topology's dp
  const auto j = json::parse(ex::export_strategy(ex::Engine::deepspeed, b.m, b.c, near).text);
  EXPECT_FALSE(j.contains("tensor_parallel"));
  EXPECT_EQ(j["train_batch_size"].get<long long>(),
            j["train_micro_batch_size_per_gpu"].get<long long>() * j["gradient_accumulation_steps"].get<long long>() * 16 / 2);
}

TEST(EngineRules, CurrentTorchtitanFormatIsAPythonConfigThatRoundTrips) {
  for (const char* s : {"tp=8,pp=1,mbs=1,gbs=512,zero=3,sp=on,recompute=full,earlystop=on",
                        "tp=4,pp=4,v=2,mbs=1,gbs=512,zero=0,sp=on,schedule=interleaved",
                        "tp=2,pp=1,mbs=2,gbs=512,zero=2,sp=on,overlap=async,recompute=selective"}) {
    const auto b = build("llama3-70b", "dgx-h100:8", s);
    ASSERT_EQ(dt::torchtitan_py_problem(b.m, b.s), "") << s;
    const auto f = ex::export_torchtitan_py(b.m, b.c, b.s);
    EXPECT_EQ(f.name, "strata_plan.py");
    EXPECT_NE(f.text.find("def strata_plan() -> Trainer.Config:"), std::string::npos);
    EXPECT_NE(f.text.find("config = llama3_70b()"), std::string::npos);
    EXPECT_NE(f.text.find("return dataclasses.replace(config)"), std::string::npos);
    if (b.s.pp > 1) EXPECT_NE(f.text.find("config.training.disable_cuda_graphs = True"), std::string::npos);
    auto im = ex::import_torchtitan_py(f.text, "t");
    im.strategy.placement = b.s.placement;
    expect_same(cost::complete_strategy(im.strategy, b.m, b.c), b.s, f.text);
  }
  const auto gpt = build("gpt3-175b", "dgx-a100:16", "tp=8,pp=2,mbs=1,gbs=64,zero=0,sp=on");
  EXPECT_THROW(ex::export_torchtitan_py(gpt.m, gpt.c, gpt.s), strata::core::InputError);  // no llama3 recipe
}

}  // namespace
