// Tests for the per-stage and per-layer strategy form (cost/strategy_stages, cost/strategy_stage_rules): the
// uniform form's CLI/JSON byte-identical to the format before the per-stage form existed, CLI ↔ struct ↔ JSON
// round trips of per-stage strategies, one failing case per validity rule (message names the rule and field),
// the per-stage view of a uniform strategy against its placement/split, and the uniform ↔ per-stage conversions.
#include <gtest/gtest.h>

#include <cstdio>
#include <fstream>
#include <algorithm>
#include <random>

#include "helpers.hpp"

using namespace strata;
using namespace strata::cost;
using cost_test::error_of;

namespace {

// small-gpt: embedding + 8 blocks (8 heads) + head = 10 chain entries.
// Mixed cluster: devices 0..11 are v100-16gb (3 nodes of 4), 12..15 are t4 (1 node of 4).
const char* const kMixed = "p3.8xlarge:3+g4dn.12xlarge:1";

Strategy completed(const std::string& text, const model::Model& m, const hw::Cluster& c) {
  return complete_strategy(parse_strategy(text), m, c);
}

// CLI and JSON both ways: the completed strategy survives to_cli_string → parse → complete and to_json → text →
// strategy_from_json → complete as the same struct and the same text.
void expect_round_trips(const Strategy& s, const model::Model& m, const hw::Cluster& c) {
  const auto via_cli = complete_strategy(parse_strategy(to_cli_string(s)), m, c);
  EXPECT_EQ(via_cli, s) << to_cli_string(s);
  EXPECT_EQ(to_cli_string(via_cli), to_cli_string(s));
  const auto via_json = complete_strategy(strategy_from_json(nlohmann::json::parse(to_json(s).dump()), "s.json"), m, c);
  EXPECT_EQ(via_json, s) << to_json(s).dump();
  EXPECT_EQ(to_json(via_json).dump(), to_json(s).dump());
}

}  // namespace

TEST(CostStrategyStages, UniformTextIsByteIdenticalToTheFormatBefore) {
  // Expected strings: written by strata before per-stage strategies existed (estimate --json, plan's best line).
  const auto m = model::zoo_model("small-gpt");
  const auto a = completed("dp=2,tp=2,pp=2,gbs=16,zero=2,recompute=selective", m, cost_test::cluster("dgx-a100:1"));
  EXPECT_EQ(to_cli_string(a),
            "dp=2,tp=2,pp=2,mbs=1,gbs=16,v=1,schedule=1f1b,zero=2,recompute=selective,sp=off,dtype=bf16,split=5+5");
  EXPECT_EQ(to_json(a).dump(),
            R"({"dp":2,"tp":2,"pp":2,"mbs":1,"gbs":16,"v":1,"schedule":"1f1b","zero":2,"recompute":"selective",)"
            R"("recompute_layers":[],"sp":false,"dtype":"bf16","split":[5,5],"placement":[0,1,2,3,4,5,6,7]})");
  const auto b = completed("dp=2,tp=2,pp=4,gbs=32,v=2,recompute=full,rlayers=1+1+1+1,split=2+1+1+1+1+1+1+2,"
                           "place=15+14+13+12+11+10+9+8+7+6+5+4+3+2+1+0",
                           m, cost_test::cluster(kMixed));
  EXPECT_EQ(to_json(b).dump(),
            R"({"dp":2,"tp":2,"pp":4,"mbs":1,"gbs":32,"v":2,"schedule":"interleaved","zero":0,"recompute":"full",)"
            R"("recompute_layers":[1,1,1,1],"sp":false,"dtype":"bf16","split":[2,1,1,1,1,1,1,2],)"
            R"("placement":[15,14,13,12,11,10,9,8,7,6,5,4,3,2,1,0]})");
  EXPECT_EQ(to_cli_string(b), "dp=2,tp=2,pp=4,mbs=1,gbs=32,v=2,schedule=interleaved,zero=0,recompute=full,sp=off,"
                              "dtype=bf16,rlayers=1+1+1+1,split=2+1+1+1+1+1+1+2,"
                              "place=15+14+13+12+11+10+9+8+7+6+5+4+3+2+1+0");
  EXPECT_TRUE(is_uniform(a));
  EXPECT_TRUE(is_uniform(b));
  expect_round_trips(a, m, cost_test::cluster("dgx-a100:1"));
  expect_round_trips(b, m, cost_test::cluster(kMixed));
}

