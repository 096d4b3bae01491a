// HotSpot's stubs named from the VM's own list (StubCodeDesc::_list), laid out here as
// stubCodeGenerator.hpp declares an entry: {next, group, name, begin, end}.
#include "loader/runtimes/jvm/stub_names.h"

#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "fake_memory.h"

namespace looptrace::loader::jvm {
namespace {

// HotSpot's layout of a StubCodeDesc: {next, group, name, begin, end}.
void PutDesc(FakeMemory& memory, uint64_t at, uint64_t next, uint64_t group, uint64_t name, uint64_t begin,
             uint64_t end) {
  const uint64_t fields[] = {next, group, name, begin, end};
  memory.Write(at, fields, sizeof(fields));
}

constexpr uint64_t kListHead = 0x1000, kDescs = 0x2000, kTexts = 0x3000, kCode = 0x100000;

class StubNamesTest : public ::testing::Test {
 protected:
  StubNamesTest() {
    memory_.Map(kListHead, 8);
    memory_.Map(kDescs, 0x1000);
    memory_.Map(kTexts, 0x1000);
    memory_.PutText(kTexts, "StubRoutines");
    memory_.PutText(kTexts + 0x100, "sha256_implCompressMB");
    memory_.PutText(kTexts + 0x200, "jbyte_fill");
    memory_.PutText(kTexts + 0x300, "not\x01text");
  }
  void Head(uint64_t first) { memory_.Write(kListHead, &first, 8); }

  FakeMemory memory_;
};

TEST_F(StubNamesTest, NamesAPcByTheStubThatHoldsItAsGroupAndName) {
  // The VM prepends: the list runs from the newest stub, not in address order.
  Head(kDescs);
  PutDesc(memory_, kDescs, kDescs + 0x40, kTexts, kTexts + 0x100, kCode + 0x400, kCode + 0x900);
  PutDesc(memory_, kDescs + 0x40, 0, kTexts, kTexts + 0x200, kCode, kCode + 0x100);
  StubNames stubs(kListHead, memory_);
  EXPECT_EQ(stubs.At(kCode + 0x400), "StubRoutines::sha256_implCompressMB");
  EXPECT_EQ(stubs.At(kCode + 0x8ff), "StubRoutines::sha256_implCompressMB");
  EXPECT_EQ(stubs.At(kCode + 0x10), "StubRoutines::jbyte_fill");
  EXPECT_EQ(stubs.At(kCode + 0x900), std::nullopt);  // its end is the next byte's
  EXPECT_EQ(stubs.At(kCode + 0x200), std::nullopt);  // between two stubs
  EXPECT_EQ(stubs.At(kCode - 1), std::nullopt);
}

TEST_F(StubNamesTest, EntriesThatDoNotReadAsStubsAreLeftOut) {
  Head(kDescs);
  // Ends before it begins; a name that is no text; a name out of reach; then a good one, whose
  // group cannot be read (named without it).
  PutDesc(memory_, kDescs, kDescs + 0x40, kTexts, kTexts + 0x100, kCode + 0x100, kCode);
  PutDesc(memory_, kDescs + 0x40, kDescs + 0x80, kTexts, kTexts + 0x300, kCode + 0x200, kCode + 0x300);
  PutDesc(memory_, kDescs + 0x80, kDescs + 0xc0, kTexts, 0xdead0000, kCode + 0x300, kCode + 0x400);
  PutDesc(memory_, kDescs + 0xc0, 0, 0xdead0000, kTexts + 0x200, kCode + 0x400, kCode + 0x500);
  StubNames stubs(kListHead, memory_);
  EXPECT_EQ(stubs.At(kCode + 0x80), std::nullopt);
  EXPECT_EQ(stubs.At(kCode + 0x280), std::nullopt);
  EXPECT_EQ(stubs.At(kCode + 0x380), std::nullopt);
  EXPECT_EQ(stubs.At(kCode + 0x480), "jbyte_fill");
}

TEST_F(StubNamesTest, AListThatLoopsOrCannotBeReadNamesNothingAndEnds) {
  StubNames unreadable(0xdead0000, memory_);
  EXPECT_EQ(unreadable.At(kCode), std::nullopt);
  Head(kDescs);
  PutDesc(memory_, kDescs, kDescs, kTexts, kTexts + 0x100, kCode, kCode + 0x100);  // its own next
  StubNames looping(kListHead, memory_);
  EXPECT_EQ(looping.At(kCode + 0x10), "StubRoutines::sha256_implCompressMB");
}

}  // namespace
}  // namespace looptrace::loader::jvm
