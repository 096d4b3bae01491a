// The golden comparisons fail where outputs differ, and say where.
#include "golden_compare.h"

#include <gtest/gtest.h>

namespace looptrace::testing {
namespace {

using nlohmann::json;

TEST(GoldenCompare, EqualValuesInAnotherLayoutAreEqual) {
  EXPECT_EQ(CompareJson(R"({"a":1,"b":[1,2.5]})", "{ \"b\": [1, 2.50],\n \"a\": 1.0 }"), std::nullopt);
  EXPECT_EQ(CompareJsonLines("{\"x\":1}\n{\"y\":2}\n", "{\"x\": 1}\n{\"y\": 2}\n"), std::nullopt);
  EXPECT_EQ(CompareText("a\nb\n", "a\nb\n"), std::nullopt);
}

TEST(GoldenCompare, NamesThePathThatDiffers) {
  EXPECT_EQ(FirstJsonDifference(json::parse(R"({"tree":[{"cost_ns":5}]})"), json::parse(R"({"tree":[{"cost_ns":6}]})")),
            "/tree/0/cost_ns: got 5, want 6");
  EXPECT_EQ(FirstJsonDifference(json::parse(R"({"a":1})"), json::parse(R"({"a":1,"b":2})")), "/b: missing, want 2");
  EXPECT_EQ(FirstJsonDifference(json::parse(R"({"a":1,"c/d":2})"), json::parse(R"({"a":1})")),
            "/c~1d: not expected, got 2");
  EXPECT_EQ(FirstJsonDifference(json::parse("[1,2]"), json::parse("[1,2,3]")), "/: 2 elements, want 3; the next is 3");
  EXPECT_EQ(FirstJsonDifference(json::parse(R"({"a":"1"})"), json::parse(R"({"a":1})")), "/a: got \"1\", want 1");
}

TEST(GoldenCompare, JsonLinesNameTheRecordAndCountTheOthers) {
  const std::string want = "{\"type\":\"session\",\"pid\":1}\n{\"type\":\"message\",\"cost_ns\":5}\n";
  EXPECT_EQ(CompareJsonLines("{\"type\":\"session\",\"pid\":1}\n{\"type\":\"message\",\"cost_ns\":7}\n", want),
            "line 2 (\"message\"), /cost_ns: got 7, want 5 (1 of 2 lines differ)");
  EXPECT_EQ(CompareJsonLines("{\"type\":\"session\",\"pid\":1}\n", want),
            "line 2: missing, want {\"type\":\"message\",\"cost_ns\":5} (1 of 2 lines differ)");
  auto broken = CompareJsonLines("{\"type\":\n", want);
  ASSERT_TRUE(broken.has_value());
  EXPECT_TRUE(broken->starts_with("line 1 of the output is not JSON")) << *broken;
}

TEST(GoldenCompare, TextNamesTheFirstDifferingLine) {
  EXPECT_EQ(CompareText("a\nb\nc\n", "a\nB\nc\n"), "line 2 differs\n  got:  b\n  want: B");
  EXPECT_EQ(CompareText("a\n", "a\nb\n"), "line 2 differs\n  got:  (end of output)\n  want: b");
  EXPECT_EQ(CompareText("a\n", "a"), "the texts differ only in their line ends");
}

TEST(GoldenCompare, ReadableJsonKeepsTheValueAndPlainArraysOnOneLine) {
  const json value = json::parse(R"({"b":[1,2,3],"a":{"x":[{"y":"z"}],"e":[]},"s":"<\u00e9>"})");
  const std::string text = ReadableJson(value);
  EXPECT_EQ(json::parse(text), value);
  EXPECT_NE(text.find("\"b\": [1,2,3]"), std::string::npos) << text;
  EXPECT_NE(text.find("\n  \"x\": [\n   {\n    \"y\": \"z\"\n   }\n  ]"), std::string::npos) << text;
}

}  // namespace
}  // namespace looptrace::testing
