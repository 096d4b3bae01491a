#include "looptrace/symbols/demangle.h"

#include <gtest/gtest.h>

namespace looptrace::symbols {
namespace {

TEST(Demangle, DemanglesItaniumNames) {
  EXPECT_EQ(Demangle("_ZN17looptrace_fixture10OverloadedEi"), "looptrace_fixture::Overloaded(int)");
  EXPECT_EQ(Demangle("_ZNK17looptrace_fixture8Renderer12ComputeFrameEi"),
            "looptrace_fixture::Renderer::ComputeFrame(int) const");
  EXPECT_EQ(Demangle("_Z3foov.cold"), "foo() [clone .cold]");
}

TEST(Demangle, ReturnsPlainNamesUnchanged) {
  EXPECT_EQ(Demangle("malloc"), "malloc");
  EXPECT_EQ(Demangle(""), "");
  EXPECT_EQ(Demangle("_Z"), "_Z");
  EXPECT_EQ(Demangle("_start"), "_start");
}

TEST(Demangle, ReturnsInvalidManglingUnchanged) {
  EXPECT_EQ(Demangle("_Znot_really_mangled!"), "_Znot_really_mangled!");
  EXPECT_EQ(Demangle("_ZN3foo"), "_ZN3foo");
}

TEST(Demangle, IsMangled) {
  EXPECT_TRUE(IsMangled("_ZN3foo3barEv"));
  EXPECT_FALSE(IsMangled("_Z"));
  EXPECT_FALSE(IsMangled("main"));
}

TEST(StripParameters, RemovesParameterListAndQualifiers) {
  EXPECT_EQ(StripParameters("ns::Foo::bar(int) const"), "ns::Foo::bar");
  EXPECT_EQ(StripParameters("foo()"), "foo");
  EXPECT_EQ(StripParameters("foo() [clone .cold]"), "foo");
  EXPECT_EQ(StripParameters("std::vector<int, std::allocator<int> >::push_back(int const&)"),
            "std::vector<int, std::allocator<int> >::push_back");
}

TEST(StripParameters, RemovesTemplateReturnType) {
  EXPECT_EQ(StripParameters("int looptrace_fixture::Twice<int>(int)"), "looptrace_fixture::Twice<int>");
  EXPECT_EQ(StripParameters("std::pair<int, int> ns::make<int>(int)"), "ns::make<int>");
}

TEST(StripParameters, KeepsAnonymousNamespaceAndOperators) {
  EXPECT_EQ(StripParameters("ns::(anonymous namespace)::Helper(int)"), "ns::(anonymous namespace)::Helper");
  EXPECT_EQ(StripParameters("(anonymous namespace)::Helper(int)"), "(anonymous namespace)::Helper");
  EXPECT_EQ(StripParameters("ns::Functor::operator()(int) const"), "ns::Functor::operator()");
  EXPECT_EQ(StripParameters("ns::Value::operator<(ns::Value const&) const"), "ns::Value::operator<");
  EXPECT_EQ(StripParameters("ns::Value::operator<<(int)"), "ns::Value::operator<<");
  EXPECT_EQ(StripParameters("ns::Value::operator->()"), "ns::Value::operator->");
  EXPECT_EQ(StripParameters("operator new(unsigned long)"), "operator new");
  EXPECT_EQ(StripParameters("ns::Value::operator bool() const"), "ns::Value::operator bool");
}

TEST(StripParameters, LeavesNamesWithoutParametersAlone) {
  EXPECT_EQ(StripParameters("malloc"), "malloc");
  EXPECT_EQ(StripParameters("vtable for ns::Foo"), "vtable for ns::Foo");
  EXPECT_EQ(StripParameters(""), "");
}

}  // namespace
}  // namespace looptrace::symbols