TEST(CostStrategyStages, ParsesStagesAndLayerChoices) {
  const auto s = parse_strategy("gbs=8,stages=v100:dp2:tp2:4/12+13+14+15:tp4:1:dp1/t4@12:dp1:tp1:5,"
                                "layers=-/tp2.sdp.full.strided.overlap/tp1*2+tp1.ckpt+tp1.selective*2");
  ASSERT_EQ(s.stages.size(), 3u);
  EXPECT_EQ(s.stages[0].gpu, "v100");
  EXPECT_TRUE(s.stages[0].devices.empty());
  EXPECT_EQ(s.stages[0].dp, 2);
  EXPECT_EQ(s.stages[0].tp, 2);
  EXPECT_EQ(s.stages[0].layers, 4);
  EXPECT_TRUE(s.stages[0].layer_choices.empty());
  EXPECT_EQ(s.stages[1].gpu, "");
  EXPECT_EQ(s.stages[1].devices, (std::vector<int>{12, 13, 14, 15}));
  EXPECT_EQ(s.stages[1].tp, 4);  // fields in any order
  EXPECT_EQ(s.stages[1].layers, 1);
  ASSERT_EQ(s.stages[1].layer_choices.size(), 1u);
  const LayerChoice full{2, LayerDataParallel::sdp, model::Recompute::full, TpOrder::strided, true};
  EXPECT_EQ(s.stages[1].layer_choices[0], full);
  EXPECT_EQ(s.stages[2].gpu, "t4");
  EXPECT_EQ(s.stages[2].devices, (std::vector<int>{12}));
  ASSERT_EQ(s.stages[2].layer_choices.size(), 5u);
  EXPECT_EQ(s.stages[2].layer_choices[1], (LayerChoice{1}));
  EXPECT_EQ(s.stages[2].layer_choices[2].recompute, model::Recompute::full);  // ckpt = full
  EXPECT_EQ(s.stages[2].layer_choices[4].recompute, model::Recompute::selective);
  EXPECT_FALSE(is_uniform(s));
}

TEST(CostStrategyStages, CompletesDevicesAndNamesAndRoundTrips) {
  const auto m = model::zoo_model("small-gpt");
  const auto c = cost_test::cluster(kMixed);
  // A100-style example of the docs on the mixed cluster: V100 stage of dp 2, T4 stage of tp 4, 4 devices idle.
  const auto s = completed("mbs=2,gbs=16,stages=v100:dp2:tp1:6/t4:dp1:tp4:4,layers=-/tp4*2+tp2.sdp.full+tp4.overlap",
                           m, c);
  ASSERT_EQ(s.stages.size(), 2u);
  EXPECT_EQ(s.pp, 2);
  EXPECT_EQ(s.dp, 0);
  EXPECT_EQ(s.stages[0].gpu, "v100-16gb");  // the unique v100-… type of the cluster
  EXPECT_EQ(s.stages[0].devices, (std::vector<int>{0, 1}));
  EXPECT_EQ(s.stages[1].gpu, "t4");
  EXPECT_EQ(s.stages[1].devices, (std::vector<int>{12, 13, 14, 15}));
  EXPECT_EQ(s.stages[1].layer_choices[0].tp, 4);
  EXPECT_EQ(devices_used(s), 6);
  EXPECT_EQ(to_cli_string(s), "pp=2,mbs=2,gbs=16,schedule=1f1b,zero=0,recompute=none,sp=off,dtype=bf16,"
                              "stages=v100-16gb@0+1:dp2:tp1:6/t4@12+13+14+15:dp1:tp4:4,"
                              "layers=-/tp4*2+tp2.sdp.full+tp4.overlap");
  expect_round_trips(s, m, c);
  // Explicit devices first, then by-type stages take the free devices of their type in node-major order.
  const auto t = completed("gbs=8,stages=v100:dp1:tp4:5/0+1+2+3:dp2:tp2:5", m, c);
  EXPECT_EQ(t.stages[0].devices, (std::vector<int>{4, 5, 6, 7}));
  EXPECT_EQ(t.stages[1].gpu, "v100-16gb");  // named after its devices
  expect_round_trips(t, m, c);
  // A stage over mixed types keeps no GPU name.
  const auto mixed = completed("gbs=8,stages=10+11+12+13:dp2:tp2:5/v100:dp1:tp1:5", m, c);
  EXPECT_EQ(mixed.stages[0].gpu, "");
  expect_round_trips(mixed, m, c);
}

