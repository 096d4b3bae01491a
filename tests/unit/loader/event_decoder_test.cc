#include "looptrace/loader/event_decoder.h"

#include "looptrace/loader/beat_slicer.h"

#include <gtest/gtest.h>

#include <cstring>

namespace looptrace::loader {
namespace {

// A beat ring in memory, as BpfSession serves it from the BPF map.
class FakeBeats : public BeatSource {
 public:
  std::vector<lt_beat> ring;
  uint64_t Copy(uint64_t begin, uint64_t end, std::vector<lt_beat>* out) const override {
    for (uint64_t i = begin; i < end && i < ring.size(); ++i) out->push_back(ring[i]);
    return 0;
  }
};

class FakeStrings : public StringReader {
 public:
  std::optional<std::string> Read(uint32_t, uint64_t address) override {
    if (address == 0x100) return "run";
    if (address == 0x200) return "app.py";
    return std::nullopt;
  }
};

ResolvedProbe Probe(uint16_t id, Role role, std::vector<ArgSpec> args, std::string symbol = "") {
  ResolvedProbe p;
  p.probe_id = id;
  p.spec.role = role;
  p.spec.args = std::move(args);
  p.symbol = std::move(symbol);
  return p;
}

std::vector<uint8_t> Record(uint16_t probe_id, uint16_t role, uint64_t ts, uint64_t beat_index,
                            std::vector<uint64_t> args) {
  lt_probe_record r{};
  r.header = {LT_RECORD_PROBE, sizeof(r)};
  r.ts_ns = ts;
  r.tgid = r.tid = 7;
  r.probe_id = probe_id;
  r.role = role;
  r.nargs = static_cast<uint16_t>(args.size());
  r.beat_index = beat_index;
  for (size_t i = 0; i < args.size(); ++i) r.args[i] = args[i];
  std::vector<uint8_t> bytes(sizeof(r));
  std::memcpy(bytes.data(), &r, sizeof(r));
  return bytes;
}

lt_beat Beat(uint64_t ts, uint64_t id, uint64_t aux, uint16_t probe, bool enter) {
  lt_beat b{};
  b.ts_ns = ts;
  b.id = id;
  b.aux = aux;
  b.tid = 7;
  b.probe_id = probe;
  b.kind = enter ? LT_BEAT_ENTER : LT_BEAT_EXIT;
  return b;
}

SliceRequest Request(uint64_t begin_ns, uint64_t end_ns, uint64_t begin_index, uint64_t end_index) {
  SliceRequest r;
  r.label = "message";
  r.tid = 7;
  r.begin_ns = begin_ns;
  r.end_ns = end_ns;
  r.begin_beat_index = begin_index;
  r.end_beat_index = end_index;
  return r;
}

TEST(BeatSlicer, StringFlavourBeatsAreNamedByTheirPair) {
  AttachPlan plan;
  plan.probes = {Probe(0, Role::kDispatchBegin, {{"id", 0, ArgType::kUint}}),
                 Probe(1, Role::kDispatchEnd, {}),
                 Probe(2, Role::kMethodEnter, {{"name", 1, ArgType::kStr}, {"class", 0, ArgType::kStr}}),
                 Probe(3, Role::kMethodExit, {{"name", 1, ArgType::kStr}, {"class", 0, ArgType::kStr}})};
  FakeBeats beats;
  beats.ring = {Beat(1500, 0x100, 0x200, 2, true), Beat(1800, 0x100, 0x200, 3, false)};
  FakeStrings process;
  StringTable strings(&process);
  Stats stats;
  BeatSlicer slicer(&plan, &beats, &strings, nullptr, &stats, 7);
  ASSERT_TRUE(slicer.enabled());
  auto slice = slicer.Slice(Request(1000, 2000, 0, 2));
  ASSERT_TRUE(slice);
  EXPECT_EQ(slice->span, "message");
  EXPECT_EQ(slice->kind, MethodIdKind::kString);
  ASSERT_EQ(slice->beats.size(), 2u);
  EXPECT_TRUE(slice->beats[0].enter);
  EXPECT_EQ(slice->beats[0].id, slice->beats[1].id);  // one id for the (name, class) pair
  EXPECT_EQ(slice->names.at(slice->beats[0].id), "app.py:run");
  EXPECT_FALSE(stats.AnyNonZero());
}

TEST(BeatSlicer, KeepsOnlyTheThreadsBeatsInsideTheSliceAndNamesProbeFlavourBySymbol) {
  AttachPlan plan;
  plan.probes = {Probe(0, Role::kDispatchBegin, {}), Probe(1, Role::kDispatchEnd, {}),
                 Probe(2, Role::kMethodEnter, {}, "ns::Work()"), Probe(3, Role::kMethodExit, {}, "ns::Work()")};
  FakeBeats beats;
  lt_beat other_thread = Beat(1600, 2, 0, 2, true);
  other_thread.tid = 8;
  beats.ring = {Beat(900, 2, 0, 2, true), Beat(1500, 2, 0, 2, true), other_thread, Beat(1800, 2, 0, 3, false)};
  Stats stats;
  BeatSlicer slicer(&plan, &beats, nullptr, nullptr, &stats, 7);
  auto slice = slicer.Slice(Request(1000, 2000, 0, 4));
  ASSERT_TRUE(slice);
  EXPECT_EQ(slice->kind, MethodIdKind::kProbe);
  ASSERT_EQ(slice->beats.size(), 2u);  // not the one before the begin, not thread 8's
  EXPECT_EQ(slice->beats[0].ts_ns, 1500u);
  EXPECT_EQ(slice->names.at(2), "ns::Work()");
}

TEST(BeatSlicer, NothingToSliceWithoutMethodRoles) {
  AttachPlan plan;
  plan.probes = {Probe(0, Role::kDispatchBegin, {}), Probe(1, Role::kDispatchEnd, {})};
  FakeBeats beats;
  Stats stats;
  BeatSlicer slicer(&plan, &beats, nullptr, nullptr, &stats, 7);
  EXPECT_FALSE(slicer.enabled());
  EXPECT_FALSE(slicer.Slice(Request(1000, 2000, 0, 4)));
}

TEST(EventDecoder, ProbeRecordsCarryArgumentsAndTheBeatHead) {
  AttachPlan plan;
  plan.probes = {Probe(0, Role::kDispatchBegin, {{"id", 0, ArgType::kUint}, {"name", 1, ArgType::kStr}})};
  FakeStrings process;
  StringTable strings(&process);
  Stats stats;
  EventDecoder decoder(&plan, &strings, &stats);
  std::vector<Event> out;
  decoder.Decode(Record(0, LT_ROLE_DISPATCH_BEGIN, 1000, 42, {5, 0x100}), &out);
  ASSERT_EQ(out.size(), 1u);
  const auto& e = std::get<ProbeEvent>(out[0]);
  EXPECT_EQ(e.role, Role::kDispatchBegin);
  EXPECT_EQ(e.beat_index, 42u);
  EXPECT_EQ(e.Arg("id")->value, 5u);
  EXPECT_EQ(*e.Arg("name")->text, "run");
  EXPECT_FALSE(stats.AnyNonZero());
}

TEST(EventDecoder, MalformedRecordsAreCountedNotDecoded) {
  AttachPlan plan;
  Stats stats;
  EventDecoder decoder(&plan, nullptr, &stats);
  std::vector<Event> out;
  decoder.Decode(std::vector<uint8_t>{1, 2, 3}, &out);
  lt_record_header bogus{99, 8};
  std::vector<uint8_t> bytes(sizeof(bogus));
  std::memcpy(bytes.data(), &bogus, sizeof(bogus));
  decoder.Decode(bytes, &out);
  decoder.Decode(Record(7, LT_ROLE_DISPATCH_BEGIN, 1, 0, {}), &out);  // no probe 7 in the plan
  EXPECT_TRUE(out.empty());
  EXPECT_EQ(stats.Get(StatId::malformed_records), 2u);
  EXPECT_EQ(stats.Get(StatId::unknown_probe_id), 1u);
}

}  // namespace
}  // namespace looptrace::loader
