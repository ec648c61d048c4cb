// tests/model/test_model_json: custom model files — both forms load (the examples/ files too), and every bad
// input gives one InputError line naming the file, the field and the problem.
#include <gtest/gtest.h>

#include <fstream>

#include "strata/core/error.hpp"
#include "strata/core/json.hpp"
#include "strata/model/model.hpp"

namespace strata::model {
namespace {

Model parse(const std::string& text) { return model_from_json(core::parse_json_text(text, "m.json"), "m.json"); }

// The one-line error of parsing `text`.
std::string error_of(const std::string& text) {
  try {
    parse(text);
  } catch (const core::InputError& e) {
    const std::string msg = e.what();
    EXPECT_EQ(msg.find('\n'), std::string::npos) << msg;
    return msg;
  }
  ADD_FAILURE() << "no error for " << text;
  return {};
}

const char* kConfig = R"({"layers": 2, "hidden": 64, "heads": 4, "vocab": 100, "seq": 16})";

TEST(ModelJson, TransformerConfigMatchesBuilder) {
  const Model m = parse(kConfig);
  EXPECT_EQ(m.name, "m");  // file stem
  EXPECT_EQ(m.num_blocks(), 2);
  EXPECT_EQ(m.layers.size(), 4u);
  const double h = 64;
  EXPECT_DOUBLE_EQ(total_params(m), 2 * (12 * h * h + 13 * h) + (100 + 16) * h + 2 * h);
}

TEST(ModelJson, ExamplesLoad) {
  const Model t = load_model_file(std::string(STRATA_SOURCE_DIR) + "/examples/model_custom_transformer.json");
  EXPECT_EQ(t.name, "my-gpt-1.3b");
  EXPECT_EQ(t.num_blocks(), 24);
  EXPECT_NEAR(total_params(t) / 1.3e9, 1.0, 0.05);
  const Model l = resolve_model(std::string(STRATA_SOURCE_DIR) + "/examples/model_custom_layers.json");
  EXPECT_EQ(l.name, "my-hybrid");
  EXPECT_EQ(l.num_blocks(), 8);
  EXPECT_EQ(l.layers.size(), 11u);
  EXPECT_EQ(l.layers[1].name, "wide.0");
  EXPECT_EQ(l.layers[5].name, "adapter");
  EXPECT_EQ(l.layers[6].kv_heads, 2);
  EXPECT_EQ(l.hidden, 1024);
  EXPECT_EQ(l.vocab, 32000);
}

TEST(ModelJson, LayerListKinds) {
  const Model m = parse(R"({"seq": 4, "layers": [
    {"kind": "patch_embedding", "hidden": 32, "patch": 4, "channels": 3, "seq": 5, "cls_token": true},
    {"kind": "encoder", "hidden": 32, "heads": 2, "seq": 5},
    {"kind": "decoder", "hidden": 32, "heads": 2, "encoder_seq": 5},
    {"kind": "conv", "in_channels": 3, "out_channels": 8, "height": 8, "width": 8, "stride": 2},
    {"kind": "generic", "params": 10, "fwd_flops_per_sample": 100},
    {"kind": "lm_head", "hidden": 32, "vocab": 10, "pooled": true, "bias": true}]})");
  ASSERT_EQ(m.layers.size(), 6u);
  EXPECT_EQ(m.layers[2].encoder_seq, 5);
  EXPECT_EQ(m.layers[3].conv.out_height, 4);
  EXPECT_TRUE(m.layers[3].bias);  // conv without BN defaults to a bias
  EXPECT_DOUBLE_EQ(m.layers[4].generic.bwd_flops_per_sample, 200);  // default 2x forward
  EXPECT_EQ(m.num_blocks(), 2);
}

TEST(ModelJson, MalformedJsonReportsLineAndColumn) {
  try {
    parse("{\n  \"layers\": 2,\n  \"hidden\": ,\n}");
    FAIL();
  } catch (const core::InputError& e) {
    EXPECT_EQ(std::string(e.what()).rfind("m.json:3:", 0), 0u) << e.what();
  }
}

