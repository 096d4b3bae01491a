#include "loader/decode/event_decoder.h"

#include <gtest/gtest.h>

#include <cstring>

#include "loader/decode/beat_slicer.h"
#include "loader/plan/probe_config.h"

namespace looptrace::loader {
namespace {

constexpr uint32_t kPid = 7;

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

ArgSpec Arg(std::string name, uint8_t source, ArgType type = ArgType::kUint, uint8_t length_source = LT_SOURCE_NONE) {
  ArgSpec a;
  a.name = std::move(name);
  a.source = source;
  a.type = type;
  a.length_source = length_source;
  return a;
}

ResolvedProbe Probe(uint16_t id, Role role, std::vector<ArgSpec> args, std::string symbol = "") {
  ResolvedProbe p;
  p.probe_id = id;
  p.spec.role = role;
  p.spec.args = std::move(args);
  p.symbol = std::move(symbol);
  return p;
}

lt_record Record(uint16_t probe_id, uint16_t role, uint64_t ts, uint64_t beat_index, std::vector<uint64_t> args) {
  lt_record r{};
  r.type = LT_RECORD_PROBE;
  r.ts_ns = ts;
  r.tid = kPid;
  r.probe_id = probe_id;
  r.probe.role = role;
  r.probe.beat_index = beat_index;
  for (size_t i = 0; i < args.size(); ++i) r.probe.args[i] = args[i];
  return r;
}

lt_beat Beat(uint64_t ts, uint64_t id, uint16_t probe, bool enter) {
  lt_beat b{};
  b.ts_ns = ts;
  b.id = id;
  b.tid = kPid;
  b.probe_id = probe;
  b.kind = enter ? LT_BEAT_ENTER : LT_BEAT_EXIT;
  return b;
}

SliceRequest Request(uint64_t begin_ns, uint64_t end_ns, uint64_t begin_index, uint64_t end_index) {
  SliceRequest r;
  r.label = "message";
  r.tid = kPid;
  r.begin_ns = begin_ns;
  r.end_ns = end_ns;
  r.begin_beat_index = begin_index;
  r.end_beat_index = end_index;
  return r;
}

template <typename T>
std::vector<uint8_t> Bytes(const T& value) {
  std::vector<uint8_t> bytes(sizeof(value));
  std::memcpy(bytes.data(), &value, sizeof(value));
  return bytes;
}

TEST(BeatSlicer, IdentityFlavourBeatsAreNamedFromTheirArguments) {
  AttachPlan plan;
  plan.probes = {Probe(0, Role::kMethodEnter, {Arg("name", 1, ArgType::kStr), Arg("class", 0, ArgType::kStr)}),
                 Probe(1, Role::kMethodExit, {Arg("name", 1, ArgType::kStr), Arg("class", 0, ArgType::kStr)})};
  FakeBeats beats;
  beats.ring = {Beat(1500, 0xabc, 0, true), Beat(1800, 0xabc, 1, false)};
  FakeStrings process;
  StringTable strings(&process);
  IdentityTable identities;
  Identity identity;
  identity.probe_id = 0;
  identity.values = {0x100, 0x200};
  identities.Add(0xabc, identity);
  Stats stats;
  BeatSlicer slicer(&plan, &beats, &strings, nullptr, &stats, kPid, &identities);
  ASSERT_TRUE(slicer.enabled());
  auto slice = slicer.Slice(Request(1000, 2000, 0, 2));
  ASSERT_TRUE(slice);
  EXPECT_EQ(slice->kind, MethodIdKind::kString);
  ASSERT_EQ(slice->beats.size(), 2u);
  EXPECT_EQ(slice->names.at(0xabc), "app.py:run");
  EXPECT_FALSE(stats.AnyNonZero());
}

// A stall snapshot's open slice (end = UINT64_MAX: up to the head) may cover the whole ring:
// it is copied a chunk at a time, not into one buffer the size of the ring.
TEST(BeatSlicer, AnOpenSliceOfTheWholeRingIsCopiedInChunks) {
  struct CountingBeats : FakeBeats {
    mutable uint64_t largest = 0, calls = 0;
    uint64_t Copy(uint64_t begin, uint64_t end, std::vector<lt_beat>* out) const override {
      largest = std::max(largest, std::min<uint64_t>(end, ring.size()) - std::min<uint64_t>(begin, ring.size()));
      ++calls;
      return FakeBeats::Copy(begin, end, out);
    }
  };
  AttachPlan plan;
  plan.probes = {Probe(0, Role::kMethodEnter, {Arg("id", 1)}), Probe(1, Role::kMethodExit, {Arg("id", 1)})};
  CountingBeats beats;
  for (uint64_t i = 0; i < 200'000; ++i) beats.ring.push_back(Beat(1000 + i, 5, i % 2, i % 2 == 0));
  Stats stats;
  BeatSlicer slicer(&plan, &beats, nullptr, nullptr, &stats, kPid, nullptr);
  ASSERT_TRUE(slicer.enabled());
  auto slice = slicer.Slice(Request(1000, UINT64_MAX, 0, UINT64_MAX));
  ASSERT_TRUE(slice);
  EXPECT_EQ(slice->beats.size(), 200'000u);
  EXPECT_EQ(slice->beats.back().ts_ns, 1000u + 199'999);
  EXPECT_EQ(slice->overwritten, 0u);
  EXPECT_LE(beats.largest, 64u * 1024);
  EXPECT_EQ(beats.calls, 5u);  // four chunks, then one past the head
}

TEST(BeatSlicer, AnExitTakesTheIdOfItsOpenEnterWhenTheProbesBindDifferentArguments) {
  // CPython: the enter binds file, name and the def line; the exit only file and name (its
  // line is the return's). Their identities differ; the slicer pairs them by the names.
  AttachPlan plan;
  plan.probes = {Probe(0, Role::kMethodEnter,
                       {Arg("file", 0, ArgType::kStr), Arg("name", 1, ArgType::kStr), Arg("line", 2, ArgType::kInt)}),
                 Probe(1, Role::kMethodExit, {Arg("file", 0, ArgType::kStr), Arg("name", 1, ArgType::kStr)})};
  FakeBeats beats;
  // run() calls run() (recursion): the inner exit pairs with the inner enter.
  beats.ring = {Beat(1100, 0xe1, 0, true), Beat(1200, 0xe1, 0, true), Beat(1300, 0xf1, 1, false),
                Beat(1400, 0xf1, 1, false), Beat(1500, 0xf9, 1, false)};
  FakeStrings process;
  StringTable strings(&process);
  IdentityTable identities;
  Identity enter;
  enter.probe_id = 0;
  enter.values = {0x200, 0x100, 12};
  identities.Add(0xe1, enter);
  Identity exit;
  exit.probe_id = 1;
  exit.values = {0x200, 0x100};
  identities.Add(0xf1, exit);
  Identity other;  // an exit of a method never entered in the slice
  other.probe_id = 1;
  other.values = {0x200, 0x300};
  identities.Add(0xf9, other);
  Stats stats;
  BeatSlicer slicer(&plan, &beats, &strings, nullptr, &stats, kPid, &identities);
  auto slice = slicer.Slice(Request(1000, 2000, 0, 5));
  ASSERT_TRUE(slice);
  ASSERT_EQ(slice->beats.size(), 5u);
  for (size_t i = 0; i < 4; ++i) EXPECT_EQ(slice->beats[i].id, 0xe1u) << i;
  EXPECT_EQ(slice->beats[4].id, 0xf9u);
  EXPECT_EQ(slice->names.at(0xe1), "app:run:12");
}

TEST(BeatSlicer, MethodNamesFollowTheRuntimesConventions) {
  ProbeSpec jvm;
  jvm.args = {Arg("class", 1, ArgType::kStr, 2), Arg("name", 3, ArgType::kStr, 4), Arg("sig", 5, ArgType::kStr, 6)};
  EXPECT_EQ(BeatSlicer::ComposeMethodName(jvm, {"java/awt/EventQueue", "dispatchEvent", "(Ljava/awt/AWTEvent;)V"}, {}),
            "java.awt.EventQueue.dispatchEvent(Ljava/awt/AWTEvent;)V");
  ProbeSpec python;
  python.args = {Arg("file", 0, ArgType::kStr), Arg("name", 1, ArgType::kStr), Arg("line", 2, ArgType::kInt)};
  EXPECT_EQ(BeatSlicer::ComposeMethodName(python, {"/usr/lib/python3.11/asyncio/events.py", "_run", std::nullopt},
                                          {0, 0, 78}),
            "asyncio.events:_run:78");
  EXPECT_EQ(BeatSlicer::ComposeMethodName(python, {"/home/me/app.py", "main", std::nullopt}, {0, 0, 3}), "app:main:3");
}

TEST(BeatSlicer, KeepsOnlyTheThreadsBeatsInsideTheSliceAndNamesProbeFlavourBySymbol) {
  AttachPlan plan;
  plan.probes = {Probe(0, Role::kDispatchBegin, {}), Probe(1, Role::kDispatchEnd, {}),
                 Probe(2, Role::kMethodEnter, {}, "ns::Work()"), Probe(3, Role::kMethodExit, {}, "ns::Work()")};
  FakeBeats beats;
  lt_beat other_thread = Beat(1600, 2, 2, true);
  other_thread.tid = 8;
  beats.ring = {Beat(900, 2, 2, true), Beat(1500, 2, 2, true), other_thread, Beat(1800, 2, 3, false)};
  Stats stats;
  BeatSlicer slicer(&plan, &beats, nullptr, nullptr, &stats, kPid);
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
  BeatSlicer slicer(&plan, &beats, nullptr, nullptr, &stats, kPid);
  EXPECT_FALSE(slicer.enabled());
  EXPECT_FALSE(slicer.Slice(Request(1000, 2000, 0, 4)));
}

TEST(EventDecoder, ProbeRecordsCarryArgumentsAndTheBeatHead) {
  AttachPlan plan;
  plan.probes = {Probe(0, Role::kDispatchBegin, {Arg("id", 0), Arg("name", 1, ArgType::kStr)})};
  FakeStrings process;
  StringTable strings(&process);
  Stats stats;
  EventDecoder decoder(&plan, &strings, &stats, kPid);
  std::vector<Event> out;
  decoder.Decode(Record(0, LT_ROLE_DISPATCH_BEGIN, 1000, 42, {5, 0x100}), &out);
  ASSERT_EQ(out.size(), 1u);
  const auto& e = std::get<ProbeEvent>(out[0]);
  EXPECT_EQ(e.role, Role::kDispatchBegin);
  EXPECT_EQ(e.pid, kPid);
  EXPECT_EQ(e.beat_index, 42u);
  EXPECT_EQ(e.Arg("id")->value, 5u);
  EXPECT_EQ(*e.Arg("name")->text, "run");
  EXPECT_FALSE(stats.AnyNonZero());
}

TEST(EventDecoder, SideRecordsFillTheStringAndIdentityTables) {
  AttachPlan plan;
  plan.probes = {Probe(0, Role::kDispatchBegin, {Arg("name", 0, ArgType::kStr)})};
  StringTable strings;
  IdentityTable identities;
  Stats stats;
  EventDecoder decoder(&plan, &strings, &stats, kPid, nullptr, &identities);
  lt_string_record text{};
  text.header = {LT_RECORD_STRING, sizeof(text)};
  text.address = 0x500;
  text.length = 8;
  std::memcpy(text.text, "java/lan", 8);  // length-delimited: no NUL
  decoder.DecodeSide(Bytes(text));
  lt_identity_record identity{};
  identity.header = {LT_RECORD_IDENTITY, sizeof(identity)};
  identity.id = 99;
  identity.probe_id = 0;
  identity.values[0] = 0x500;
  decoder.DecodeSide(Bytes(identity));
  EXPECT_EQ(strings.Lookup(kPid, 0x500), "java/lan");
  ASSERT_TRUE(identities.Find(99));
  EXPECT_EQ(identities.Find(99)->values[0], 0x500u);
  std::vector<Event> out;
  decoder.Decode(Record(0, LT_ROLE_DISPATCH_BEGIN, 1000, 0, {0x500}), &out);
  EXPECT_EQ(*std::get<ProbeEvent>(out[0]).Arg("name")->text, "java/lan");
  EXPECT_FALSE(stats.AnyNonZero());
}

TEST(EventDecoder, MalformedRecordsAreCountedNotDecoded) {
  AttachPlan plan;
  Stats stats;
  EventDecoder decoder(&plan, nullptr, &stats, kPid);
  std::vector<Event> out;
  decoder.DecodeSide(std::vector<uint8_t>{1, 2, 3});
  lt_record_header bogus{99, 8};
  decoder.DecodeSide(Bytes(bogus));
  lt_record unknown{};
  unknown.type = 77;
  decoder.Decode(unknown, &out);
  decoder.Decode(Record(7, LT_ROLE_DISPATCH_BEGIN, 1, 0, {}), &out);  // no probe 7 in the plan
  EXPECT_TRUE(out.empty());
  EXPECT_EQ(stats.Get(StatId::malformed_records), 3u);
  EXPECT_EQ(stats.Get(StatId::unknown_probe_id), 1u);
}

TEST(ProbeConfig, CarriesArgumentsConditionsAndFlagsToBpf) {
  ResolvedProbe p = Probe(3, Role::kMethodEnter, {Arg("class", 1, ArgType::kStr, 2), Arg("name", 3, ArgType::kStr, 4)});
  Condition c;
  c.arg.source = 3;
  c.arg.type = ArgType::kStr;
  c.arg.length_source = 4;
  c.op = CompareOp::kStrPrefix;
  c.pattern = "dispatch";
  p.spec.conditions = {c};
  lt_probe_config config = MakeProbeConfig(p);
  EXPECT_EQ(config.role, LT_ROLE_METHOD_ENTER);
  EXPECT_EQ(config.nargs, 2);
  EXPECT_EQ(config.flags, LT_PROBE_BEAT | LT_PROBE_IDENTITY);
  EXPECT_EQ(config.enter, 1);
  EXPECT_EQ(config.args[0].source, 1);
  EXPECT_EQ(config.args[0].type, LT_ARG_STR);
  EXPECT_EQ(config.args[0].length_source, 2);
  EXPECT_EQ(config.npredicates, 1);
  EXPECT_EQ(config.predicates[0].op, LT_PRED_STR_PREFIX);
  EXPECT_EQ(config.predicates[0].pattern_len, 8);
  EXPECT_EQ(std::string(config.predicates[0].pattern, 8), "dispatch");
  EXPECT_EQ(MakeCookie(p), LT_COOKIE(3, LT_ROLE_METHOD_ENTER));
}

// Which probes watch every thread of the target comes from the role table (LT_ROLES).
TEST(ProbeConfig, RolesOtherThreadsFireAreWatchedOnEveryThread) {
  for (const RoleInfo& info : AllRoles()) {
    SCOPED_TRACE(info.name);
    const lt_probe_config config = MakeProbeConfig(Probe(0, info.role, {}));
    EXPECT_EQ((config.flags & LT_PROBE_ALL_THREADS) != 0, info.all_threads);
  }
  EXPECT_TRUE(MakeProbeConfig(Probe(0, Role::kMessageEnqueue, {})).flags & LT_PROBE_ALL_THREADS);
  EXPECT_FALSE(MakeProbeConfig(Probe(0, Role::kDispatchBegin, {})).flags & LT_PROBE_ALL_THREADS);
}

}  // namespace
}  // namespace looptrace::loader

namespace looptrace::loader {
namespace {

class FakeAddresses : public AddressNamer {
 public:
  std::optional<std::string> Name(uint32_t, uint64_t address) override {
    ++calls;
    if (address == 0x4000) return "on_slow_idle";
    return std::nullopt;
  }
  int calls = 0;
};

TEST(EventDecoder, SymArgumentsAreNamedByTheirFunctionAndFuncByTheProbedSymbol) {
  AttachPlan plan;
  ArgSpec func = Arg("name", kSourceFunction, ArgType::kSym);
  plan.probes = {
      Probe(0, Role::kDispatchBegin, {Arg("name", 1, ArgType::kSym)}, "*(g_idle_funcs+16) = g_idle_dispatch"),
      Probe(1, Role::kDispatchBegin, {Arg("what", 1), func}, "SlowHandler::handleMessage(android::Message const&)")};
  Stats stats;
  FakeAddresses addresses;
  EventDecoder decoder(&plan, nullptr, &stats, kPid, nullptr, nullptr, &addresses);
  std::vector<Event> out;
  decoder.Decode(Record(0, LT_ROLE_DISPATCH_BEGIN, 10, 0, {0x4000}), &out);
  decoder.Decode(Record(0, LT_ROLE_DISPATCH_BEGIN, 20, 0, {0x4000}), &out);  // cached
  decoder.Decode(Record(0, LT_ROLE_DISPATCH_BEGIN, 30, 0, {0x5000}), &out);  // unknown: hex
  decoder.Decode(Record(0, LT_ROLE_DISPATCH_BEGIN, 40, 0, {0}), &out);       // no callback
  decoder.Decode(Record(1, LT_ROLE_DISPATCH_BEGIN, 50, 0, {7}), &out);
  ASSERT_EQ(out.size(), 5u);
  auto name = [&](size_t i) { return std::get<ProbeEvent>(out[i]).Arg("name"); };
  EXPECT_EQ(*name(0)->text, "on_slow_idle");
  EXPECT_TRUE(name(0)->is_string);
  EXPECT_EQ(*name(1)->text, "on_slow_idle");
  EXPECT_EQ(addresses.calls, 2);
  EXPECT_EQ(*name(2)->text, "0x5000");
  EXPECT_FALSE(name(3)->text);
  EXPECT_EQ(*name(4)->text, "SlowHandler::handleMessage");
  EXPECT_EQ(std::get<ProbeEvent>(out[4]).Arg("what")->value, 7u);
  EXPECT_EQ(stats.Get(StatId::method_names_unknown), 1u);
  // func arguments are not read by BPF.
  EXPECT_EQ(MakeProbeConfig(plan.probes[1]).nargs, 1);
}

TEST(EventDecoder, TextArgumentsAreTheLinesFixedText) {
  AttachPlan plan;
  ArgSpec text = Arg("name", kSourceText, ArgType::kStr);
  text.text = "timers";
  plan.probes = {Probe(0, Role::kDispatchBegin, {Arg("what", 0), text}, "node::Environment::RunTimers")};
  Stats stats;
  EventDecoder decoder(&plan, nullptr, &stats, kPid, nullptr, nullptr, nullptr);
  std::vector<Event> out;
  decoder.Decode(Record(0, LT_ROLE_DISPATCH_BEGIN, 10, 0, {9}), &out);
  ASSERT_EQ(out.size(), 1u);
  const auto& e = std::get<ProbeEvent>(out[0]);
  ASSERT_TRUE(e.Arg("name") && e.Arg("name")->text);
  EXPECT_EQ(*e.Arg("name")->text, "timers");
  EXPECT_EQ(e.Arg("what")->value, 9u);
  EXPECT_EQ(MakeProbeConfig(plan.probes[0]).nargs, 1);  // BPF reads only `what`
  EXPECT_FALSE(stats.AnyNonZero());
}

// Callables named "cb<first slot>"; a first slot of 0 names nothing.
class ClosureRuntime : public InterpreterSupport {
 public:
  const std::string& what() const override { return what_; }
  void DescribeLayout(InterpreterBpfConfig*) const override {}
  Result<bool> Locate(InterpreterBpfConfig*) override { return true; }
  std::optional<InterpreterFrame> NameFrame(const lt_interp_frame&, Stats*) override { return std::nullopt; }
  CallableName NameCallable(std::span<const uint64_t> slots, const TargetTextLookup&, Stats*) override {
    ++calls;
    if (!slots[0]) return {};
    return {"cb" + std::to_string(slots[0]), ""};
  }
  std::map<uint32_t, std::vector<InterpreterFrame>> ThreadStacks(Stats*) override { return {}; }
  bool IsInterpreterModule(std::string_view) const override { return false; }
  bool IsInterpreterLoop(std::string_view) const override { return false; }
  bool EndsLoopRun(const lt_interp_frame&) const override { return false; }
  int calls = 0;

 private:
  std::string what_ = "fake";
};

// GLib's callback argument names the message; a callback no symbol covers (pygobject's
// libffi closure) is named by the callable its closure holds, and only then is the closure
// named at all (for a C callback it is any C data).
TEST(EventDecoder, AClosureNamesAMessageWhoseCallbackNoSymbolCovers) {
  AttachPlan plan;
  ArgSpec closure = Arg("closure", 2, ArgType::kPyCallable);
  closure.offset = 8;
  plan.probes = {Probe(0, Role::kDispatchBegin, {Arg("name", 1, ArgType::kSym), closure}, "*(g_idle_funcs+16)")};
  Stats stats;
  FakeAddresses addresses;
  ClosureRuntime runtime;
  EventDecoder decoder(&plan, nullptr, &stats, kPid, nullptr, nullptr, &addresses);
  decoder.SetInterpreter(&runtime, false);
  std::vector<Event> out;
  decoder.Decode(Record(0, LT_ROLE_DISPATCH_BEGIN, 10, 0, {0x4000, 7}), &out);  // a C callback
  decoder.Decode(Record(0, LT_ROLE_DISPATCH_BEGIN, 20, 0, {0x7000, 7}), &out);  // a closure
  decoder.Decode(Record(0, LT_ROLE_DISPATCH_BEGIN, 30, 0, {0x7100, 0}), &out);  // one naming nothing
  ASSERT_EQ(out.size(), 3u);
  auto name = [&](size_t i) { return *std::get<ProbeEvent>(out[i]).Arg("name")->text; };
  EXPECT_EQ(name(0), "on_slow_idle");
  EXPECT_EQ(name(1), "cb7");
  EXPECT_EQ(name(2), "0x7100");
  EXPECT_EQ(runtime.calls, 2);  // not for the C callback
  for (const Event& e : out) EXPECT_FALSE(std::get<ProbeEvent>(e).Arg("closure"));
  EXPECT_EQ(stats.Get(StatId::method_names_unknown), 1u);  // only the unnamed one
  const lt_probe_config config = MakeProbeConfig(plan.probes[0]);
  EXPECT_EQ(config.args[1].type, LT_ARG_PY_CALLABLE);
  EXPECT_EQ(config.args[1].offset_words, 1);
}

}  // namespace
}  // namespace looptrace::loader
