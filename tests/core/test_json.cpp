// Tests for core/json: line:column on malformed JSON, field errors naming file and field path.
#include <gtest/gtest.h>

#include "strata/core/error.hpp"
#include "strata/core/json.hpp"
#include "strata/core/text.hpp"

using namespace strata::core;

namespace {
std::string error_of(auto&& fn) {
  try {
    fn();
  } catch (const InputError& e) {
    return e.what();
  }
  return "";
}
}  // namespace

TEST(CoreJson, MalformedJsonReportsLineAndColumn) {
  const std::string text = "{\n  \"a\": 1,\n  \"b\": ]\n}";
  const auto msg = error_of([&] { parse_json_text(text, "x.json"); });
  EXPECT_NE(msg.find("x.json:3:8:"), std::string::npos) << msg;
}

TEST(CoreJson, MissingFieldNamesPath) {
  const Json j = Json::parse(R"({"layers": [{"hidden": 4}]})");
  JsonWhere w{"m.json", ""};
  const auto msg = error_of([&] { get_positive_int(j["layers"][0], "heads", w.field("layers").index(0)); });
  EXPECT_EQ(msg, "m.json: layers[0].heads: missing required field");
}

TEST(CoreJson, RangeAndTypeErrors) {
  const Json j = Json::parse(R"({"n": -3, "s": 5, "f": 2.5})");
  JsonWhere w{"f.json", ""};
  EXPECT_EQ(error_of([&] { get_positive_int(j, "n", w); }), "f.json: n: must be > 0, got -3");
  EXPECT_EQ(error_of([&] { get_string(j, "s", w); }), "f.json: s: expected a string, got number");
  EXPECT_EQ(error_of([&] { get_int(j, "f", w); }), "f.json: f: expected an integer, got 2.5");
  EXPECT_EQ(get_int(j, "n", w), -3);
  EXPECT_FALSE(opt_positive_number(j, "missing", w).has_value());
}

TEST(CoreJson, MissingFileIsInputError) {
  EXPECT_EQ(error_of([] { load_json_file("/nonexistent/strata.json"); }), "/nonexistent/strata.json: cannot open file");
}

TEST(CoreText, Formats) {
  EXPECT_EQ(format_bytes(80.0 * 1024 * 1024 * 1024), "80.0 GiB");
  EXPECT_EQ(format_count(174.6e9), "174.6 B");
  EXPECT_EQ(format_seconds(0.0123), "12.3 ms");
  EXPECT_EQ(format_flops(312e12), "312 TFLOP/s");
  const auto t = render_table({"a", "bb"}, {{"x", "1.5"}, {"yyy", "10"}});
  EXPECT_EQ(t, "a    bb\n--------\nx    1.5\nyyy   10\n");
}
