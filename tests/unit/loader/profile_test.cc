#include "looptrace/loader/profile.h"

#include <gtest/gtest.h>

#include "looptrace/loader/attach_plan.h"

namespace looptrace::loader {
namespace {

TEST(Profile, ParsesProbesArgumentsAndComments) {
  auto profile = ParseProfile(R"(
# comment
profile demo   # trailing comment
description  A demo profile
probe dispatch.begin uprobe exe my_begin id=arg1 name=arg2:str
probe dispatch.end   uretprobe /usr/lib/libx.so my_begin id=ret:int
probe poll.begin usdt libglib-2.0.so glib:poll__begin
probe poll.end usdt libglib-2.0.so glib:poll__end
)",
                              "demo.profile");
  ASSERT_TRUE(profile) << profile.error().message;
  EXPECT_EQ(profile->name, "demo");
  EXPECT_EQ(profile->description, "A demo profile");
  ASSERT_EQ(profile->probes.size(), 4u);
  const ProbeSpec& begin = profile->probes[0];
  EXPECT_EQ(begin.role, Role::kDispatchBegin);
  EXPECT_EQ(begin.kind, ProbeKind::kUprobe);
  EXPECT_EQ(begin.binary, "exe");
  EXPECT_EQ(begin.point, "my_begin");
  EXPECT_EQ(begin.line, 5);
  ASSERT_EQ(begin.args.size(), 2u);
  EXPECT_EQ(begin.args[1].name, "name");
  EXPECT_EQ(begin.args[1].source, 1);
  EXPECT_EQ(begin.args[1].type, ArgType::kStr);
  EXPECT_EQ(profile->probes[1].args[0].source, LT_ARG_SOURCE_RETVAL);
  EXPECT_EQ(profile->probes[1].args[0].type, ArgType::kInt);
  EXPECT_EQ(profile->probes[2].kind, ProbeKind::kUsdt);
}

struct BadCase {
  const char* text;
  const char* expected;  // substring of the error
};

TEST(Profile, ErrorsNameFileAndLine) {
  const BadCase cases[] = {
      {"probe dispatch.bgin uprobe exe f\n", "p.profile:1: unknown role 'dispatch.bgin'"},
      {"\nprobe dispatch.begin kprobe exe f\n", "p.profile:2: unknown probe kind 'kprobe'"},
      {"probe dispatch.begin uprobe exe\n", "p.profile:1: probe needs"},
      {"probe dispatch.begin uprobe exe f id=arg7\nprobe dispatch.end uprobe exe g\n",
       "p.profile:1: argument 'id': source 'arg7'"},
      {"probe dispatch.begin uprobe exe f colour=arg1\nprobe dispatch.end uprobe exe g\n",
       "role dispatch.begin has no argument 'colour'"},
      {"probe dispatch.begin uprobe exe f id=arg1:float\nprobe dispatch.end uprobe exe g\n",
       "unknown type 'float'"},
      {"probe dispatch.begin uprobe exe f id=ret\nprobe dispatch.end uprobe exe g\n",
       "'ret' needs a uretprobe"},
      {"probe dispatch.begin uprobe exe f id=arg1 id=arg2\nprobe dispatch.end uprobe exe g\n",
       "bound twice"},
      {"probe dispatch.begin usdt exe nocolon\n", "must be provider:name"},
      {"probe dispatch.begin uprobe exe f\n", "maps dispatch.begin but not dispatch.end"},
      {"frobnicate\n", "p.profile:1: unknown directive 'frobnicate'"},
      {"# only a comment\n", "defines no probe"},
      {"probe dispatch.begin uprobe exe f id\nprobe dispatch.end uprobe exe g\n",
       "is not NAME=SOURCE"},
  };
  for (const auto& c : cases) {
    auto profile = ParseProfile(c.text, "p.profile");
    ASSERT_FALSE(profile) << c.text;
    EXPECT_NE(profile.error().message.find(c.expected), std::string::npos)
        << "got: " << profile.error().message << "\nwant: " << c.expected;
    EXPECT_EQ(profile.error().code, ExitCode::kProfile);
  }
}

TEST(Profile, BuiltinProfilesAllParse) {
  ASSERT_FALSE(BuiltinProfiles().empty());
  for (const auto& builtin : BuiltinProfiles()) {
    auto profile = ParseProfile(builtin.text, builtin.name);
    ASSERT_TRUE(profile) << builtin.name << ": " << profile.error().message;
    EXPECT_EQ(profile->name, builtin.name);
    EXPECT_FALSE(profile->description.empty());
  }
  EXPECT_TRUE(LoadProfile("sample"));
  auto missing = LoadProfile("nosuchprofile");
  ASSERT_FALSE(missing);
  EXPECT_NE(missing.error().hint.find("sample"), std::string::npos);
  auto no_file = LoadProfile("/nonexistent/x.profile");
  ASSERT_FALSE(no_file);
  EXPECT_NE(no_file.error().message.find("/nonexistent/x.profile"), std::string::npos);
}

TEST(AttachPlan, CookieCarriesRoleAndArgumentLayout) {
  ResolvedProbe probe;
  probe.probe_id = 513;
  probe.spec.role = Role::kDispatchBegin;
  probe.spec.args = {{"id", 0, ArgType::kUint}, {"name", 5, ArgType::kStr},
                     {"what", LT_ARG_SOURCE_RETVAL, ArgType::kInt}};
  uint64_t cookie = MakeCookie(probe);
  EXPECT_EQ(LT_COOKIE_PROBE_ID(cookie), 513u);
  EXPECT_EQ(LT_COOKIE_ROLE(cookie), static_cast<uint32_t>(LT_ROLE_DISPATCH_BEGIN));
  EXPECT_EQ(LT_COOKIE_NARGS(cookie), 3u);
  EXPECT_EQ(LT_COOKIE_ARG_SOURCE(cookie, 0), 0u);
  EXPECT_EQ(LT_COOKIE_ARG_SOURCE(cookie, 1), 5u);
  EXPECT_EQ(LT_COOKIE_ARG_SOURCE(cookie, 2), static_cast<uint32_t>(LT_ARG_SOURCE_RETVAL));
}

}  // namespace
}  // namespace looptrace::loader