TEST(ModelJson, BadInputErrors) {
  EXPECT_EQ(error_of(R"({"layers": 2, "hidden": 64, "heads": 5, "vocab": 100, "seq": 16})"),
            "m.json: heads: 5 heads do not divide hidden 64");
  EXPECT_EQ(error_of(R"({"layers": 2, "hidden": 64, "heads": 4, "kv_heads": 3, "vocab": 100, "seq": 16})"),
            "m.json: kv_heads: 3 kv heads do not divide 4 heads");
  EXPECT_EQ(error_of(R"({"layers": 0, "hidden": 64, "heads": 4, "vocab": 100, "seq": 16})"),
            "m.json: layers: must be > 0, got 0");
  EXPECT_EQ(error_of(R"({"layers": 2, "hidden": -64, "heads": 4, "vocab": 100, "seq": 16})"),
            "m.json: hidden: must be > 0, got -64");
  EXPECT_EQ(error_of(R"({"layers": 2, "hidden": 64, "heads": 4, "vocab": 100})"),
            "m.json: seq: missing required field");
  EXPECT_EQ(error_of(R"({"layers": 2, "hidden": 64, "heads": 4, "vocab": 100, "seq": 16, "activation": "tanh"})"),
            "m.json: activation: unknown activation 'tanh' (valid: gelu, swiglu, relu)");
  EXPECT_EQ(error_of(R"({"layers": 2, "hidden": 64, "heads": 4, "vocab": 100, "seq": 16, "norm": "bn"})"),
            "m.json: norm: unknown norm 'bn' (valid: layernorm, rmsnorm, none)");
  EXPECT_EQ(error_of(R"({"layers": 2, "hidden": 64, "heads": 4, "vocab": 100, "seq": 16, "activation": "swiglu"})"),
            "m.json: ffn: required with activation 'swiglu' (e.g. LLaMA's 8h/3 rounded up)");
  EXPECT_EQ(error_of(R"({"layers": 2, "hidden": 64, "heads": 4, "vocab": 100, "seq": 16, "experts": 4, "top_k": 5})"),
            "m.json: top_k: must be in 1..experts (4), got 5");
  EXPECT_EQ(error_of(R"({"layers": 2.5, "hidden": 64, "heads": 4, "vocab": 100, "seq": 16})"),
            "m.json: layers: expected an integer, got 2.5");
  EXPECT_EQ(error_of(R"({"layers": 2000000, "hidden": 64, "heads": 4, "vocab": 100, "seq": 16})"),
            "m.json: layers: must be <= 100000, got 2000000");
  EXPECT_NE(error_of(R"({"layers": 2, "hiden": 64, "heads": 4, "vocab": 100, "seq": 16})")
                .find("m.json: hiden: unknown field (valid here: name, family"),
            std::string::npos);
  EXPECT_EQ(error_of(R"({"layers": "many"})"),
            "m.json: layers: expected a number (transformer config) or an array (layer list), got string");
  EXPECT_EQ(error_of(R"([1, 2])"), "m.json: expected an object, got array");
  EXPECT_EQ(error_of(R"({"seq": 8})"), "m.json: layers: missing required field");
}

TEST(ModelJson, BadLayerListErrors) {
  EXPECT_EQ(error_of(R"({"seq": 8, "layers": []})"), "m.json: layers: must list at least one layer");
  EXPECT_EQ(error_of(R"({"seq": 8, "layers": [{"kind": "lstm"}]})"),
            "m.json: layers[0].kind: unknown layer kind 'lstm' (valid: embedding, transformer, lm_head, encoder, "
            "decoder, patch_embedding, conv, generic)");
  EXPECT_EQ(error_of(R"({"seq": 8, "layers": [{"kind": "transformer", "hidden": 30, "heads": 4}]})"),
            "m.json: layers[0].heads: 4 heads do not divide hidden 30");
  EXPECT_EQ(error_of(R"({"seq": 8, "layers": [{"kind": "transformer", "hidden": 32, "heads": 0}]})"),
            "m.json: layers[0].heads: must be > 0, got 0");
  EXPECT_EQ(error_of(R"({"seq": 8, "layers": [{"kind": "embedding", "hidden": 32, "vocab": 10, "heads": 2}]})")
                .rfind("m.json: layers[0].heads: unknown field", 0),
            0u);
  EXPECT_EQ(error_of(R"({"seq": 8, "layers": [{"kind": "lm_head", "hidden": 32, "vocab": 10, "tied_embeddings": true}]})"),
            "m.json: layers[0].tied_embeddings: needs an earlier embedding layer with the same vocab and hidden to "
            "tie to");
  EXPECT_EQ(error_of(R"({"seq": 8, "layers": [{"kind": "transformer", "hidden": 32, "heads": 2, "repeat": 1000000}]})"),
            "m.json: layers[0].repeat: the model would exceed 100000 layers");
  EXPECT_EQ(error_of(R"({"seq": 8, "layers": [{"kind": "conv", "in_channels": 3, "out_channels": 8, "height": 8,
                          "width": 8, "bottleneck": true}]})"),
            "m.json: layers[0].mid_channels: required when bottleneck is true");
  EXPECT_EQ(error_of(R"({"seq": 8, "layers": [{"kind": "generic", "params": -1}]})"),
            "m.json: layers[0].params: must be >= 0, got -1");
  EXPECT_EQ(error_of(R"({"seq": 8, "layers": [{"kind": "generic", "activation_bytes_per_sample": 1,
                          "input_bytes_per_sample": 2}]})"),
            "m.json: layers[0].input_bytes_per_sample: must not exceed activation_bytes_per_sample (it is part of it)");
  EXPECT_EQ(error_of(R"({"layers": [{"kind": "generic"}]})"), "m.json: seq: missing required field");
}

TEST(ModelJson, ResolveModel) {
  EXPECT_EQ(resolve_model("tiny-gpt").name, "tiny-gpt");
  try {
    resolve_model("nonexistent-model");
    FAIL();
  } catch (const core::InputError& e) {
    EXPECT_NE(std::string(e.what()).find("or the path of a model JSON file"), std::string::npos);
  }
  try {
    resolve_model("/nonexistent/dir/m.json");
    FAIL();
  } catch (const core::InputError& e) {
    EXPECT_EQ(std::string(e.what()), "/nonexistent/dir/m.json: cannot open file");
  }
}

}  // namespace
}  // namespace strata::model
