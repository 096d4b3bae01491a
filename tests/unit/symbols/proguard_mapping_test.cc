#include "looptrace/symbols/proguard_mapping.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include "symbols_test_util.h"

namespace looptrace::symbols {
namespace {

using ::testing::ElementsAre;
using ::testing::HasSubstr;

std::string SamplePath() { return std::string(LOOPTRACE_SOURCE_DIR) + "/tests/fixtures/mappings/r8_mapping.txt"; }

ProguardMapping LoadSample() {
  std::vector<std::string> warnings;
  auto mapping = ProguardMapping::Load(SamplePath(), &warnings);
  EXPECT_TRUE(mapping) << (mapping ? "" : mapping.error().message);
  EXPECT_THAT(warnings, ::testing::IsEmpty());
  return mapping ? std::move(*mapping) : ProguardMapping();
}

TEST(ProguardMappingTest, ReadsClassesMembersAndComments) {
  const ProguardMapping mapping = LoadSample();
  EXPECT_EQ(mapping.class_count(), 6u);
  EXPECT_EQ(mapping.method_count(), 21u);
  EXPECT_EQ(mapping.malformed_lines(), 0u);
  const ProguardClass* repository = mapping.FindClass("c.a.a.b");
  ASSERT_NE(repository, nullptr);
  EXPECT_EQ(repository->original_name, "com.example.app.data.Repository");
  EXPECT_EQ(repository->fields.at("a"), "cache");
  ASSERT_EQ(repository->methods.size(), 4u);
  const ProguardMethod& load = repository->methods[1];
  EXPECT_EQ(load.name, "load");
  EXPECT_EQ(load.return_type, "com.example.app.model.Frame");
  EXPECT_THAT(load.arguments, ElementsAre("java.lang.String"));
  EXPECT_EQ(load.obfuscated_start, 1u);
  EXPECT_EQ(load.obfuscated_end, 1u);
  EXPECT_EQ(load.original_start, 30u);
  EXPECT_EQ(load.original_end, 30u);
  EXPECT_EQ(load.Signature(), "com.example.app.model.Frame load(java.lang.String)");
  EXPECT_EQ(load.Descriptor(), "(Ljava.lang.String;)Lcom.example.app.model.Frame;");
}

TEST(ProguardMappingTest, DeobfuscatesClassNames) {
  const ProguardMapping mapping = LoadSample();
  EXPECT_EQ(mapping.DeobfuscateClass("c.a.a.b"), "com.example.app.data.Repository");
  EXPECT_EQ(mapping.DeobfuscateClass("c/a/a/c"), "com.example.app.model.Frame");
  EXPECT_EQ(mapping.DeobfuscateClass("c.a.a.c$a"), "com.example.app.model.Frame$Builder");
  EXPECT_EQ(mapping.DeobfuscateClass("c.a.a.c[][]"), "com.example.app.model.Frame[][]");
  EXPECT_EQ(mapping.DeobfuscateClass("com.example.app.MainActivity"), "com.example.app.MainActivity");
  EXPECT_EQ(mapping.DeobfuscateClass("x.y.Unknown"), "x.y.Unknown");
  EXPECT_EQ(mapping.DeobfuscateDescriptor("(Lc/a/a/c;[Lc/a/a/c;IJ)Lc.a.a.b;"),
            "(Lcom.example.app.model.Frame;[Lcom.example.app.model.Frame;IJ)"
            "Lcom.example.app.data.Repository;");
}

TEST(ProguardMappingTest, DeobfuscatesMethodsWithAndWithoutDescriptors) {
  const ProguardMapping mapping = LoadSample();
  // Overloads obfuscated to the same name: ambiguous without a descriptor.
  DeobfuscatedMethod any = mapping.DeobfuscateMethod("c.a.a.b", "a");
  EXPECT_TRUE(any.found);
  EXPECT_EQ(any.class_name, "com.example.app.data.Repository");
  EXPECT_EQ(any.method_name, "load");
  EXPECT_EQ(mapping.FindMethods("c.a.a.b", "a").size(), 2u);

  DeobfuscatedMethod two = mapping.DeobfuscateMethod("c.a.a.b", "a", "(Ljava/lang/String;I)Lc/a/a/c;");
  EXPECT_EQ(two.signature, "com.example.app.model.Frame load(java.lang.String,int)");
  EXPECT_FALSE(two.ambiguous);

  // Different names sharing one obfuscated name are ambiguous without a descriptor.
  DeobfuscatedMethod b = mapping.DeobfuscateMethod("com.example.app.MainActivity", "b");
  EXPECT_EQ(b.method_name, "dispatch");
  DeobfuscatedMethod render = mapping.DeobfuscateMethod("com.example.app.MainActivity", "a", "([Lc.a.a.c;)V");
  EXPECT_EQ(render.signature, "void render(com.example.app.model.Frame[])");

  DeobfuscatedMethod clear = mapping.DeobfuscateMethod("c.a.a.b", "b", "()V");
  EXPECT_EQ(clear.method_name, "clear");
  // Unknown method of a known class: the class is still de-obfuscated.
  DeobfuscatedMethod unknown = mapping.DeobfuscateMethod("c.a.a.b", "zz");
  EXPECT_TRUE(unknown.found);
  EXPECT_EQ(unknown.class_name, "com.example.app.data.Repository");
  EXPECT_EQ(unknown.method_name, "zz");
  EXPECT_FALSE(mapping.DeobfuscateMethod("q.q", "a").found);
}

TEST(ProguardMappingTest, LineNumbersSelectInlineChains) {
  const ProguardMapping mapping = LoadSample();
  // Line 4 of MainActivity.onCreate: MathUtils.square inlined into computeScore inlined
  // into onCreate (innermost first).
  auto chain = mapping.FindMethods("com.example.app.MainActivity", "onCreate", {}, 4);
  ASSERT_EQ(chain.size(), 3u);
  EXPECT_EQ(chain[0]->class_name, "com.example.app.util.MathUtils");
  EXPECT_EQ(chain[0]->name, "square");
  EXPECT_EQ(chain[0]->original_start, 7u);
  EXPECT_EQ(chain[1]->name, "computeScore");
  EXPECT_EQ(chain[2]->name, "onCreate");
  EXPECT_EQ(chain[2]->original_start, 23u);
  DeobfuscatedMethod outer =
      mapping.DeobfuscateMethod("com.example.app.MainActivity", "onCreate", "(Landroid/os/Bundle;)V", 4);
  EXPECT_EQ(outer.method_name, "onCreate");
  EXPECT_EQ(outer.class_name, "com.example.app.MainActivity");
  // Without a line, inlined members from other classes are not candidates.
  auto plain = mapping.FindMethods("com.example.app.MainActivity", "onCreate");
  ASSERT_FALSE(plain.empty());
  for (const ProguardMethod* method : plain) EXPECT_EQ(method->class_name, "com.example.app.MainActivity");
  auto ranged = mapping.FindMethods("com.example.app.MainActivity", "onCreate", {}, 5);
  ASSERT_EQ(ranged.size(), 1u);
  EXPECT_EQ(ranged[0]->original_start, 24u);
}

TEST(ProguardMappingTest, MalformedLinesWarnWithFileAndLine) {
  const std::string text =
      "    void orphan() -> a\n"         // 1: member before any class
      "com.example.A -> a.a:\n"          // 2
      "    void ok() -> a\n"             // 3
      "    x:y:void bad() -> b\n"        // 4: bad range
      "    void broken(int -> c\n"       // 5: unbalanced
      "    void noarrow()\n"             // 6
      "    5:3:void backwards() -> d\n"  // 7: range ends before start
      "com.example.B -> a.b\n"           // 8: class without ':'
      "com.example.C -> a.a:\n"          // 9: duplicate obfuscated name
      "    int field -> \n"              // 10: empty obfuscated name
      "\r\n"
      "com.example.D -> a.d:\r\n"           // 12
      "    1:2:void fine(int):3 -> a\r\n";  // 13
  std::vector<std::string> warnings;
  const ProguardMapping mapping = ProguardMapping::Parse(text, "mapping.txt", &warnings);
  EXPECT_EQ(mapping.malformed_lines(), warnings.size());
  EXPECT_THAT(
      warnings,
      ElementsAre(HasSubstr("mapping.txt:1: member line outside a class"), HasSubstr("mapping.txt:4: bad line range"),
                  HasSubstr("mapping.txt:5: unbalanced parentheses"), HasSubstr("mapping.txt:6: expected"),
                  HasSubstr("mapping.txt:7: line range"), HasSubstr("mapping.txt:8: class line must end with ':'"),
                  HasSubstr("mapping.txt:9: class a.a is mapped twice"), HasSubstr("mapping.txt:10: expected")));
  EXPECT_EQ(mapping.class_count(), 2u);
  EXPECT_EQ(mapping.DeobfuscateMethod("a.d", "a").signature, "void fine(int)");
  EXPECT_EQ(mapping.DeobfuscateMethod("a.a", "a").method_name, "ok");
}

TEST(ProguardMappingTest, LoadReportsMissingFiles) {
  auto mapping = ProguardMapping::Load("/nonexistent/mapping.txt", nullptr);
  ASSERT_FALSE(mapping);
  EXPECT_THAT(mapping.error().message, HasSubstr("/nonexistent/mapping.txt"));
}

TEST(ProguardMappingTest, JavaTypesToDescriptors) {
  EXPECT_EQ(JavaTypeToDescriptor("int"), "I");
  EXPECT_EQ(JavaTypeToDescriptor("boolean[][]"), "[[Z");
  EXPECT_EQ(JavaTypeToDescriptor("java.lang.String"), "Ljava.lang.String;");
  EXPECT_EQ(JavaTypeToDescriptor("void"), "V");
  EXPECT_EQ(JavaTypeToDescriptor(""), "");
}

}  // namespace
}  // namespace looptrace::symbols
