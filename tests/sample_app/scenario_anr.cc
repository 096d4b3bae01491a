// ANR scenarios: --count short messages "anr.before" (2 ms of spinning, 5 ms
// apart), then one message that stalls the main thread for --stall-ms
// (default 6000), then --count messages "anr.after", then the looper quits.
// Each writes a truth "stall" record (stall.h) for the stalling span:
//
//   anr-busy      "anr.busy": spins on the CPU             kind "busy"
//   anr-sleep     "anr.sleep": one clock_nanosleep         kind "sleep"
//   anr-lock      "anr.lock": blocks on a pthread mutex held by the thread
//                 "sample-holder" until it releases it     kind "lock"
//   anr-io        "anr.io": 1 MiB pwrite + fsync in a loop to a file in
//                 $TMPDIR (or /tmp), deleted after          kind "io"
//   anr-deadlock  "anr.deadlock": main holds mutex A and waits for B, the
//                 thread "sample-deadlock" holds B and waits for A. Never
//                 ends: the truth is streamed (written and flushed as it is
//                 recorded) and the process only dies of a signal (SIGTERM,
//                 SIGKILL).                                kind "deadlock"

#include <fcntl.h>
#include <pthread.h>
#include <unistd.h>

#include <atomic>
#include <condition_variable>
#include <cstdint>
#include <cstdlib>
#include <cstring>
#include <latch>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

#include "looper.h"
#include "scenario.h"
#include "stall.h"
#include "sys_util.h"
#include "truth.h"
#include "work.h"

namespace looptrace::sample {
namespace {

constexpr uint64_t kShortWorkNs = 2 * kNsPerMs;
constexpr uint64_t kGapNs = 5 * kNsPerMs;
constexpr uint64_t kDefaultStallMs = 6000;

class StallScenarioBase : public Scenario {
 public:
  void Start(const ScenarioContext& ctx) override {
    handler_ = ctx.main_handler;
    looper_ = ctx.main_looper;
    count_ = ctx.count;
    stall_ns_ = ctx.stall_ms.value_or(kDefaultStallMs) * kNsPerMs;
    Prepare();
    Schedule(0, ctx.start_ns);
  }

 protected:
  virtual const char* StallName() const = 0;
  // Runs inside the stalling message; records the stall.
  virtual void Stall(uint64_t stall_ns) = 0;
  // Before the first message is posted (main thread).
  virtual void Prepare() {}

 private:
  // Steps 0..n-1: anr.before; n: the stall; n+1..2n: anr.after.
  void Schedule(uint64_t index, uint64_t due_ns) {
    const char* name = index < count_ ? "anr.before" : index == count_ ? StallName() : "anr.after";
    handler_->PostAtTime(
        name, [this, index] { Run(index); }, due_ns);
  }

  void Run(uint64_t index) {
    if (index == count_) {
      Stall(stall_ns_);
    } else {
      SpinFor(kShortWorkNs);
    }
    if (index == 2 * count_) {
      looper_->Quit();
    } else {
      Schedule(index + 1, NowNs() + kGapNs);
    }
  }

  Handler* handler_ = nullptr;
  Looper* looper_ = nullptr;
  uint64_t count_ = 0;
  uint64_t stall_ns_ = 0;
};

class AnrBusyScenario : public StallScenarioBase {
 protected:
  const char* StallName() const override { return "anr.busy"; }
  void Stall(uint64_t stall_ns) override {
    const uint64_t begin_ns = NowNs();
    SpinUntil(begin_ns + stall_ns);
    const uint64_t end_ns = NowNs();
    TruthRecorder::Global().RecordLine(StallLine("busy", begin_ns, stall_ns).U("end_ns", end_ns).Take());
  }
};

class AnrSleepScenario : public StallScenarioBase {
 protected:
  const char* StallName() const override { return "anr.sleep"; }
  void Stall(uint64_t stall_ns) override {
    const uint64_t begin_ns = NowNs();
    SleepUntil(begin_ns + stall_ns);
    const uint64_t end_ns = NowNs();
    TruthRecorder::Global().RecordLine(StallLine("sleep", begin_ns, stall_ns).U("end_ns", end_ns).Take());
  }
};

class AnrLockScenario : public StallScenarioBase {
 public:
  int Finish() override {
    if (holder_.joinable()) holder_.join();
    return 0;
  }

