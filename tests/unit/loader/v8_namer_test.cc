// The V8 frame namer on a fake heap laid out as Node 20's V8 (the v8dbg_* values of
// /usr/bin/node): a SharedFunctionInfo named through its ScopeInfo, its script's name and
// line ends; a function whose address was reused (moved by the garbage collector) or is no
// SharedFunctionInfo any more is counted and not named.
#include "loader/runtimes/node/v8_namer.h"

#include <gtest/gtest.h>

#include <map>

#include "fake_memory.h"

namespace looptrace::loader::node {
namespace {

// V8's heap: objects whose first word is their map.
class FakeHeap : public FakeMemory {
 public:
  // An object of `size` bytes at `address` (untagged) with map `map` (tagged); returns it tagged.
  uint64_t Object(uint64_t address, uint64_t map, size_t size) {
    Map(address, size);
    Put(address, map);
    return address + 1;
  }
};

uint64_t Smi(int64_t value) { return static_cast<uint64_t>(value) << 32; }

V8Metadata Node20() {
  V8Metadata m;
  m.layout.map_instance_type = 12;
  m.layout.function_shared = 24;
  m.layout.sfi_fingerprint = 16;
  m.layout.type_sfi = 262;
  m.sfi_name_or_scope_info = 16;
  m.sfi_script_or_debug_info = 32;
  m.script_name = 16;
  m.script_source = 8;
  m.script_line_ends = 56;
  m.string_length = 12;
  m.seq_chars = 16;
  m.cons_first = 16;
  m.cons_second = 24;
  m.thin_actual = 16;
  m.sliced_parent = 16;
  m.sliced_offset = 24;
  m.fixed_array_length = 8;
  m.fixed_array_data = 16;
  m.scope_info_first_vars = 3;
  m.scope_info_context_locals = 2;
  m.type_script = 167;
  m.type_scope_info = 261;
  m.type_fixed_array = 175;
  m.first_nonstring_type = 128;
  m.string_representation_mask = 7;
  m.string_encoding_mask = 8;
  m.cons_string_tag = 1;
  m.thin_string_tag = 5;
  m.sliced_string_tag = 3;
  m.one_byte_string_tag = 8;
  return m;
}

class V8NamerTest : public ::testing::Test {
 protected:
  void SetUp() override {
    auto heap = std::make_unique<FakeHeap>();
    heap_ = heap.get();
    for (auto [address, type] : std::map<uint64_t, uint16_t>{
             {0x1000, 262}, {0x1100, 261}, {0x1200, 167}, {0x1300, 8}, {0x1400, 175}, {0x1500, 0x99}}) {
      maps_[type] = heap_->Object(address, 0x1, 16);
      heap_->Put<uint16_t>(address + 12, type);
    }
    const uint64_t name = String(0x2000, "renderReport");
    const uint64_t file = String(0x2100, "/srv/app.js");
    const uint64_t local = String(0x2200, "rows");
    // ScopeInfo as Node 20 lays it out: flags, parameters, 1 context local (its name, its
    // info), the function's name and slot, its inferred name (undefined), its start and end
    // positions, then the outer scope.
    scope_ = heap_->Object(0x3000, maps_[261], 8 + 24 * 8);
    const uint64_t slots[] = {Smi(0), Smi(1), Smi(1), local, Smi(3), name, Smi(-1), 0x1501, Smi(100), Smi(180), 0x1501};
    for (size_t i = 0; i < std::size(slots); ++i) heap_->Put(0x3000 + 8 + 8 * i, slots[i]);
    const uint64_t ends = heap_->Object(0x4000, maps_[175], 16 + 4 * 8);
    heap_->Put(0x4000 + 8, Smi(4));
    const int line_ends[] = {10, 50, 120, 300};  // position 100 is on line 3
    for (int i = 0; i < 4; ++i) heap_->Put(0x4000 + 16 + 8 * i, Smi(line_ends[i]));
    const uint64_t script = heap_->Object(0x5000, maps_[167], 64);
    heap_->Put(0x5000 + 16, file);
    heap_->Put(0x5000 + 56, ends);
    sfi_ = heap_->Object(0x6000, maps_[262], 48);
    heap_->Put(0x6000 + 16, scope_);
    heap_->Put(0x6000 + 32, script);
    namer_.emplace(Node20(), std::move(heap), "/nonexistent");
  }

