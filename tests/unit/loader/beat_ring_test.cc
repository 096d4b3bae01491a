// The beat ring's copy against a ring in a memfd (the same mmap path as the BPF map).
#include "loader/bpf/beat_ring.h"

#include <gtest/gtest.h>
#include <sys/mman.h>
#include <unistd.h>

namespace looptrace::loader {
namespace {

class RingFixture : public ::testing::Test {
 protected:
  static constexpr uint64_t kCapacity = 8;
  void SetUp() override {
    fd_ = UniqueFd(memfd_create("beats", MFD_CLOEXEC));
    ASSERT_TRUE(fd_);
    ASSERT_EQ(ftruncate(fd_.get(), kCapacity * sizeof(lt_beat)), 0);
    void* w = mmap(nullptr, kCapacity * sizeof(lt_beat), PROT_READ | PROT_WRITE, MAP_SHARED, fd_.get(), 0);
    ASSERT_NE(w, MAP_FAILED);
    writable_ = MappedRegion(w, kCapacity * sizeof(lt_beat));
    auto ring = BeatRing::Map(fd_.get(), kCapacity, &head_);
    ASSERT_TRUE(ring) << ring.error().message;
    ring_ = std::move(*ring);
  }
  // Writes beats with ids first..last as BPF would (slot = index & mask), then the head.
  void Write(uint64_t first, uint64_t last) {
    auto* slots = static_cast<lt_beat*>(writable_.get());
    for (uint64_t i = first; i < last; ++i) {
      lt_beat b{};
      b.ts_ns = 1000 + i;
      b.id = i;
      slots[i & (kCapacity - 1)] = b;
    }
    head_ = last;
  }

  UniqueFd fd_;
  MappedRegion writable_;
  uint64_t head_ = 0;
  BeatRing ring_;
};

TEST_F(RingFixture, CopiesAStretchStillInTheRing) {
  Write(0, 6);
  std::vector<lt_beat> out;
  EXPECT_EQ(ring_.Copy(2, 5, &out), 0u);
  ASSERT_EQ(out.size(), 3u);
  EXPECT_EQ(out[0].id, 2u);
  EXPECT_EQ(out[2].id, 4u);
}

TEST_F(RingFixture, WrapAroundCountsWhatWasOverwritten) {
  Write(0, 20);  // slots now hold beats 12..19
  std::vector<lt_beat> out;
  // Asked for 5..15: 5..11 were overwritten, 12..14 are still there.
  EXPECT_EQ(ring_.Copy(5, 15, &out), 7u);
  ASSERT_EQ(out.size(), 3u);
  EXPECT_EQ(out[0].id, 12u);
  EXPECT_EQ(out[2].id, 14u);
  // Entirely overwritten.
  out.clear();
  EXPECT_EQ(ring_.Copy(0, 10, &out), 10u);
  EXPECT_TRUE(out.empty());
}

TEST_F(RingFixture, AnOpenEndStopsAtTheHead) {
  Write(0, 5);
  std::vector<lt_beat> out;
  EXPECT_EQ(ring_.Copy(3, UINT64_MAX, &out), 0u);
  ASSERT_EQ(out.size(), 2u);
  EXPECT_EQ(out[1].id, 4u);
  EXPECT_EQ(ring_.head(), 5u);
}

}  // namespace
}  // namespace looptrace::loader