 protected:
  const char* StallName() const override { return "anr.lock"; }

  void Prepare() override {
    holder_ = std::thread([this] {
      pthread_setname_np(pthread_self(), "sample-holder");
      pthread_mutex_lock(&lock_);
      const uint64_t locked_ns = NowNs();
      std::unique_lock state(state_mu_);
      holder_tid_ = CurrentTid();
      holder_lock_ns_ = locked_ns;
      state_cv_.notify_all();
      // Holds the lock until the main thread has waited for it stall_ns.
      state_cv_.wait(state, [this] { return wait_begin_ns_ != 0; });
      const uint64_t release_ns = wait_begin_ns_ + stall_ns_;
      state.unlock();
      SleepUntil(release_ns);
      holder_unlock_ns_.store(NowNs());
      pthread_mutex_unlock(&lock_);
    });
    std::unique_lock state(state_mu_);
    state_cv_.wait(state, [this] { return holder_tid_ != 0; });
  }

  void Stall(uint64_t stall_ns) override {
    stall_ns_ = stall_ns;
    const uint64_t begin_ns = NowNs();
    {
      std::lock_guard state(state_mu_);
      wait_begin_ns_ = begin_ns;
    }
    state_cv_.notify_all();
    pthread_mutex_lock(&lock_);
    const uint64_t end_ns = NowNs();
    pthread_mutex_unlock(&lock_);
    TruthRecorder::Global().RecordLine(StallLine("lock", begin_ns, stall_ns)
                                           .U("end_ns", end_ns)
                                           .I("holder_tid", holder_tid_)
                                           .U("holder_lock_ns", holder_lock_ns_)
                                           .U("holder_unlock_ns", holder_unlock_ns_.load())
                                           .Take());
  }

 private:
  pthread_mutex_t lock_ = PTHREAD_MUTEX_INITIALIZER;
  std::mutex state_mu_;
  std::condition_variable state_cv_;
  pid_t holder_tid_ = 0;
  uint64_t holder_lock_ns_ = 0;
  uint64_t wait_begin_ns_ = 0;
  uint64_t stall_ns_ = 0;
  std::atomic<uint64_t> holder_unlock_ns_{0};
  std::thread holder_;
};

class AnrIoScenario : public StallScenarioBase {
 protected:
  static constexpr size_t kChunk = 1 << 20;
  static constexpr uint64_t kFileChunks = 64;  // the file stays <= 64 MiB

  const char* StallName() const override { return "anr.io"; }

  void Prepare() override {
    const char* tmp = std::getenv("TMPDIR");
    path_ = std::string(tmp != nullptr && *tmp != '\0' ? tmp : "/tmp") + "/looptrace-sample-io-" +
            std::to_string(getpid()) + ".dat";
    buffer_.assign(kChunk, 0);
    for (size_t i = 0; i < kChunk; ++i) buffer_[i] = static_cast<char>(i * 131 + 7);
  }

  void Stall(uint64_t stall_ns) override {
    const uint64_t begin_ns = NowNs();
    const int fd = open(path_.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0600);
    uint64_t writes = 0, fsyncs = 0, bytes = 0;
    if (fd >= 0) {
      while (NowNs() < begin_ns + stall_ns) {
        // Each chunk differs from the last so the page cache has real work.
        buffer_[writes % kChunk] ^= 1;
        const ssize_t n = pwrite(fd, buffer_.data(), kChunk, static_cast<off_t>((writes % kFileChunks) * kChunk));
        if (n < 0) break;
        bytes += static_cast<uint64_t>(n);
        ++writes;
        if (fsync(fd) == 0) ++fsyncs;
      }
      close(fd);
      unlink(path_.c_str());
    } else {
      std::fprintf(stderr, "looptrace-sample-app: cannot create %s: %s\n", path_.c_str(), std::strerror(errno));
    }
    const uint64_t end_ns = NowNs();
    TruthRecorder::Global().RecordLine(StallLine("io", begin_ns, stall_ns)
                                           .U("end_ns", end_ns)
                                           .S("path", path_.c_str())
                                           .U("writes", writes)
                                           .U("fsyncs", fsyncs)
                                           .U("bytes", bytes)
                                           .Take());
  }