TEST(CostStrategyStages, JsonFormHoldsStagesAndLayerChoices) {
  const auto m = model::zoo_model("small-gpt");
  const auto c = cost_test::cluster(kMixed);
  const auto s = completed("gbs=8,stages=v100:dp1:tp2:9/t4:dp1:tp1:1,layers=tp2.sdp+tp1*8/-", m, c);
  EXPECT_EQ(to_json(s).dump(),
            R"({"pp":2,"mbs":1,"gbs":8,"schedule":"1f1b","zero":0,"recompute":"none","recompute_layers":[],)"
            R"("sp":false,"dtype":"bf16","stages":[{"gpu":"v100-16gb","devices":[0,1],"dp":1,"tp":2,"layers":9,)"
            R"("layer_choices":[{"tp":2,"data_parallel":"sdp","recompute":"none","tp_order":"consecutive",)"
            R"("overlap_tp":false})"
            R"(,{"tp":1,"data_parallel":"dp","recompute":"none","tp_order":"consecutive","overlap_tp":false})"
            R"(,{"tp":1,"data_parallel":"dp","recompute":"none","tp_order":"consecutive","overlap_tp":false})"
            R"(,{"tp":1,"data_parallel":"dp","recompute":"none","tp_order":"consecutive","overlap_tp":false})"
            R"(,{"tp":1,"data_parallel":"dp","recompute":"none","tp_order":"consecutive","overlap_tp":false})"
            R"(,{"tp":1,"data_parallel":"dp","recompute":"none","tp_order":"consecutive","overlap_tp":false})"
            R"(,{"tp":1,"data_parallel":"dp","recompute":"none","tp_order":"consecutive","overlap_tp":false})"
            R"(,{"tp":1,"data_parallel":"dp","recompute":"none","tp_order":"consecutive","overlap_tp":false})"
            R"(,{"tp":1,"data_parallel":"dp","recompute":"none","tp_order":"consecutive","overlap_tp":false}]},)"
            R"({"gpu":"t4","devices":[12],"dp":1,"tp":1,"layers":1}]})");
  // A hand-written file: only the required fields; omitted layer fields take their defaults; plan files load too.
  const std::string path = ::testing::TempDir() + "/strata_stage_plan_test.json";
  {
    std::ofstream f(path);
    f << R"({"best": {"strategy": {"gbs": 8, "stages": [{"gpu": "v100", "dp": 1, "tp": 2, "layers": 9,
             "layer_choices": [{"data_parallel": "sdp"}, {"tp": 1}, {}, {}, {}, {}, {}, {}, {}]},
             {"devices": [12], "dp": 1, "tp": 1, "layers": 1}]}}})";
  }
  const auto loaded = complete_strategy(load_strategy_file(path), m, c);
  std::remove(path.c_str());
  ASSERT_EQ(loaded.stages.size(), 2u);
  EXPECT_EQ(loaded.stages[0].layer_choices[0], (LayerChoice{2, LayerDataParallel::sdp}));
  EXPECT_EQ(loaded.stages[0].layer_choices[2], (LayerChoice{2}));  // tp omitted = the stage's tp
  EXPECT_EQ(loaded.stages[1].gpu, "t4");
}

