// `churn`: process and thread churn around a traced looper, for fault tests
// (scripts/faults.sh). For --count ms, a helper thread repeatedly forks a child that
// exits at once, forks a child that execs /bin/true, posix_spawns /bin/true, and starts
// and joins a thread, as fast as it can; meanwhile the main looper dispatches
// "churn.tick" messages of 200 us busy work every ms (each has its usual truth record).
// The truth file also gets {"type":"churn","forks":N,"execs":N,"spawns":N,"threads":N}.

#include <spawn.h>
#include <sys/wait.h>
#include <unistd.h>

#include <atomic>
#include <cstdint>
#include <thread>

#include "looper.h"
#include "scenario.h"
#include "sys_util.h"
#include "truth.h"
#include "work.h"

extern char** environ;

namespace looptrace::sample {
namespace {

class ChurnScenario : public Scenario {
 public:
  void Start(const ScenarioContext& ctx) override {
    handler_ = ctx.main_handler;
    looper_ = ctx.main_looper;
    end_ns_ = ctx.start_ns + ctx.count * kNsPerMs;
    next_ns_ = ctx.start_ns;
    churner_ = std::thread([this] { Churn(); });
    PostNext();
  }

  int Finish() override {
    stop_.store(true);
    churner_.join();
    TruthRecorder::Global().RecordLine(
        JsonLine("churn").U("forks", forks_).U("execs", execs_).U("spawns", spawns_).U("threads", threads_).Take());
    return failures_ == 0 ? 0 : 1;
  }

 private:
  void PostNext() {
    handler_->PostAtTime(
        "churn.tick", [this] { Tick(); }, next_ns_);
  }

  void Tick() {
    SpinFor(200 * 1000);
    next_ns_ += kNsPerMs;
    if (next_ns_ >= end_ns_) {
      looper_->Quit();
    } else {
      PostNext();
    }
  }

  void Churn() {
    char true_path[] = "/bin/true";
    char* argv[] = {true_path, nullptr};
    while (!stop_.load()) {
      if (pid_t p = fork(); p == 0) {
        _exit(0);
      } else if (p > 0) {
        waitpid(p, nullptr, 0);
        ++forks_;
      } else {
        ++failures_;
      }
      if (pid_t p = fork(); p == 0) {
        execv(true_path, argv);
        _exit(127);
      } else if (p > 0) {
        int status = 0;
        waitpid(p, &status, 0);
        if (WIFEXITED(status) && WEXITSTATUS(status) == 0)
          ++execs_;
        else
          ++failures_;
      }
      pid_t child = 0;
      if (posix_spawn(&child, true_path, nullptr, nullptr, argv, environ) == 0) {
        waitpid(child, nullptr, 0);
        ++spawns_;
      } else {
        ++failures_;
      }
      for (int i = 0; i < 10; ++i) {
        std::thread([] {}).join();
        ++threads_;
      }
    }
  }

  Handler* handler_ = nullptr;
  Looper* looper_ = nullptr;
  uint64_t end_ns_ = 0;
  uint64_t next_ns_ = 0;
  std::thread churner_;
  std::atomic<bool> stop_{false};
  uint64_t forks_ = 0, execs_ = 0, spawns_ = 0, threads_ = 0, failures_ = 0;
};

}  // namespace

LOOPTRACE_SAMPLE_SCENARIO(ChurnScenario, "churn",
                          "for --count ms (default 3000): a helper thread forks, execs, posix_spawns and starts "
                          "threads as fast as it can while the main looper runs 200 us messages every ms",
                          3000);

}  // namespace looptrace::sample
