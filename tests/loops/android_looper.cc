// An android::Looper (Debian's android-libutils: AOSP's libutils) program that writes its own
// truth (for tests/integration/loops_test.cc):
//   looptrace-android-looper [--truth FILE] [--messages N] [--slow-ms MS] [--start-delay-ms MS]
//   looptrace-android-looper --bench N [--work-us W]   (bench/loop_overhead.cc: N messages,
//   each posted and then handled by one pollOnce)
// The main thread prepares a Looper and posts N native messages 8 ms apart to TickHandler
// (0.2 ms of work each), one of them, halfway, to SlowHandler (MS of work). A helper thread
// writes to two pipes now and then: one watched by a LooperCallback subclass (PipeCallback),
// one by a plain function (through libutils' SimpleLooperCallback). The loop itself is what
// Android's MessageQueue.next() does: pollOnce(timeout) until a "Java" message is due, then
// run it between two pollOnce calls (JavaMessage, 0.5 ms, every 20 ms, at least 12). Native handlers and
// fd callbacks run inside pollOnce; Java messages after it returns. Every piece of work
// records begin and end (CLOCK_MONOTONIC) in the truth file: {"type":"native"|"java",...}.
#include <sys/syscall.h>
#include <unistd.h>
#include <utils/Looper.h>

#include <atomic>
#include <cstring>
#include <thread>

#include "truth.h"

using android::Looper;
using android::LooperCallback;
using android::Message;
using android::MessageHandler;
using android::sp;

// Handler classes at namespace scope, so their names read as in the truth file
// (in an anonymous namespace, looptrace names them "(anonymous namespace)::TickHandler::...").
truth_log truth;
uint64_t slow_ns = 120'000'000;
int handled = 0, java_messages = 0;

class TickHandler : public MessageHandler {
 public:
  void handleMessage(const Message&) override {
    uint64_t begin = truth_now_ns();
    truth_spin_ns(200'000);
    ++handled;
    truth_add(&truth, "native", "TickHandler::handleMessage", begin, truth_now_ns());
  }
};

class SlowHandler : public MessageHandler {
 public:
  void handleMessage(const Message&) override {
    uint64_t begin = truth_now_ns();
    truth_spin_ns(slow_ns);
    ++handled;
    truth_add(&truth, "native", "SlowHandler::handleMessage", begin, truth_now_ns());
  }
};

class PipeCallback : public LooperCallback {
 public:
  int handleEvent(int fd, int, void*) override {
    uint64_t begin = truth_now_ns();
    char buffer[16];
    if (read(fd, buffer, sizeof(buffer)) < 0) perror("read");
    truth_spin_ns(300'000);
    truth_add(&truth, "native", "PipeCallback::handleEvent", begin, truth_now_ns());
    return 1;  // keep watching
  }
};

int OnWakeFd(int fd, int, void*) {
  uint64_t begin = truth_now_ns();
  char buffer[16];
  if (read(fd, buffer, sizeof(buffer)) < 0) perror("read");
  truth_spin_ns(150'000);
  truth_add(&truth, "native", "android::SimpleLooperCallback::handleEvent", begin, truth_now_ns());
  return 1;
}

class BenchHandler : public MessageHandler {
 public:
  explicit BenchHandler(uint64_t work_ns) : work_ns_(work_ns) {}
  void handleMessage(const Message&) override { truth_spin_ns(work_ns_); }

 private:
  uint64_t work_ns_;
};

int Bench(int iterations, uint64_t work_ns) {
  sp<Looper> looper = Looper::prepare(0);
  sp<MessageHandler> handler = new BenchHandler(work_ns);
  const uint64_t begin = truth_now_ns();
  for (int i = 0; i < iterations; ++i) {
    looper->sendMessage(handler, Message(i));
    looper->pollOnce(-1);
  }
  printf("loop_ns=%llu iterations=%d\n", static_cast<unsigned long long>(truth_now_ns() - begin), iterations);
  return 0;
}

namespace {

// A "Java" message: work Android's Looper.loop() runs between two nativePollOnce calls.
void JavaMessage() {
  uint64_t begin = truth_now_ns();
  truth_spin_ns(500'000);
  ++java_messages;
  truth_add(&truth, "java", "JavaMessage", begin, truth_now_ns());
}

}  // namespace

int main(int argc, char** argv) {
  const char* truth_path = nullptr;
  int messages = 24, start_delay_ms = 0, bench = 0;
  uint64_t work_ns = 0;
  for (int i = 1; i + 1 < argc; i += 2) {
    if (!strcmp(argv[i], "--truth"))
      truth_path = argv[i + 1];
    else if (!strcmp(argv[i], "--messages"))
      messages = atoi(argv[i + 1]);
    else if (!strcmp(argv[i], "--slow-ms"))
      slow_ns = strtoull(argv[i + 1], nullptr, 10) * 1'000'000ull;
    else if (!strcmp(argv[i], "--start-delay-ms"))
      start_delay_ms = atoi(argv[i + 1]);
    else if (!strcmp(argv[i], "--bench"))
      bench = atoi(argv[i + 1]);
    else if (!strcmp(argv[i], "--work-us"))
      work_ns = strtoull(argv[i + 1], nullptr, 10) * 1000ull;
    else {
      fprintf(stderr, "usage: %s [--truth FILE] [--messages N] [--slow-ms MS] [--start-delay-ms MS]\n", argv[0]);
      return 2;
    }
  }
  if (start_delay_ms) usleep(static_cast<useconds_t>(start_delay_ms) * 1000);
  if (bench > 0) return Bench(bench, work_ns);

  sp<Looper> looper = Looper::prepare(0);
  sp<MessageHandler> tick = new TickHandler, slow = new SlowHandler;
  const nsecs_t start = systemTime(SYSTEM_TIME_MONOTONIC);
  for (int i = 0; i < messages; ++i)
    looper->sendMessageAtTime(start + ms2ns(8 * (i + 1)), i == messages / 2 ? slow : tick, Message(i));

  int pipe_a[2], pipe_b[2];
  if (pipe(pipe_a) != 0 || pipe(pipe_b) != 0) return 1;
  looper->addFd(pipe_a[0], Looper::POLL_CALLBACK, Looper::EVENT_INPUT, sp<LooperCallback>(new PipeCallback), nullptr);
  looper->addFd(pipe_b[0], Looper::POLL_CALLBACK, Looper::EVENT_INPUT, OnWakeFd, nullptr);
  std::atomic<bool> stop{false};
  std::thread writer([&] {
    for (int i = 0; !stop; ++i) {
      usleep(27'000);
      if (write(i % 2 ? pipe_b[1] : pipe_a[1], "x", 1) != 1) perror("write");
    }
  });

  // Android's MessageQueue.next(): poll (until the next Java message is due), then run it.
  nsecs_t next_java = start + ms2ns(20);
  while (handled < messages || java_messages < 12) {
    const nsecs_t now = systemTime(SYSTEM_TIME_MONOTONIC);
    if (now >= next_java) {
      looper->pollOnce(0);  // nativePollOnce(ptr, 0): what is due natively first
      JavaMessage();
      next_java += ms2ns(20);
      continue;
    }
    looper->pollOnce(static_cast<int>(toMillisecondTimeoutDelay(now, next_java)));
  }
  looper->pollOnce(0);  // the loop goes on polling: the last Java message's iteration ends
  stop = true;
  writer.join();
  return truth_write(&truth, truth_path, syscall(SYS_gettid));
}