TEST(CostStrategyStages, UniformStageViewMatchesPlacementAndSplit) {
  const auto m = model::zoo_model("small-gpt");
  const auto c = cost_test::cluster(kMixed);
  for (const char* text : {"dp=2,tp=2,pp=4,gbs=32,v=2,split=2+1+1+1+1+1+1+2,place=15+14+13+12+11+10+9+8+7+6+5+4+3+2+1+0",
                           "tp=4,pp=2,gbs=12,mbs=3", "dp=16,gbs=32,recompute=full,rlayers=3"}) {
    const auto s = completed(text, m, c);
    const auto views = stage_views(s, c);
    ASSERT_EQ(static_cast<int>(views.size()), s.pp) << text;
    const auto bounds = chunk_boundaries(s);
    for (int st = 0; st < s.pp; ++st) {
      const auto& v = views[st];
      EXPECT_EQ(v.dp, s.dp);
      EXPECT_EQ(v.tp, s.tp);
      EXPECT_EQ(v.micro_batches, s.num_micro_batches());
      for (int r = 0; r < s.dp; ++r)
        for (int t = 0; t < s.tp; ++t) EXPECT_EQ(v.device(r, t), s.device(st, r, t)) << text;
      ASSERT_EQ(static_cast<int>(v.chunks.size()), s.virtual_stages);
      int held = 0;
      for (int k = 0; k < s.virtual_stages; ++k) {
        const int ch = st + k * s.pp;  // chunk c lives on stage c mod pp
        EXPECT_EQ(v.chunks[k].index, ch);
        EXPECT_EQ(v.chunks[k].first_layer, bounds[ch]);
        EXPECT_EQ(v.chunks[k].num_layers, s.split[ch]);
        held += s.split[ch];
      }
      EXPECT_EQ(v.num_layers, held);
      EXPECT_EQ(v.recompute_layers, s.recompute_layers.empty() ? -1 : s.recompute_layers[st]);
      const int type = c.devices[v.devices[0]].gpu_type;
      bool one = true;
      for (int d : v.devices) one = one && c.devices[d].gpu_type == type;
      EXPECT_EQ(v.gpu_type, one ? type : -1);
    }
  }
}

TEST(CostStrategyStages, PerStageViewAndMicroBatchRule) {
  const auto m = model::zoo_model("small-gpt");
  const auto c = cost_test::cluster(kMixed);
  const auto s = completed("mbs=2,gbs=16,stages=v100:dp2:tp1:6/t4:dp1:tp4:4", m, c);
  const auto views = stage_views(s, c);
  ASSERT_EQ(views.size(), 2u);
  // Micro-batches are dealt round-robin to a stage's replicas: each runs gbs/(dp_i·mbs) of them.
  EXPECT_EQ(views[0].micro_batches, 4);
  EXPECT_EQ(views[1].micro_batches, 8);
  EXPECT_EQ(views[1].device(0, 3), 15);
  EXPECT_EQ(views[1].chunks.size(), 1u);
  EXPECT_EQ(views[1].chunks[0].first_layer, 6);
  EXPECT_EQ(views[1].chunks[0].num_layers, 4);
  EXPECT_EQ(views[0].gpu_type, 0);
  EXPECT_EQ(views[1].gpu_type, 1);
  EXPECT_EQ(chunk_boundaries(s), (std::vector<int>{0, 6, 10}));
}

TEST(CostStrategyStages, AllAlikeStagesCollapseToUniform) {
  const auto m = model::zoo_model("small-gpt");
  const auto c = cost_test::cluster(kMixed);
  for (const char* text : {"dp=2,tp=2,pp=4,gbs=16,split=2+3+3+2,place=15+14+13+12+11+10+9+8+7+6+5+4+3+2+1+0",
                           "dp=4,tp=4,gbs=8,zero=3", "tp=2,pp=2,gbs=8,recompute=full,rlayers=1+2"}) {
    const auto u = completed(text, m, c);
    const auto per_stage = to_per_stage(u, c);
    EXPECT_FALSE(is_uniform(per_stage));
    EXPECT_EQ(static_cast<int>(per_stage.stages.size()), u.pp);
    const auto back = collapse_to_uniform(per_stage, c);
    ASSERT_TRUE(back.has_value()) << text;
    EXPECT_EQ(*back, u) << text;
    EXPECT_EQ(complete_strategy(per_stage, m, c), u) << text;  // complete_strategy collapses
    EXPECT_EQ(complete_strategy(parse_strategy(to_cli_string(per_stage)), m, c), u) << to_cli_string(per_stage);
  }
  // Written by hand: stages alike over all 16 devices → the uniform strategy with that placement and split.
  const auto hand = completed("gbs=8,stages=v100:dp2:tp2:3/v100:dp2:tp2:3/v100:dp2:tp2:2/t4:dp2:tp2:2", m, c);
  EXPECT_TRUE(is_uniform(hand));
  EXPECT_EQ(to_cli_string(hand),
            "dp=2,tp=2,pp=4,mbs=1,gbs=8,v=1,schedule=1f1b,zero=0,recompute=none,sp=off,dtype=bf16,split=3+3+2+2");
  // Layer choices equal to the stage's default are dropped, so these stages collapse too.
  const auto defaults = completed("gbs=8,zero=3,stages=0+1+2+3+4+5+6+7:dp4:tp2:5/8+9+10+11+12+13+14+15:dp4:tp2:5,"
                                  "layers=tp2.sdp*5/-",
                                  m, c);
  EXPECT_TRUE(is_uniform(defaults));
  // Not alike: different (dp, tp), layer choices, or idle devices.
  for (const char* text : {"gbs=8,stages=v100:dp2:tp2:5/v100:dp1:tp4:5",
                           "gbs=8,stages=v100:dp4:tp2:5/8+9+10+11+12+13+14+15:dp4:tp2:5,layers=tp1*5/-",
                           "gbs=8,stages=v100:dp2:tp2:5/v100:dp2:tp2:5"}) {
    const auto s = completed(text, m, c);
    EXPECT_FALSE(is_uniform(s)) << text;
    EXPECT_FALSE(collapse_to_uniform(s, c).has_value()) << text;
    expect_round_trips(s, m, c);
  }
  // Interleaved strategies have no per-stage form.
  const auto inter = completed("dp=2,tp=2,pp=4,v=2,gbs=32,split=2+1+1+1+1+1+1+2", m, c);
  EXPECT_NE(error_of([&] { to_per_stage(inter, c); }).find("stages need v = 1"), std::string::npos);
}

