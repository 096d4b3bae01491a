// The truth record of a stall scenario:
//   {"type":"stall","kind":"...","tid":N,"msg_id":N,"begin_ns":N,"end_ns":N,
//    "planned_ns":N, ...kind-specific fields}
// begin_ns/end_ns bracket the stalling work itself (read right before it
// starts and right after it ended), inside the message (or IdleHandler) whose
// id is given.

#ifndef LOOPTRACE_TESTS_SAMPLE_APP_STALL_H_
#define LOOPTRACE_TESTS_SAMPLE_APP_STALL_H_

#include <cstdint>

#include "looper.h"
#include "sys_util.h"
#include "truth.h"

namespace looptrace::sample {

inline JsonLine StallLine(const char* kind, uint64_t begin_ns, uint64_t planned_ns) {
  JsonLine line("stall");
  line.S("kind", kind).I("tid", CurrentTid()).U("msg_id", Looper::CurrentMessageId());
  line.U("begin_ns", begin_ns);
  line.U("planned_ns", planned_ns);
  return line;
}

}  // namespace looptrace::sample

#endif  // LOOPTRACE_TESTS_SAMPLE_APP_STALL_H_
