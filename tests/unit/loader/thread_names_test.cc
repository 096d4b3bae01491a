// Threads named for reports: once each, ahead of the first event that brings them, read
// while they live.
#include "loader/session/thread_names.h"

#include "looptrace/tracers/text_pool.h"

#include <gtest/gtest.h>
#include <pthread.h>
#include <sys/syscall.h>
#include <unistd.h>

#include <future>
#include <map>
#include <thread>
#include <vector>

namespace looptrace::loader {
namespace {

class Collect : public EventSink {
 public:
  void OnEvent(const Event& event) override { events.push_back(event); }
  std::vector<Event> events;
};

ProbeEvent Hit(uint64_t ts, uint32_t tid) {
  ProbeEvent e;
  e.ts_ns = ts;
  e.tid = tid;
  return e;
}

TEST(ThreadNamer, NamesEachThreadOnceBeforeItsFirstEvent) {
  Collect sink;
  std::map<uint32_t, int> reads;
  ThreadNamer namer(sink, [&](uint32_t tid) -> std::string {
    ++reads[tid];
    return tid == 10 ? "gmain" : tid == 11 ? "AWT-EventQueue-0" : "";  // 12 is gone
  });
  namer.OnEvent(Hit(100, 10));
  namer.OnEvent(Hit(200, 10));
  StackSample sample;
  sample.ts_ns = 300;
  sample.tid = 11;
  namer.OnEvent(sample);
  namer.OnEvent(Hit(400, 12));
  namer.OnEvent(SessionEnd{500, "duration", std::nullopt});
  ASSERT_EQ(sink.events.size(), 7u);
  const auto* first = std::get_if<ThreadName>(&sink.events[0]);
  ASSERT_NE(first, nullptr);
  EXPECT_EQ(first->tid, 10u);
  EXPECT_EQ(first->name, "gmain");
  EXPECT_EQ(first->ts_ns, 100u);
  EXPECT_TRUE(std::holds_alternative<ProbeEvent>(sink.events[1]));
  EXPECT_TRUE(std::holds_alternative<ProbeEvent>(sink.events[2]));
  const auto* second = std::get_if<ThreadName>(&sink.events[3]);
  ASSERT_NE(second, nullptr);
  EXPECT_EQ(second->name, "AWT-EventQueue-0");
  EXPECT_TRUE(std::holds_alternative<StackSample>(sink.events[4]));
  EXPECT_TRUE(std::holds_alternative<ProbeEvent>(sink.events[5]));  // 12: no name, no event
  EXPECT_TRUE(std::holds_alternative<SessionEnd>(sink.events[6]));
  EXPECT_EQ(reads, (std::map<uint32_t, int>{{10, 1}, {11, 1}, {12, 1}}));
}

// A JVM names its event dispatch thread a little after the kernel does: the kernel's cut
// name is asked again until the runtime's whole one comes, every half second at most.
TEST(ThreadNamer, AKernelNameOfFifteenBytesIsAskedAgainUntilTheWholeOneComes) {
  Collect sink;
  int reads = 0;
  bool registered = false;
  ThreadNamer namer(sink, [&](uint32_t) -> std::string {
    ++reads;
    return registered ? "AWT-EventQueue-0" : "AWT-EventQueue-";
  });
  namer.OnEvent(Hit(100, 11));
  namer.OnEvent(Hit(200'000'000, 11));  // too soon to ask again
  registered = true;
  namer.OnEvent(Hit(700'000'000, 11));
  namer.OnEvent(Hit(2'000'000'000, 11));  // named whole: never asked again
  std::vector<std::string> names;
  for (const Event& e : sink.events)
    if (const auto* name = std::get_if<ThreadName>(&e)) names.push_back(name->name);
  EXPECT_EQ(names, (std::vector<std::string>{"AWT-EventQueue-", "AWT-EventQueue-0"}));
  EXPECT_EQ(reads, 2);
  EXPECT_EQ(sink.events.size(), 6u);
}

TEST(ThreadNamer, AMonitorReleaseNamesItsHolderByTheWholeNameTheReaderKnows) {
  Collect sink;
  ThreadNamer namer(sink, [&](uint32_t tid) -> std::string {
    return tid == 20 ? "monitor-holder-thread" : tid == 21 ? "lock-holder" : "";  // 22 is gone
  });
  auto release = [](uint32_t tid, std::string_view comm) {
    ProbeEvent e = Hit(100, tid);
    e.role = Role::kLockRelease;
    e.args.push_back({"monitor", 0x1000, nullptr, false});
    e.args.push_back({"thread", tid, TextPool::Intern(comm), true});
    return e;
  };
  namer.OnEvent(release(20, "monitor-holder-"));  // the kernel's 15 bytes
  namer.OnEvent(release(21, "lock-holder"));
  namer.OnEvent(release(22, "worker-7"));
  std::vector<std::string> holders;
  for (const Event& e : sink.events)
    if (const auto* p = std::get_if<ProbeEvent>(&e)) {
      ASSERT_NE(p->Arg("thread"), nullptr);
      EXPECT_EQ(p->Arg("monitor")->value, 0x1000u);
      holders.push_back(*p->Arg("thread")->text);
    }
  EXPECT_EQ(holders, (std::vector<std::string>{"monitor-holder-thread", "lock-holder", "worker-7"}));
}

TEST(ThreadNamer, ReadsALiveThreadsNameFromProc) {
  std::promise<uint32_t> started;
  std::promise<void> read;
  std::thread worker([&] {
    pthread_setname_np(pthread_self(), "lt-namer-test");
    started.set_value(static_cast<uint32_t>(syscall(SYS_gettid)));
    read.get_future().wait();
  });
  const uint32_t tid = started.get_future().get();
  EXPECT_EQ(ThreadNamer::ProcReader(getpid())(tid), "lt-namer-test");
  read.set_value();
  worker.join();
  EXPECT_EQ(ThreadNamer::ProcReader(getpid())(0x3fffffff), "");
}

}  // namespace
}  // namespace looptrace::loader