TEST(CostStrategyStages, ConsumersRaiseOneClearError) {
  const auto m = model::zoo_model("small-gpt");
  const auto c = cost_test::cluster(kMixed);
  const auto differ = completed("gbs=8,stages=v100:dp2:tp2:5/t4:dp1:tp4:5", m, c);
  // Costing them is issue 14's cost/per_stage; the pipeline program (simulator, executor) still refuses them.
  EXPECT_GT(estimate(m, c, differ).iteration_time_s, 0);
  EXPECT_EQ(error_of([&] { require_uniform(differ, "simulating"); }),
            "strategy: per-stage (dp, tp) differs between stages: simulating such strategies is not supported yet "
            "(`strata estimate` costs them and `strata plan --per-stage` searches them)");
  const auto layered = completed("gbs=8,stages=v100:dp2:tp2:5/t4:dp2:tp2:5,layers=tp1*5/-", m, c);
  EXPECT_NE(error_of([&] { (void)estimate(m, c, layered); }).find("per-layer choices (layers=): costing them is not "
                                                                  "supported yet"),
            std::string::npos);
  const auto idle = completed("gbs=8,stages=v100:dp2:tp2:5/v100:dp2:tp2:5", m, c);
  EXPECT_NE(error_of([&] { require_uniform(idle, "simulating"); }).find("leave the rest of the cluster idle: simulating"),
            std::string::npos);
  EXPECT_EQ(error_of([&] { require_uniform(completed("dp=16,gbs=16", m, c)); }), "");
}

