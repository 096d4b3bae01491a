// Stalls that are not (or not yet) ANRs:
//
//   idle-stall    --count messages "stall.before" (2 ms, 5 ms apart), then an
//                 IdleHandler "idle.stall" that spins --stall-ms (default
//                 3000), then --count messages "stall.after".
//                 Truth: stall kind "idle_handler" with idle_id (msg_id 0).
//   input-lag     --count input events (default 40) at 10 Hz, each handled in
//                 0.5 ms, except seq 10, whose handling spins --stall-ms
//                 (default 3000). Truth: one "input" record per event and a
//                 stall kind "input" with seq.
//   barrier-leak  "leak.start" posts a sync barrier that stays --stall-ms
//                 (default 3000). Meanwhile the thread sample-poster posts a
//                 synchronous "leak.sync" every 100 ms (they starve) and an
//                 asynchronous "leak.async" every 250 ms (they run). Then the
//                 asynchronous "leak.remove" removes the barrier, the
//                 starved messages run, and "leak.done" quits. Truth: stall
//                 kind "barrier_leak" with token, sync_waited, async_ran.
//   idle-long     "idle.before" (1 ms), then nothing for --stall-ms (default
//                 10000): the looper waits in one epoll_wait(-1) until
//                 sample-poster posts "idle.after". Truth: one "idle_span"
//                 record (not a stall).

#include <algorithm>
#include <cstdint>
#include <memory>
#include <vector>

#include "input.h"
#include "looper.h"
#include "message_chain.h"
#include "scenario.h"
#include "stall.h"
#include "sys_util.h"
#include "truth.h"
#include "work.h"

namespace looptrace::sample {
namespace {

constexpr uint64_t kShortWorkNs = 2 * kNsPerMs;
constexpr uint64_t kGapNs = 5 * kNsPerMs;

// ----------------------------------------------------------------- idle-stall

class IdleStallScenario : public Scenario {
 public:
  void Start(const ScenarioContext& ctx) override {
    handler_ = ctx.main_handler;
    looper_ = ctx.main_looper;
    count_ = ctx.count;
    stall_ns_ = ctx.stall_ms.value_or(3000) * kNsPerMs;
    Schedule(0, ctx.start_ns);
  }

 private:
  void Schedule(uint64_t index, uint64_t due_ns) {
    handler_->PostAtTime(
        index < count_ ? "stall.before" : "stall.after", [this, index] { Run(index); }, due_ns);
  }

