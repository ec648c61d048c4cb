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

TEST(CoreJson, DuplicateKeyNamesLineColumnAndKey) {
  const std::string text = "{\n  \"a\": 1,\n  \"b\": {\"x\": 1, \"y\": [{\"x\": 2}], \"x\": 3}\n}";
  EXPECT_EQ(error_of([&] { parse_json_text(text, "d.json"); }), "d.json:3:34: duplicate key 'x' in one object (each key may appear once)");
  // The same key in sibling or nested objects is fine; escaped spellings of one key are the same key.
  EXPECT_NO_THROW(parse_json_text(R"({"x": {"x": 1}, "y": [{"x": 1}, {"x": 2}]})", "ok.json"));
  EXPECT_NE(error_of([] { parse_json_text(R"({"k\u0041": 1, "kA": 2})", "e.json"); }).find("duplicate key 'kA'"),
            std::string::npos);
  // A string value that looks like a key is not one.
  EXPECT_NO_THROW(parse_json_text(R"({"a": "a", "b": ["a", "a"]})", "v.json"));
}

TEST(CoreJson, DirectoryIsNotAFile) {
  EXPECT_EQ(error_of([] { load_json_file("/tmp"); }), "/tmp: is a directory, not a file");
}

TEST(CoreJson, DumpKeepsScalarArraysOnOneLine) {
  OrderedJson j;
  j["placement"] = {0, 1, 2, 3};
  j["nested"] = {{"split", {4, 4}}, {"rows", OrderedJson::array({OrderedJson{{"a", 1}}})}};
  j["empty"] = OrderedJson::array();
  const std::string out = dump_json(j);
  EXPECT_EQ(out,
            "{\n  \"placement\": [0,1,2,3],\n  \"nested\": {\n    \"split\": [4,4],\n    \"rows\": [\n      {\n"
            "        \"a\": 1\n      }\n    ]\n  },\n  \"empty\": []\n}");
  EXPECT_EQ(OrderedJson::parse(out), j);  // same document as dump(2)
}

TEST(CoreText, NamesWithControlCharactersOrHugeAreRejected) {
  EXPECT_EQ(printable("a\x1b[31mb\n"), "a\\x1b[31mb\\x0a");
  EXPECT_NO_THROW(check_name("gpt3-175b", "--model"));
  EXPECT_EQ(error_of([] { check_name("bad\tname", "m.json: name"); }),
            "m.json: name: name 'bad\\x09name' holds a control character");
  const std::string big(1 << 20, 'x');
  EXPECT_NE(error_of([&] { check_name(big, "m.json: name"); }).find("name of 1048576 bytes is too long (at most 256)"),
            std::string::npos);
}