TEST(CostStrategyStages, EveryRuleHasAFailingCase) {
  const auto m = model::zoo_model("small-gpt");  // 8 heads, 10 chain entries
  const auto c = cost_test::cluster(kMixed);
  const auto check = [&](const std::string& text, const std::string& field, const std::string& rule) {
    const auto msg = error_of([&] { completed(text, m, c); });
    EXPECT_NE(msg.find(field + ": rule '" + rule + "'"), std::string::npos) << text << " -> " << msg;
  };
  const std::string two = "stages=v100:dp2:tp2:5/t4:dp1:tp4:5";
  check("dp=2,gbs=8," + two, "dp", "stages exclude dp, tp, split and place");
  check("tp=2,gbs=8," + two, "tp", "stages exclude dp, tp, split and place");
  check("split=5+5,gbs=8," + two, "split", "stages exclude dp, tp, split and place");
  check("place=0+1,gbs=8," + two, "place", "stages exclude dp, tp, split and place");
  check("pp=3,gbs=8," + two, "pp", "pp = number of stages");
  check("v=2,gbs=8," + two, "v", "stages need v = 1");
  check("schedule=interleaved,gbs=8," + two, "schedule", "stages need v = 1");
  check("gbs=8,stages=a100:dp1:tp1:10", "stages[0].gpu", "GPU type in the cluster");
  check("gbs=8,stages=v100@0+1+12+13:dp2:tp2:10", "stages[0].devices", "stage devices have the named GPU type");
  check("gbs=8,stages=0+1+16+2:dp2:tp2:10", "stages[0].devices", "stage devices exist");
  check("gbs=8,stages=0+1+2:dp2:tp2:10", "stages[0].devices", "stage has dp·tp devices");
  check("gbs=8,stages=0+1:dp2:tp1:5/1+2:dp2:tp1:5", "stages[1].devices", "no device used twice");
  check("gbs=8,stages=0+0:dp2:tp1:10", "stages[0].devices", "no device used twice");
  check("gbs=8,stages=12+13:dp2:tp1:5/t4:dp1:tp4:5", "stages[1].gpu", "enough free devices of the GPU type");
  check("gbs=8,stages=v100:dp2:tp2:5/t4:dp1:tp4:4", "stages[].layers", "stage layers sum to the chain length");
  check("gbs=6,mbs=1,stages=v100:dp2:tp2:5/t4:dp4:tp1:5", "stages[1].dp", "gbs divisible by each stage's dp·mbs");
  check("gbs=8,mbs=3,stages=v100:dp1:tp2:5/t4:dp1:tp4:5", "stages[0].dp", "gbs divisible by each stage's dp·mbs");
  check("gbs=8,stages=v100:dp1:tp3:5/t4:dp1:tp4:5", "stages[0].tp", "tp divides heads");
  check("gbs=8," + two + ",layers=tp1*4/-", "stages[0].layer_choices", "one layer choice per layer of the stage");
  check("gbs=12,stages=v100:dp3:tp1:5/t4:dp1:tp4:5,layers=tp2*5/-", "stages[0].layer_choices[0].tp",
        "layer tp divides the stage group");
  check("gbs=8," + two + ",layers=tp2*4+tp4.strided/-", "stages[0].layer_choices[4].tp_order",
        "strided tp needs 1 < tp < stage group");
  check("gbs=8," + two + ",layers=tp1.overlap*5/-", "stages[0].layer_choices[0].overlap_tp",
        "overlapped TP needs tp > 1");
  check("gbs=8,recompute=full,rlayers=1+1," + two + ",layers=tp2*5/-", "stages[0].layer_choices",
        "rlayers and layer choices exclusive");
  const auto plain = [&](const std::string& text, const std::string& rule) {
    const auto msg = error_of([&] { completed(text, m, c); });
    EXPECT_NE(msg.find("rule '" + rule + "'"), std::string::npos) << text << " -> " << msg;
  };
  plain(two, "gbs given");
  plain("gbs=8,recompute=full,rlayers=1," + two, "rlayers has pp entries");
  plain("gbs=8,rlayers=1+1," + two, "rlayers needs recompute");
  plain("gbs=8,recompute=full,rlayers=1+6," + two, "rlayers <= layers of the stage");
  // Ambiguous GPU name: two a100 types in one cluster.
  const auto two_a100 = cost_test::cluster("dgx-a100:1+p4d.24xlarge:1");
  const auto amb = error_of([&] { complete_strategy(parse_strategy("gbs=8,stages=a100:dp1:tp1:10"), m, two_a100); });
  EXPECT_NE(amb.find("names more than one GPU type"), std::string::npos) << amb;
  EXPECT_EQ(complete_strategy(parse_strategy("gbs=8,stages=a100-40gb:dp1:tp1:10"), m, two_a100).stages[0].devices,
            (std::vector<int>{8}));
}

TEST(CostStrategyStages, LayerTpMustSuitTheLayer) {
  // Heads bound the tp of blocks (not of the embedding or head): the stage's tp applies to every layer without a
  // choice of its own; per-layer choices are checked layer by layer.
  const auto m = model::zoo_model("small-gpt");
  const auto c = cost_test::cluster("dgx-a100:2");
  const auto msg = error_of([&] { completed("gbs=8,stages=a100:dp1:tp16:10", m, c); });
  EXPECT_NE(msg.find("stages[0].tp: rule 'tp divides heads'"), std::string::npos) << msg;
  const auto layer = error_of([&] { completed("gbs=8,stages=a100:dp1:tp16:10,layers=tp8+tp16*9", m, c); });
  EXPECT_NE(layer.find("stages[0].layer_choices[1].tp: rule 'tp divides heads'"), std::string::npos) << layer;
  EXPECT_NO_THROW(completed("gbs=8,stages=a100:dp1:tp16:10,layers=tp16+tp8*8+tp16", m, c));
}