  uint64_t String(uint64_t address, std::string_view text) {
    const uint64_t tagged = heap_->Object(address, maps_[8], 16 + text.size());
    heap_->Put<int32_t>(address + 12, static_cast<int32_t>(text.size()));
    for (size_t i = 0; i < text.size(); ++i) heap_->Put<char>(address + 16 + i, text[i]);
    return tagged;
  }

  lt_interp_frame Frame() const { return {sfi_, LT_INTERP_NO_OFFSET, static_cast<uint32_t>(scope_)}; }

  FakeHeap* heap_ = nullptr;
  std::map<uint16_t, uint64_t> maps_;
  uint64_t scope_ = 0, sfi_ = 0;
  std::optional<V8Namer> namer_;
  Stats stats_;
};

TEST_F(V8NamerTest, NamesAFunctionByItsScopeInfoAndTheLineItStartsAt) {
  auto frame = namer_->NameFrame(Frame(), &stats_);
  ASSERT_TRUE(frame);
  EXPECT_EQ(frame->Name(), "renderReport app.js:3");
  EXPECT_EQ(stats_.Get(StatId::interp_frames_unnamed), 0u);
}

// A file's function is the program's own (it may name a message); Node's modules are not.
TEST_F(V8NamerTest, AScriptFilesFunctionIsUserCodeAndANodeModulesIsNot) {
  auto frame = namer_->NameFrame(Frame(), &stats_);
  ASSERT_TRUE(frame);
  EXPECT_TRUE(frame->user_code);
  // A thread dump's form: the parts, as py-spy shows Python's.
  auto parts = namer_->FrameParts(Frame(), &stats_);
  ASSERT_TRUE(parts);
  EXPECT_EQ(parts->Name(), "renderReport (app.js:3)");
  EXPECT_TRUE(parts->user_code);
  const uint64_t internal = String(0x2300, "node:internal/timers");
  heap_->Put(0x5000 + 16, internal);
  V8Namer fresh(Node20(), std::make_unique<FakeHeap>(*heap_), "/nonexistent");
  auto node_frame = fresh.NameFrame(Frame(), &stats_);
  ASSERT_TRUE(node_frame);
  EXPECT_EQ(node_frame->Name(), "renderReport node:internal/timers:3");
  EXPECT_FALSE(node_frame->user_code);
}

TEST_F(V8NamerTest, AnAddressReusedSinceTheSampleIsCountedNotNamed) {
  lt_interp_frame frame = Frame();
  ASSERT_TRUE(namer_->NameFrame(frame, &stats_));
  frame.fingerprint ^= 0x100;  // BPF read another object's bytes there
  EXPECT_FALSE(namer_->NameFrame(frame, &stats_));
  EXPECT_EQ(stats_.Get(StatId::interp_code_reused), 1u);
}

TEST_F(V8NamerTest, AnAddressHoldingNoSharedFunctionInfoIsCountedNotNamed) {
  heap_->Put(0x6000, maps_[0x99]);  // the collector moved it away: another object is there now
  EXPECT_FALSE(namer_->NameFrame(Frame(), &stats_));
  EXPECT_EQ(stats_.Get(StatId::interp_frames_unnamed), 1u);
}

TEST(V8FrameName, NodesForm) {
  EXPECT_EQ(FrameName("onRequest", "/srv/server.js", 12), "onRequest server.js:12");
  EXPECT_EQ(FrameName("", "/srv/server.js", 3), "(anonymous) server.js:3");
  EXPECT_EQ(FrameName("forEach", "", 0), "forEach");
  EXPECT_EQ(FrameName("f", "node:internal/timers", 0), "f node:internal/timers");
}

}  // namespace
}  // namespace looptrace::loader::node