  void Run(uint64_t index) {
    SpinFor(kShortWorkNs);
    if (index + 1 == count_) {
      // Runs once, as soon as the queue is idle (the next message is 5 ms away).
      looper_->queue().AddIdleHandler({"idle.stall", [this] {
                                         const uint64_t begin_ns = NowNs();
                                         SpinUntil(begin_ns + stall_ns_);
                                         const uint64_t end_ns = NowNs();
                                         TruthRecorder::Global().RecordLine(
                                             StallLine("idle_handler", begin_ns, stall_ns_)
                                                 .U("end_ns", end_ns)
                                                 .U("idle_id", MessageQueue::CurrentIdleId())
                                                 .Take());
                                         return false;
                                       }});
    }
    if (index + 1 == 2 * count_) {
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

// ------------------------------------------------------------------ input-lag

class InputLagScenario : public Scenario {
 public:
  static constexpr uint64_t kLagSeq = 10;
  static constexpr uint64_t kPeriodNs = 100 * kNsPerMs;  // 10 Hz

  void Start(const ScenarioContext& ctx) override {
    looper_ = ctx.main_looper;
    handler_ = ctx.main_handler;
    count_ = ctx.count;
    stall_ns_ = ctx.stall_ms.value_or(3000) * kNsPerMs;
    channel_ = std::make_unique<InputChannel>(looper_, [this](uint64_t seq) { Handle(seq); });
    channel_->Start(ctx.start_ns + kPeriodNs, kPeriodNs, count_);
  }

  int Finish() override {
    channel_.reset();
    return 0;
  }

 private:
  void Handle(uint64_t seq) {
    if (seq == kLagSeq) {
      const uint64_t begin_ns = NowNs();
      SpinUntil(begin_ns + stall_ns_);
      const uint64_t end_ns = NowNs();
      TruthRecorder::Global().RecordLine(
          StallLine("input", begin_ns, stall_ns_).U("end_ns", end_ns).U("seq", seq).Take());
    } else {
      SpinFor(500 * kNsPerUs);
    }
    if (seq == count_) handler_->Post("input.done", [this] { looper_->Quit(); });
  }

  Looper* looper_ = nullptr;
  Handler* handler_ = nullptr;
  uint64_t count_ = 0;
  uint64_t stall_ns_ = 0;
  std::unique_ptr<InputChannel> channel_;
};

// --------------------------------------------------------------- barrier-leak

class BarrierLeakScenario : public Scenario {
 public:
  static constexpr uint64_t kSyncPeriodNs = 100 * kNsPerMs;
  static constexpr uint64_t kAsyncPeriodNs = 250 * kNsPerMs;

  void Start(const ScenarioContext& ctx) override {
    looper_ = ctx.main_looper;
    handler_ = ctx.main_handler;
    async_handler_ = std::make_unique<Handler>(looper_, /*async=*/true);
    stall_ns_ = ctx.stall_ms.value_or(3000) * kNsPerMs;
    handler_->PostAtTime(
        "leak.start", [this] { Leak(); }, ctx.start_ns);
  }

  int Finish() override {
    poster_.Stop();
    async_handler_.reset();
    return 0;
  }

 private:
  void Leak() {
    begin_ns_ = NowNs();
    token_ = looper_->queue().PostSyncBarrier();
    start_msg_id_ = Looper::CurrentMessageId();
    // Posts in time order (the poster handles its requests in order).
    struct Post {
      uint64_t when_ns;
      bool async;
    };
    std::vector<Post> posts;
    for (uint64_t t = kSyncPeriodNs; t < stall_ns_; t += kSyncPeriodNs) {
      posts.push_back({begin_ns_ + t, false});
    }
    for (uint64_t t = kAsyncPeriodNs; t < stall_ns_; t += kAsyncPeriodNs) {
      posts.push_back({begin_ns_ + t, true});
    }
    std::stable_sort(posts.begin(), posts.end(), [](const Post& a, const Post& b) { return a.when_ns < b.when_ns; });
    for (const Post& post : posts) {
      if (post.async) {
        poster_.PostAt(
            async_handler_.get(), "leak.async",
            [this] {
              ++async_ran_;
              SpinFor(500 * kNsPerUs);
            },
            post.when_ns);
      } else {
        poster_.PostAt(
            handler_, "leak.sync",
            [this] {
              ++(removed_ ? sync_after_ : sync_before_);
              SpinFor(500 * kNsPerUs);
            },
            post.when_ns);
      }
    }
    poster_.PostAt(
        async_handler_.get(), "leak.remove", [this] { Remove(); }, begin_ns_ + stall_ns_);
  }

  void Remove() {
    end_ns_ = NowNs();
    looper_->queue().RemoveSyncBarrier(token_);
    removed_ = true;
    // Due now: runs after the starved messages, which were due earlier.
    handler_->Post("leak.done", [this] {
      TruthRecorder::Global().RecordLine(JsonLine("stall")
                                             .S("kind", "barrier_leak")
                                             .I("tid", CurrentTid())
                                             .U("msg_id", start_msg_id_)
                                             .U("begin_ns", begin_ns_)
                                             .U("planned_ns", stall_ns_)
                                             .U("end_ns", end_ns_)
                                             .U("token", static_cast<uint64_t>(token_))
                                             .U("sync_waited", sync_after_)
                                             .U("sync_ran_during", sync_before_)
                                             .U("async_ran", async_ran_)
                                             .Take());
      looper_->Quit();
    });
  }

  Looper* looper_ = nullptr;
  Handler* handler_ = nullptr;
  std::unique_ptr<Handler> async_handler_;
  RemotePoster poster_;
  uint64_t stall_ns_ = 0;
  uint64_t begin_ns_ = 0, end_ns_ = 0;
  uint64_t start_msg_id_ = 0;
  int token_ = 0;
  bool removed_ = false;
  uint64_t sync_before_ = 0, sync_after_ = 0, async_ran_ = 0;
};

// ------------------------------------------------------------------ idle-long

class IdleLongScenario : public Scenario {
 public:
  void Start(const ScenarioContext& ctx) override {
    looper_ = ctx.main_looper;
    handler_ = ctx.main_handler;
    idle_ns_ = ctx.stall_ms.value_or(10000) * kNsPerMs;
    handler_->PostAtTime(
        "idle.before",
        [this] {
          SpinFor(kNsPerMs);
          begin_ns_ = NowNs();
          poster_.PostAt(
              handler_, "idle.after",
              [this] {
                const uint64_t end_ns = NowNs();
                TruthRecorder::Global().RecordLine(JsonLine("idle_span")
                                                       .I("tid", CurrentTid())
                                                       .U("begin_ns", begin_ns_)
                                                       .U("end_ns", end_ns)
                                                       .U("planned_ns", idle_ns_)
                                                       .Take());
                SpinFor(kNsPerMs);
                looper_->Quit();
              },
              begin_ns_ + idle_ns_);
        },
        ctx.start_ns);
  }

  int Finish() override {
    poster_.Stop();
    return 0;
  }

 private:
  Looper* looper_ = nullptr;
  Handler* handler_ = nullptr;
  RemotePoster poster_;
  uint64_t idle_ns_ = 0;
  uint64_t begin_ns_ = 0;
};

}  // namespace

LOOPTRACE_SAMPLE_SCENARIO(IdleStallScenario, "idle-stall",
                          "--count 2 ms messages (default 5), an IdleHandler idle.stall spinning "
                          "--stall-ms (default 3000), --count more; ~3.1 s",
                          5);
LOOPTRACE_SAMPLE_SCENARIO(InputLagScenario, "input-lag",
                          "--count input events (default 40) at 10 Hz handled in 0.5 ms, except "
                          "seq 10 which takes --stall-ms (default 3000); ~4.1 s",
                          40);
LOOPTRACE_SAMPLE_SCENARIO(BarrierLeakScenario, "barrier-leak",
                          "a sync barrier stays --stall-ms (default 3000): sync messages starve "
                          "(every 100 ms), async ones run (every 250 ms), then it is removed",
                          1);
LOOPTRACE_SAMPLE_SCENARIO(IdleLongScenario, "idle-long",
                          "one message, then the looper idles in epoll_wait(-1) for --stall-ms "
                          "(default 10000), then one message; not an ANR",
                          1);

}  // namespace looptrace::sample