TEST(CostStrategyStages, SyntaxErrorsNameTheField) {
  const auto has = [](const std::string& text, const std::string& part) {
    const auto msg = error_of([&] { parse_strategy(text); });
    EXPECT_NE(msg.find(part), std::string::npos) << text << " -> " << msg;
  };
  has("stages=a100:dp2:tp1", "--strategy: stages[0]: 'a100:dp2:tp1' is not DEVICES:dpN:tpN:LAYERS");
  has("stages=a100:dp2:tp1:4/a100:dpx:tp1:4", "--strategy: stages[1].dp: 'x' is not an integer");
  has("stages=a100:dp2:dp1:4", "stages[0].dp: given twice");
  has("stages=a100:dp0:tp1:4", "stages[0].dp: 0 is out of range");
  has("stages=@1:dp1:tp1:4", "is not GPU@DEVICES");
  has("stages=a100@1+x:dp1:tp1:4", "stages[0].devices");
  has("stages=:dp1:tp1:4", "empty device set");
  has("layers=tp1", "layers: needs stages=");
  has("stages=a100:dp1:tp1:4,layers=tp1/tp1", "layers: 2 '/'-separated groups for 1 stages");
  has("stages=a100:dp1:tp1:4,layers=tp1.sdp.dp", "layers[0]: data parallel given twice");
  has("stages=a100:dp1:tp1:4,layers=tp1.bogus", "unknown layer field 'bogus'");
  has("stages=a100:dp1:tp1:4,layers=tp1*0", "layers[0] repeat: 0 is out of range");
  has("stages=a100:dp1:tp1:4,layers=tp1*9999999", "out of range");
  has("stages=a100:dp1:tp1:4,layers=", "empty layer choice");
  const auto json_err = [](const std::string& text, const std::string& part) {
    const auto msg = error_of([&] { strategy_from_json(nlohmann::json::parse(text), "s.json"); });
    EXPECT_NE(msg.find(part), std::string::npos) << text << " -> " << msg;
  };
  json_err(R"({"stages": []})", "s.json: stages: needs at least one stage");
  json_err(R"({"stages": [{"dp": 1, "tp": 1, "layers": 2}]})", "s.json: stages[0]: a stage needs \"gpu\" or \"devices\"");
  json_err(R"({"stages": [{"gpu": "t4", "dp": 1, "layers": 2}]})", "s.json: stages[0].tp: required");
  json_err(R"({"stages": [{"gpu": "t4", "dp": 1, "tp": 1, "layers": 2, "x": 1}]})", "s.json: stages[0].x: unknown field");
  json_err(R"({"stages": [{"gpu": "t4", "dp": 1, "tp": 1, "layers": 1, "layer_choices": [{"data_parallel": "zero"}]}]})",
           "s.json: stages[0].layer_choices[0].data_parallel");
  json_err(R"({"stages": [{"gpu": "t4", "dp": 1, "tp": 1, "layers": 1, "layer_choices": [{"tp_order": "x"}]}]})",
           "stages[0].layer_choices[0].tp_order");
}

