// A time-ordered message queue modelled on android.os.MessageQueue, with its
// native half (nativePollOnce/nativeWake) as an epoll wait on an eventfd.

#ifndef LOOPTRACE_TESTS_SAMPLE_APP_MESSAGE_QUEUE_H_
#define LOOPTRACE_TESTS_SAMPLE_APP_MESSAGE_QUEUE_H_

#include <sys/types.h>

#include <compare>
#include <cstddef>
#include <cstdint>
#include <functional>
#include <map>
#include <memory>
#include <mutex>
#include <optional>
#include <utility>
#include <vector>

namespace looptrace::sample {

class Handler;

// One unit of work for a Looper (android.os.Message). A message without a
// target is a sync barrier; its arg1 holds the barrier token.
struct Message {
  int32_t what = 0;
  int64_t arg1 = 0;
  int64_t arg2 = 0;
  // Must point at static storage (a string literal): profilers read it from
  // the target's memory after the message has finished.
  const char* name = "";
  // Runs instead of Handler::HandleMessage when set.
  std::function<void()> callback;
  Handler* target = nullptr;
  // Asynchronous messages pass sync barriers (vsync/input in Android).
  bool asynchronous = false;
  // When the message is due (CLOCK_MONOTONIC ns); set by the queue.
  uint64_t when_ns = 0;

  bool IsBarrier() const { return target == nullptr; }
};

// Runs when the queue has nothing due (android.os.MessageQueue.IdleHandler).
struct IdleHandler {
  const char* name = "";  // static storage, like Message::name
  // Returns true to stay registered, false to be removed after this run.
  std::function<bool()> queue_idle;
};

class MessageQueue {
 public:
  // Aborts the process if the epoll instance or the eventfd cannot be made.
  MessageQueue();
  ~MessageQueue();
  MessageQueue(const MessageQueue&) = delete;
  MessageQueue& operator=(const MessageQueue&) = delete;

  // Thread-safe. Inserts `msg` due at when_ns, after every message due at the
  // same time (FIFO), and wakes the looper's poll if it is blocked and the
  // message is the new next one. Returns false (dropping the message) when
  // the queue is quitting.
  bool Enqueue(Message msg, uint64_t when_ns);

  // Looper thread only. Polls until a message is due, running IdleHandlers
  // once per call when nothing is due; returns nullopt once quitting.
  std::optional<Message> Next();

  // Thread-safe. While a barrier is the head of the queue only asynchronous
  // messages are delivered. Returns the token for RemoveSyncBarrier.
  int PostSyncBarrier();
  int PostSyncBarrierAt(uint64_t when_ns);
  // Returns false if no barrier has this token (Android throws).
  bool RemoveSyncBarrier(int token);

  // Thread-safe. Returns a registration id for RemoveIdleHandler.
  uint64_t AddIdleHandler(IdleHandler handler);
  bool RemoveIdleHandler(uint64_t registration);

  // Thread-safe. Watches `fd` (readable) in the looper's poll, like
  // Looper.addFd: when it is readable, `callback` runs on the looper thread
  // inside Next(), right after the poll returned (after poll_end), before
  // any message is taken: the way Android delivers vsync and input events.
  // The callback must drain the fd. One callback per fd.
  void AddFd(int fd, std::function<void()> callback);
  void RemoveFd(int fd);

  // The idle_id of the IdleHandler the calling thread is running, or 0.
  static uint64_t CurrentIdleId();

  void RemoveMessages(const Handler* target, int32_t what);
  void RemoveAllMessages(const Handler* target);
  bool HasMessages(const Handler* target, int32_t what) const;
  // True when no message is due now (Android's MessageQueue.isIdle()).
  bool IsIdle() const;
  size_t Size() const;

  // Stops the queue: Next() returns nullopt once the remaining due messages
  // are delivered. safe=false drops every pending message, safe=true only the
  // ones due in the future. Thread-safe; wakes the looper.
  void Quit(bool safe);

 private:
  struct Key {
    uint64_t when_ns;
    uint64_t seq;  // insertion order: FIFO among equal when_ns
    auto operator<=>(const Key&) const = default;
  };
  using MessageMap = std::map<Key, Message>;

  // The message Next() would deliver: the head, or behind a barrier the first
  // asynchronous message. end() if none.
  MessageMap::iterator NextDeliverableLocked();
  // nativePollOnce: waits up to timeout_ns (<0: forever) for a wake.
  void PollOnce(int64_t timeout_ns);
  // nativeWake: writes the eventfd.
  void Wake();

  mutable std::mutex mu_;
  MessageMap messages_;
  uint64_t next_seq_ = 0;
  int next_barrier_token_ = 1;
  bool quitting_ = false;
  // The looper is (about to be) blocked in PollOnce with a non-zero timeout.
  bool blocked_ = false;
  std::vector<std::pair<uint64_t, IdleHandler>> idle_handlers_;
  std::map<int, std::shared_ptr<std::function<void()>>> fd_callbacks_;
  // Post times of the barriers in the queue, by token (for the truth).
  struct BarrierPost {
    pid_t tid;
    uint64_t post_ns, post_after_ns;
  };
  std::map<int, BarrierPost> barrier_posts_;
  uint64_t next_idle_registration_ = 1;

  int epoll_fd_ = -1;
  int wake_fd_ = -1;
};

}  // namespace looptrace::sample

#endif  // LOOPTRACE_TESTS_SAMPLE_APP_MESSAGE_QUEUE_H_
