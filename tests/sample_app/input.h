// Input events for the sample app, the way Android delivers them: a thread
// ("sample-input", the InputDispatcher side) writes events into a channel
// whose fd the main looper polls; on the main thread, inside the poll, each
// event is received (sample_input_receive) and an asynchronous message
// "ViewRootImpl#processInputEvent" is posted that handles it and finishes it
// (sample_input_finish), with a truth record
//   {"type":"input","tid":N,"seq":N,"msg_id":N,"event_ns":N,"receive_ns":N,
//    "receive_after_ns":N,"finish_ns":N,"finish_after_ns":N}
// (event_ns: when the source generated it; receive/finish: right before /
// after the hooks).

#ifndef LOOPTRACE_TESTS_SAMPLE_APP_INPUT_H_
#define LOOPTRACE_TESTS_SAMPLE_APP_INPUT_H_

#include <condition_variable>
#include <cstdint>
#include <deque>
#include <functional>
#include <mutex>
#include <thread>

#include "looper.h"

namespace looptrace::sample {

class InputChannel {
 public:
  // `handle(seq)` runs inside the event's message on the looper thread,
  // between receive and finish.
  InputChannel(Looper* looper, std::function<void(uint64_t seq)> handle);
  // Stops the source and unregisters the fd. Looper thread.
  ~InputChannel();
  InputChannel(const InputChannel&) = delete;
  InputChannel& operator=(const InputChannel&) = delete;

  // Event k (seq k + 1, k = 0 .. count-1) is generated at first_ns + k * period_ns.
  void Start(uint64_t first_ns, uint64_t period_ns, uint64_t count);
  // Events finished so far (looper thread).
  uint64_t finished() const { return finished_; }

 private:
  struct Event {
    uint64_t seq;
    uint64_t event_ns;
  };
  void RunSource(uint64_t first_ns, uint64_t period_ns, uint64_t count);
  void OnReadable();

  Looper* const looper_;
  Handler handler_;  // asynchronous, like ViewRootImpl's input messages
  const std::function<void(uint64_t)> handle_;
  int fd_ = -1;
  std::mutex mu_;
  std::condition_variable cv_;
  std::deque<Event> pending_;
  bool stopping_ = false;
  std::thread source_;
  uint64_t finished_ = 0;
};

}  // namespace looptrace::sample

#endif  // LOOPTRACE_TESTS_SAMPLE_APP_INPUT_H_
