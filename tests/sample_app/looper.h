// Looper, Handler and HandlerThread modelled on android.os. A Looper owns a
// MessageQueue and dispatches its messages on one thread, firing the
// dispatch hooks, the USDT probes and the truth record around each one.

#ifndef LOOPTRACE_TESTS_SAMPLE_APP_LOOPER_H_
#define LOOPTRACE_TESTS_SAMPLE_APP_LOOPER_H_

#include <sys/types.h>

#include <condition_variable>
#include <cstdint>
#include <functional>
#include <memory>
#include <mutex>
#include <string>
#include <thread>

#include "message_queue.h"

namespace looptrace::sample {

class Looper {
 public:
  // Creates the calling thread's looper if it has none; returns it.
  static Looper* Prepare();
  // Prepare() and remember the result as the main looper.
  static Looper* PrepareMainLooper();
  // The calling thread's looper, or nullptr.
  static Looper* MyLooper();
  static Looper* MainLooper();

  Looper(const Looper&) = delete;
  Looper& operator=(const Looper&) = delete;

  // Dispatches messages until the queue quits. Owning thread only.
  void Loop();
  // Thread-safe. Quit drops pending messages; QuitSafely still delivers the
  // ones already due.
  void Quit() { queue_.Quit(/*safe=*/false); }
  void QuitSafely() { queue_.Quit(/*safe=*/true); }

  // The msg_id of the message the calling thread is dispatching, or 0.
  static uint64_t CurrentMessageId();
  // Counts instrumented method calls made in the calling thread's current
  // message: its truth record gets "method_calls" (even 0) once this was
  // called during it. No-op outside a message.
  static void AddMethodCalls(uint64_t calls);

  MessageQueue& queue() { return queue_; }
  pid_t tid() const { return tid_; }
  bool IsCurrentThread() const;

 private:
  friend class HandlerThread;

  Looper();
  // Takes the calling thread's looper away from its thread_local slot.
  static std::unique_ptr<Looper> ReleaseMyLooper();
  void Dispatch(Message& msg);

  MessageQueue queue_;
  const pid_t tid_;
};

// Posts messages to a Looper and handles them on its thread. Subclasses may
// override HandleMessage for messages without a callback.
class Handler {
 public:
  // async=true marks every message from this handler asynchronous
  // (Android's Handler.createAsync).
  explicit Handler(Looper* looper, bool async = false);
  // Removes this handler's pending messages. A Handler must not outlive its
  // Looper.
  virtual ~Handler();
  Handler(const Handler&) = delete;
  Handler& operator=(const Handler&) = delete;

  virtual void HandleMessage(Message& msg);
  // Runs msg.callback if set, else HandleMessage.
  void DispatchMessage(Message& msg);

  // A message targeting this handler. `name` must be static storage.
  Message Obtain(int32_t what, const char* name) const;
  Message Obtain(const char* name, std::function<void()> callback) const;

  // All thread-safe; false if the looper is quitting.
  bool Post(const char* name, std::function<void()> callback);
  bool PostDelayed(const char* name, std::function<void()> callback, uint64_t delay_ns);
  bool PostAtTime(const char* name, std::function<void()> callback, uint64_t when_ns);
  bool SendMessage(Message msg);
  bool SendMessageDelayed(Message msg, uint64_t delay_ns);
  bool SendMessageAtTime(Message msg, uint64_t when_ns);
  bool SendEmptyMessage(int32_t what, const char* name);

  void RemoveMessages(int32_t what);
  bool HasMessages(int32_t what) const;

  Looper* looper() const { return looper_; }

 private:
  Looper* const looper_;
  const bool async_;
};

// A thread running its own Looper (android.os.HandlerThread).
class HandlerThread {
 public:
  // `name` becomes the thread's comm (truncated to 15 characters).
  explicit HandlerThread(std::string name);
  // QuitSafely() and Join() if still running.
  ~HandlerThread();
  HandlerThread(const HandlerThread&) = delete;
  HandlerThread& operator=(const HandlerThread&) = delete;

  // Starts the thread; returns once its looper exists.
  void Start();
  // Valid from Start() until this object is destroyed (the looper outlives
  // the thread, so Handlers on it may be destroyed after Join()).
  Looper* looper() const { return looper_; }
  pid_t tid() const { return tid_; }

  void Quit();
  void QuitSafely();
  void Join();

 private:
  void Run();

  const std::string name_;
  std::thread thread_;
  std::mutex mu_;
  std::condition_variable ready_cv_;
  Looper* looper_ = nullptr;
  std::unique_ptr<Looper> owned_looper_;  // taken over when the thread ends
  pid_t tid_ = 0;
};

}  // namespace looptrace::sample

#endif  // LOOPTRACE_TESTS_SAMPLE_APP_LOOPER_H_