TEST(CostStrategyStages, RandomStageTextsOnlyEverThrowInputError) {
  // Random stage/layer soups through parse → complete → estimate: InputError or success, nothing else.
  const auto m = model::zoo_model("small-gpt");
  const auto c = cost_test::cluster(kMixed);
  const std::vector<std::string> devsets = {"v100", "t4", "a100", "0+1", "12+13+14+15", "v100@4+5", "t4@0", "", "99",
                                            "0+1+2+3+4+5+6+7"};
  const std::vector<std::string> dps = {"dp1", "dp1", "dp2", "dp4"}, tps = {"tp1", "tp1", "tp2", "tp4", "tp3"};
  const std::vector<std::string> junk = {"x", "dp", "0", "", "dp0", "tp1", "8"};
  const std::vector<std::string> choices = {"tp1", "tp2", "tp4", "tp2.sdp", "tp1.full", "tp2.strided", "tp4.overlap",
                                            "tp1*3", "tp2*5", "-", "", "tp8", "sdp", "tp2.selective.overlap*2"};
  std::mt19937 rng(7);
  int ok = 0, per_stage = 0;
  for (int i = 0; i < 3000; ++i) {
    std::string text = rng() % 8 ? "gbs=16,stages=" : "stages=";
    const int n = 1 + static_cast<int>(rng() % 3);
    int left = 10;  // chain entries of small-gpt, mostly split exactly over the stages
    for (int j = 0; j < n; ++j) {
      if (j) text += '/';
      const int layers = j + 1 == n ? left : 1 + static_cast<int>(rng() % std::max(1, left - (n - j - 1)));
      left -= layers;
      std::vector<std::string> f = {dps[rng() % dps.size()], tps[rng() % tps.size()],
                                    std::to_string(rng() % 10 ? layers : 1 + rng() % 10)};
      if (rng() % 10 == 0) f[rng() % 3] = junk[rng() % junk.size()];
      std::shuffle(f.begin(), f.end(), rng);
      text += devsets[rng() % devsets.size()] + ":" + f[0] + ":" + f[1] + ":" + f[2];
    }
    if (rng() % 2) {
      text += ",layers=";
      for (int j = 0; j < n; ++j) {
        if (j) text += '/';
        const int items = 1 + static_cast<int>(rng() % 3);
        for (int k = 0; k < items; ++k) text += (k ? "+" : "") + choices[rng() % choices.size()];
      }
    }
    try {
      const auto s = complete_strategy(parse_strategy(text), m, c);
      (void)stage_views(s, c);
      EXPECT_EQ(complete_strategy(parse_strategy(to_cli_string(s)), m, c), s) << text;
      if (is_uniform(s)) (void)estimate(m, c, s);
      else ++per_stage;
      ++ok;
    } catch (const core::InputError&) {
    } catch (const std::exception& e) {
      ADD_FAILURE() << text << " threw a non-InputError: " << e.what();
    }
  }
  EXPECT_GT(per_stage, 0);  // some random per-stage strategies are valid
  EXPECT_GE(ok, per_stage);
}

TEST(CostStrategyStages, DocExamplesAreValid) {
  // docs/strategy.md "Per-stage strategies": the CLI examples complete as described there.
  const auto first = completed("mbs=2,gbs=16,stages=v100:dp2:tp1:6/t4:dp1:tp4:4", model::zoo_model("small-gpt"),
                               cost_test::cluster(kMixed));
  EXPECT_EQ(devices_used(first), 6);
  const auto c = cost_test::cluster("p4d.24xlarge:1+p3.8xlarge:1");
  const auto s = completed("gbs=64,stages=a100@0+1+2+3:dp4:tp1:13/v100:dp1:tp4:13,"
                           "layers=-/tp4*3+tp2.sdp.full*9+tp4.overlap",
                           model::zoo_model("gpt2-medium"), c);
  ASSERT_EQ(s.stages.size(), 2u);
  EXPECT_EQ(s.stages[0].gpu, "a100-40gb");
  EXPECT_EQ(s.stages[1].devices, (std::vector<int>{8, 9, 10, 11}));
  ASSERT_EQ(s.stages[1].layer_choices.size(), 13u);
  EXPECT_EQ(s.stages[1].layer_choices[3], (LayerChoice{2, LayerDataParallel::sdp, model::Recompute::full}));
  EXPECT_TRUE(s.stages[1].layer_choices[12].overlap_tp);
}

TEST(CostStrategyStages, AttentionKeyInThePerStageForm) {
  // attention= is written in both forms; flash is checked on the devices the stages use only.
  const auto m = model::zoo_model("small-gpt");
  const auto c = cost_test::cluster("p4d.24xlarge:1+p3.8xlarge:1");  // a100-40gb 0..7, v100-16gb 8..11
  const auto s = completed("gbs=8,attention=flash,stages=a100:dp2:tp1:5/a100:dp1:tp2:5", m, c);
  EXPECT_NE(to_cli_string(s).find(",attention=flash,stages="), std::string::npos) << to_cli_string(s);
  EXPECT_EQ(to_json(s)["attention"], "flash");
  expect_round_trips(s, m, c);
  const auto msg = error_of([&] { completed("gbs=8,attention=flash,stages=a100:dp2:tp1:5/v100:dp1:tp2:5", m, c); });
  EXPECT_NE(msg.find("stages[1].devices: rule 'fused attention needs an sm80+ GPU and a 16-bit dtype'"), std::string::npos) << msg;
}
