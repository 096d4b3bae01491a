#include "looptrace/symbols/method_mapping.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>
#include <sys/stat.h>
#include <unistd.h>

#include <string>
#include <vector>

#include "symbols_test_util.h"

namespace looptrace::symbols {
namespace {

using test_util::TempDir;
using test_util::WriteFile;
using ::testing::ElementsAre;
using ::testing::HasSubstr;
using ::testing::IsEmpty;
using ::testing::StartsWith;

// Lines in the exact shape the Matrix Gradle plugin writes (sorted by id, dispatch last).
constexpr std::string_view kMapping =
    "1,1,sample.tencent.matrix.trace.TestTraceMainActivity onCreate (Landroid.os.Bundle;)V\n"
    "2,2,sample.tencent.matrix.trace.TestTraceMainActivity B ()V\n"
    "3,4,sample.tencent.matrix.battery.stats.BatteryStatsSubProcActivity onCreate "
    "(Landroid.os.Bundle;)V\n"
    "4,10,sample.tencent.matrix.trace.TestTraceMainActivity evilMethod5 (Z)V\n"
    "5,265,sample.tencent.matrix.jni.NativeBridge nativeSleep\n"
    "6,9,sample.tencent.matrix.util.Strings join ([Ljava.lang.String;Ljava.lang.String;)"
    "Ljava.lang.String;\n"
    "1048574,1,android.os.Handler dispatchMessage (Landroid.os.Message;)V\n";

TEST(MethodMapping, ParsesMatrixLines) {
  std::vector<std::string> warnings;
  const MethodMapping mapping = MethodMapping::Parse(kMapping, "methodMapping.txt", &warnings);
  EXPECT_THAT(warnings, IsEmpty());
  EXPECT_EQ(mapping.size(), 7u);
  EXPECT_EQ(mapping.malformed_lines(), 0u);

  const MappedMethod* on_create = mapping.Find(1);
  ASSERT_NE(on_create, nullptr);
  EXPECT_EQ(on_create->id, 1);
  EXPECT_EQ(on_create->access_flags, 1);
  EXPECT_EQ(on_create->class_name, "sample.tencent.matrix.trace.TestTraceMainActivity");
  EXPECT_EQ(on_create->method_name, "onCreate");
  EXPECT_EQ(on_create->descriptor, "(Landroid.os.Bundle;)V");
  EXPECT_EQ(on_create->Display(), "sample.tencent.matrix.trace.TestTraceMainActivity.onCreate(Landroid.os.Bundle;)V");

  const MappedMethod* join = mapping.Find(6);
  ASSERT_NE(join, nullptr);
  EXPECT_EQ(join->access_flags, 9);
  EXPECT_EQ(join->Display(),
            "sample.tencent.matrix.util.Strings.join([Ljava.lang.String;Ljava.lang.String;)"
            "Ljava.lang.String;");

  EXPECT_EQ(mapping.Find(7), nullptr);
  EXPECT_EQ(mapping.Find(0), nullptr);
  EXPECT_EQ(mapping.Find(-1), nullptr);
}

TEST(MethodMapping, DispatchLine) {
  const MethodMapping mapping = MethodMapping::Parse(kMapping, "m", nullptr);
  const MappedMethod* dispatch = mapping.Find(1048574);
  ASSERT_NE(dispatch, nullptr);
  EXPECT_EQ(dispatch->access_flags, 1);
  EXPECT_EQ(dispatch->class_name, "android.os.Handler");
  EXPECT_EQ(dispatch->method_name, "dispatchMessage");
  EXPECT_EQ(dispatch->descriptor, "(Landroid.os.Message;)V");
  EXPECT_EQ(dispatch->Display(), "android.os.Handler.dispatchMessage(Landroid.os.Message;)V");
}

TEST(MethodMapping, NativeMethodHasNoDescriptor) {
  const MethodMapping mapping = MethodMapping::Parse(kMapping, "m", nullptr);
  const MappedMethod* native = mapping.Find(5);
  ASSERT_NE(native, nullptr);
  EXPECT_EQ(native->access_flags, 265);  // public static native
  EXPECT_EQ(native->class_name, "sample.tencent.matrix.jni.NativeBridge");
  EXPECT_EQ(native->method_name, "nativeSleep");
  EXPECT_EQ(native->descriptor, "");
  EXPECT_EQ(native->Display(), "sample.tencent.matrix.jni.NativeBridge.nativeSleep");
}

TEST(MethodMapping, CrlfBlankLinesBomAndMissingFinalNewline) {
  std::vector<std::string> warnings;
  const MethodMapping mapping = MethodMapping::Parse(
      "\xEF\xBB\xBF"
      "1,1,a.B c ()V\r\n"
      "\r\n"
      "   \n"
      "\n"
      "2,8,a.B d (I)J\r\n"
      "3,256,a.B n\r\n"
      "1048574,1,android.os.Handler dispatchMessage (Landroid.os.Message;)V",
      "crlf.txt", &warnings);
  EXPECT_THAT(warnings, IsEmpty());
  EXPECT_EQ(mapping.size(), 4u);
  EXPECT_EQ(mapping.malformed_lines(), 0u);
  ASSERT_NE(mapping.Find(1), nullptr);
  EXPECT_EQ(mapping.Find(1)->descriptor, "()V");  // no trailing '\r'
  ASSERT_NE(mapping.Find(2), nullptr);
  EXPECT_EQ(mapping.Find(2)->Display(), "a.B.d(I)J");
  ASSERT_NE(mapping.Find(3), nullptr);
  EXPECT_EQ(mapping.Find(3)->method_name, "n");  // native: no '\r' glued to the name
  EXPECT_EQ(mapping.Find(3)->descriptor, "");
  ASSERT_NE(mapping.Find(1048574), nullptr);
  EXPECT_EQ(mapping.Find(1048574)->descriptor, "(Landroid.os.Message;)V");
}

TEST(MethodMapping, EmptyText) {
  std::vector<std::string> warnings;
  const MethodMapping mapping = MethodMapping::Parse("", "empty.txt", &warnings);
  EXPECT_EQ(mapping.size(), 0u);
  EXPECT_EQ(mapping.malformed_lines(), 0u);
  EXPECT_THAT(warnings, IsEmpty());
}

TEST(MethodMapping, MalformedLinesAreSkippedWithLineNumbers) {
  std::vector<std::string> warnings;
  const MethodMapping mapping = MethodMapping::Parse(
      "1,1,a.B good ()V\n"                  // 1 ok
      "just some text\n"                    // 2 no comma
      "2,1\n"                               // 3 no second comma
      "3,1,\n"                              // 4 no class
      "4,1,a.B\n"                           // 5 no method
      "x5,1,a.B m ()V\n"                    // 6 non-numeric id
      ",1,a.B m ()V\n"                      // 7 empty id
      "-6,1,a.B m ()V\n"                    // 8 negative id
      "1048576,1,a.B m ()V\n"               // 9 id > 0xFFFFF
      "99999999999999999999,1,a.B m ()V\n"  // 10 id overflows
      "7,public,a.B m ()V\n"                // 11 non-numeric access flag
      "8,-1,a.B m ()V\n"                    // 12 negative access flag
      "9,1,a.B m ()V extra\n"               // 13 extra field
      "10,1,a.B m ()V\n"                    // 14 ok
      "1048575,1,a.B max ()V\n",            // 15 ok: 0xFFFFF fits the 20-bit id field
      "bad.txt", &warnings);
  EXPECT_EQ(mapping.size(), 3u);
  EXPECT_EQ(mapping.malformed_lines(), 12u);
  ASSERT_NE(mapping.Find(1), nullptr);
  ASSERT_NE(mapping.Find(10), nullptr);
  EXPECT_EQ(mapping.Find(10)->Display(), "a.B.m()V");
  ASSERT_NE(mapping.Find(0xFFFFF), nullptr);
  for (int id : {2, 3, 4, 6, 7, 8, 9}) EXPECT_EQ(mapping.Find(id), nullptr) << id;

  ASSERT_EQ(warnings.size(), 12u);
  EXPECT_THAT(warnings[0], StartsWith("bad.txt:2: "));
  EXPECT_THAT(warnings[1], StartsWith("bad.txt:3: "));
  EXPECT_THAT(warnings[1], HasSubstr("access flag"));
  EXPECT_THAT(warnings[2], StartsWith("bad.txt:4: "));
  EXPECT_THAT(warnings[2], HasSubstr("missing class"));
  EXPECT_THAT(warnings[3], StartsWith("bad.txt:5: "));
  EXPECT_THAT(warnings[3], HasSubstr("missing method name"));
  EXPECT_EQ(warnings[4], "bad.txt:6: method id 'x5' is not a decimal number");
  EXPECT_EQ(warnings[5], "bad.txt:7: method id '' is not a decimal number");
  EXPECT_EQ(warnings[6], "bad.txt:8: negative method id -6");
  EXPECT_EQ(warnings[7], "bad.txt:9: method id 1048576 exceeds the 20-bit maximum 1048575");
  EXPECT_THAT(warnings[8], StartsWith("bad.txt:10: method id 99999999999999999999 exceeds"));
  EXPECT_EQ(warnings[9], "bad.txt:11: access flag 'public' is not a decimal number");
  EXPECT_EQ(warnings[10], "bad.txt:12: access flag -1 out of range");
  EXPECT_EQ(warnings[11], "bad.txt:13: unexpected text after the descriptor: 'extra'");
}

TEST(MethodMapping, MalformedLinesAreCountedWithoutWarningSink) {
  const MethodMapping mapping = MethodMapping::Parse("oops\n1,1,a.B m\n", "m", nullptr);
  EXPECT_EQ(mapping.size(), 1u);
  EXPECT_EQ(mapping.malformed_lines(), 1u);
}

TEST(MethodMapping, DuplicateIdLastWins) {
  std::vector<std::string> warnings;
  const MethodMapping mapping = MethodMapping::Parse(
      "1,1,a.B first ()V\n2,1,a.B other ()V\n1,2,a.C second (I)V\n1,4,a.D third ()I\n", "dup.txt", &warnings);
  EXPECT_EQ(mapping.size(), 2u);
  EXPECT_EQ(mapping.malformed_lines(), 0u);
  ASSERT_NE(mapping.Find(1), nullptr);
  EXPECT_EQ(mapping.Find(1)->Display(), "a.D.third()I");
  EXPECT_EQ(mapping.Find(1)->access_flags, 4);
  EXPECT_THAT(warnings, ElementsAre("dup.txt:3: duplicate method id 1 (replaces the entry of line 1)",
                                    "dup.txt:4: duplicate method id 1 (replaces the entry of line 3)"));
}

TEST(MethodMapping, LoadsAFile) {
  TempDir dir;
  ASSERT_FALSE(dir.path().empty());
  const std::string path = dir.File("methodMapping.txt");
  WriteFile(path, std::string(kMapping) + "garbage line\n");
  std::vector<std::string> warnings;
  Result<MethodMapping> mapping = MethodMapping::Load(path, &warnings);
  ASSERT_TRUE(mapping.has_value()) << mapping.error().message;
  EXPECT_EQ(mapping->size(), 7u);
  EXPECT_EQ(mapping->malformed_lines(), 1u);
  ASSERT_EQ(warnings.size(), 1u);
  EXPECT_THAT(warnings[0], StartsWith(path + ":8: "));
  ASSERT_NE(mapping->Find(1048574), nullptr);
  EXPECT_EQ(mapping->Find(1048574)->method_name, "dispatchMessage");
}

TEST(MethodMapping, MissingFileIsAnErrorNamingThePath) {
  TempDir dir;
  const std::string path = dir.File("no-such-methodMapping.txt");
  std::vector<std::string> warnings;
  const Result<MethodMapping> mapping = MethodMapping::Load(path, &warnings);
  ASSERT_FALSE(mapping.has_value());
  EXPECT_THAT(mapping.error().message, HasSubstr(path));
  EXPECT_THAT(mapping.error().message, HasSubstr("No such file or directory"));
  EXPECT_EQ(mapping.error().code, ExitCode::kProfile);
  EXPECT_THAT(mapping.error().hint, HasSubstr("methodMapping.txt"));
  EXPECT_THAT(warnings, IsEmpty());
}

TEST(MethodMapping, DirectoryIsAnError) {
  TempDir dir;
  const Result<MethodMapping> mapping = MethodMapping::Load(dir.path(), nullptr);
  ASSERT_FALSE(mapping.has_value());
  EXPECT_THAT(mapping.error().message, HasSubstr(dir.path()));
  EXPECT_THAT(mapping.error().message, HasSubstr("Is a directory"));
}

TEST(MethodMapping, UnopenablePathIsAnError) {
  // A path under a regular file cannot be opened, even by root (ENOTDIR).
  TempDir dir;
  const std::string file = dir.File("plain.txt");
  WriteFile(file, std::string(kMapping));
  const std::string path = file + "/methodMapping.txt";
  const Result<MethodMapping> mapping = MethodMapping::Load(path, nullptr);
  ASSERT_FALSE(mapping.has_value());
  EXPECT_THAT(mapping.error().message, HasSubstr(path));
  EXPECT_THAT(mapping.error().message, HasSubstr("Not a directory"));
}

}  // namespace
}  // namespace looptrace::symbols