 private:
  std::string path_;
  std::vector<char> buffer_;
};

class AnrDeadlockScenario : public StallScenarioBase {
 protected:
  const char* StallName() const override { return "anr.deadlock"; }

  void Prepare() override {
    // Nothing after the deadlock is ever written at exit: stream the truth.
    TruthRecorder::Global().StartStreaming();
    std::thread([this] {
      pthread_setname_np(pthread_self(), "sample-deadlock");
      worker_tid_.store(CurrentTid());
      std::unique_lock start(start_mu_);
      start_cv_.wait(start, [this] { return started_; });
      start.unlock();
      pthread_mutex_lock(&lock_b_);
      both_hold_first_.arrive_and_wait();
      pthread_mutex_lock(&lock_a_);  // never returns
      pthread_mutex_unlock(&lock_a_);
      pthread_mutex_unlock(&lock_b_);
    }).detach();
    while (worker_tid_.load() == 0) SleepFor(kNsPerMs);
  }

  void Stall(uint64_t stall_ns) override {
    pthread_mutex_lock(&lock_a_);
    {
      std::lock_guard start(start_mu_);
      started_ = true;
    }
    start_cv_.notify_all();
    both_hold_first_.arrive_and_wait();
    const uint64_t begin_ns = NowNs();
    TruthRecorder::Global().RecordLine(StallLine("deadlock", begin_ns, stall_ns)
                                           .I("main_tid", CurrentTid())
                                           .I("worker_tid", worker_tid_.load())
                                           .I("holder_tid", worker_tid_.load())
                                           .Take());
    pthread_mutex_lock(&lock_b_);  // never returns
    pthread_mutex_unlock(&lock_b_);
    pthread_mutex_unlock(&lock_a_);
  }

 private:
  pthread_mutex_t lock_a_ = PTHREAD_MUTEX_INITIALIZER;
  pthread_mutex_t lock_b_ = PTHREAD_MUTEX_INITIALIZER;
  std::mutex start_mu_;
  std::condition_variable start_cv_;
  bool started_ = false;
  std::latch both_hold_first_{2};
  std::atomic<pid_t> worker_tid_{0};
};

}  // namespace

LOOPTRACE_SAMPLE_SCENARIO(AnrBusyScenario, "anr-busy",
                          "--count 2 ms messages (default 5), one message anr.busy spinning "
                          "--stall-ms (default 6000), --count more; ~6.1 s",
                          5);
LOOPTRACE_SAMPLE_SCENARIO(AnrSleepScenario, "anr-sleep",
                          "like anr-busy, the stalling message anr.sleep sleeps --stall-ms "
                          "(default 6000)",
                          5);
LOOPTRACE_SAMPLE_SCENARIO(AnrLockScenario, "anr-lock",
                          "like anr-busy, the message anr.lock waits --stall-ms (default 6000) for a "
                          "mutex held by the thread sample-holder",
                          5);
LOOPTRACE_SAMPLE_SCENARIO(AnrIoScenario, "anr-io",
                          "like anr-busy, the message anr.io writes 1 MiB + fsync in a loop to a "
                          "file in $TMPDIR for --stall-ms (default 6000)",
                          5);
LOOPTRACE_SAMPLE_SCENARIO(AnrDeadlockScenario, "anr-deadlock",
                          "--count 2 ms messages (default 5), then anr.deadlock: main and "
                          "sample-deadlock deadlock on two mutexes; never ends (kill it), truth "
                          "streamed",
                          5);

}  // namespace looptrace::sample
