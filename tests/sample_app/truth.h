// Ground truth: what the sample target really did, timed with the same clock
// and at the same instants as the hooks, so tests can compare looptrace's
// measurements with it. Records are buffered in memory (no I/O while a
// message runs) and written as JSON lines when the program exits.

#ifndef LOOPTRACE_TESTS_SAMPLE_APP_TRUTH_H_
#define LOOPTRACE_TESTS_SAMPLE_APP_TRUTH_H_

#include <sys/types.h>

#include <cstdint>
#include <cstdio>
#include <mutex>
#include <optional>
#include <string>
#include <vector>

namespace looptrace::sample {

struct MethodInfo;

struct TruthRecord {
  enum class Type { kMessage, kIdle, kMethod };
  Type type = Type::kMessage;
  pid_t tid = 0;
  uint64_t id = 0;           // msg_id, idle_id or method_id
  const char* name = "";     // static storage
  uint64_t begin_ns = 0;     // read right before the *_begin / enter hook
  uint64_t end_ns = 0;       // read right before the *_end / exit hook
  // kMessage: read right after the hooks returned. [begin_ns, begin_after_ns] is the
  // window in which the begin hook ran (wide only if the thread was preempted there).
  uint64_t begin_after_ns = 0;
  uint64_t end_after_ns = 0;
  // kMessage: instrumented method calls made inside it, if counted
  // (Looper::AddMethodCalls); absent otherwise.
  std::optional<uint64_t> method_calls;
  // kMethod only:
  uint32_t depth = 0;        // 0 = outermost instrumented method
  uint64_t msg_id = 0;       // message it ran in, 0 if none
  const MethodInfo* method = nullptr;
};

class TruthRecorder {
 public:
  // The process-wide recorder the loopers write to.
  static TruthRecorder& Global();

  TruthRecorder();

  void RecordMessage(pid_t tid, uint64_t msg_id, const char* name,
                     uint64_t begin_ns, uint64_t end_ns,
                     std::optional<uint64_t> method_calls = std::nullopt,
                     uint64_t begin_after_ns = 0, uint64_t end_after_ns = 0);
  void RecordIdle(pid_t tid, uint64_t idle_id, const char* name,
                  uint64_t begin_ns, uint64_t end_ns);
  // One call of an instrumented method (method_trace.h).
  void RecordMethod(pid_t tid, const MethodInfo& method, uint32_t depth,
                    uint64_t begin_ns, uint64_t end_ns, uint64_t msg_id);

  std::vector<TruthRecord> Snapshot() const;

  // Writes the truth file:
  //   {"type":"process","pid":N,"start_ns":N}
  //   {"type":"message","tid":N,"msg_id":N,"name":"...","begin_ns":N,"end_ns":N}
  //     (plus ,"method_calls":N when instrumented methods ran in it, or
  //     when its scenario counted them, as method-storm does)
  //   {"type":"idle","tid":N,"idle_id":N,"name":"...","begin_ns":N,"end_ns":N}
  //   {"type":"method","tid":N,"method_id":N,"name":"A","depth":N,
  //    "begin_ns":N,"end_ns":N,"msg_id":N}
  //     (cyg flavour: plus ,"address":"0x...","symbol":"...","demangled":"...")
  //   {"type":"end","end_ns":N}
  // Message, idle and method records appear in completion order (a method
  // before its caller, methods before their message). Closes `out` in
  // every case. Returns false with the reason (strerror) in *error on
  // failure.
  bool WriteJsonLines(std::FILE* out, pid_t pid, uint64_t process_start_ns,
                      std::string* error) const;

 private:
  void Add(const TruthRecord& record);

  mutable std::mutex mu_;
  std::vector<TruthRecord> records_;
};

}  // namespace looptrace::sample

#endif  // LOOPTRACE_TESTS_SAMPLE_APP_TRUTH_H_
