// Ground truth: what the sample target really did, timed with the same clock
// and at the same instants as the hooks, so tests can compare looptrace's
// measurements with it. Records are buffered in memory (no I/O while a
// message runs) and written as JSON lines when the program exits, except
// after StartStreaming() (for scenarios that never end by themselves), when
// each record is written and flushed as it is added.

#ifndef LOOPTRACE_TESTS_SAMPLE_APP_TRUTH_H_
#define LOOPTRACE_TESTS_SAMPLE_APP_TRUTH_H_

#include <sys/types.h>

#include <atomic>
#include <cstdint>
#include <cstdio>
#include <mutex>
#include <optional>
#include <string>
#include <vector>

namespace looptrace::sample {

struct MethodInfo;

// Builds one JSON object on one line: JsonLine("stall").U("msg_id", 3)...
// Keys must be plain literals; string values are escaped.
class JsonLine {
 public:
  explicit JsonLine(const char* type);
  JsonLine& U(const char* key, uint64_t value);
  JsonLine& I(const char* key, int64_t value);
  JsonLine& S(const char* key, const char* value);
  JsonLine& B(const char* key, bool value);
  // `json` is inserted as is (an array or object).
  JsonLine& Raw(const char* key, const std::string& json);
  // The object with its closing brace and a newline.
  std::string Take();

 private:
  void Key(const char* key);
  std::string text_;
};

// Appends `s` as a JSON string literal (quoted, escaped).
void AppendJsonString(std::string* out, const char* s);

// One Choreographer frame (choreographer.cc).
struct FrameTruth {
  struct Phase {
    uint64_t begin_ns = 0, begin_after_ns = 0, end_ns = 0, end_after_ns = 0;
  };
  pid_t tid = 0;
  uint64_t frame_id = 0;
  uint64_t msg_id = 0;             // the "Choreographer#doFrame" message
  uint64_t vsync_ns = 0;           // after the skipped-frame adjustment
  uint64_t intended_vsync_ns = 0;  // the vsync the message was posted for
  uint64_t skipped_frames = 0;
  uint64_t begin_ns = 0, begin_after_ns = 0, end_ns = 0, end_after_ns = 0;
  uint64_t interval_ns = 0;
  uint32_t refresh_hz = 0;
  const char* scene = "";  // static storage
  Phase phases[5];
  // frames-jank: the dropped frames the frame was planned for; -1 = none.
  int64_t planned_dropped = -1;
};

struct TruthRecord {
  enum class Type { kMessage, kIdle, kMethod, kFrame, kVsync, kLine };
  Type type = Type::kMessage;
  pid_t tid = 0;
  uint64_t id = 0;        // msg_id, idle_id or method_id; kVsync: vsync_ns
  const char* name = "";  // static storage
  uint64_t begin_ns = 0;  // read right before the *_begin / enter hook
  uint64_t end_ns = 0;    // read right before the *_end / exit hook
  // kMessage: read right after the hooks returned. [begin_ns, begin_after_ns] is the
  // window in which the begin hook ran (wide only if the thread was preempted there).
  uint64_t begin_after_ns = 0;
  uint64_t end_after_ns = 0;
  // kMessage: the thread's CPU time read right before the begin hook's window and right
  // after the end hook's (ThreadCpuNs): the message's CPU time lies within their difference.
  uint64_t cpu_before_ns = 0;
  uint64_t cpu_after_ns = 0;
  // kMessage: the thread's context switches over that same stretch (ThreadContextSwitches).
  uint64_t context_switches = 0;
  // kMessage: instrumented method calls made inside it, if counted
  // (Looper::AddMethodCalls); absent otherwise.
  std::optional<uint64_t> method_calls;
  // kMethod only:
  uint32_t depth = 0;   // 0 = outermost instrumented method
  uint64_t msg_id = 0;  // message it ran in, 0 if none
  const MethodInfo* method = nullptr;
  // kFrame: index into the frames, kLine: into the preformatted lines.
  size_t aux = 0;
};

class TruthRecorder {
 public:
  // The process-wide recorder the loopers write to.
  static TruthRecorder& Global();

  TruthRecorder();

  void RecordMessage(pid_t tid, uint64_t msg_id, const char* name, uint64_t begin_ns, uint64_t end_ns,
                     std::optional<uint64_t> method_calls = std::nullopt, uint64_t begin_after_ns = 0,
                     uint64_t end_after_ns = 0, uint64_t cpu_before_ns = 0, uint64_t cpu_after_ns = 0,
                     uint64_t context_switches = 0);
  void RecordIdle(pid_t tid, uint64_t idle_id, const char* name, uint64_t begin_ns, uint64_t end_ns);
  // One call of an instrumented method (method_trace.h).
  void RecordMethod(pid_t tid, const MethodInfo& method, uint32_t depth, uint64_t begin_ns, uint64_t end_ns,
                    uint64_t msg_id);
  void RecordFrame(const FrameTruth& frame);
  // ts_ns / ts_after_ns: read right before / after sample_vsync.
  void RecordVsync(pid_t tid, uint64_t ts_ns, uint64_t ts_after_ns, uint64_t vsync_ns);
  // Any other record, preformatted (JsonLine(...).Take()). For rare records
  // (stalls, milestones, input events): formatting allocates.
  void RecordLine(std::string json_line);

  std::vector<TruthRecord> Snapshot() const;

  // Where the truth goes (main(), for --truth). Takes ownership of `out`.
  // Without an output, records are only kept in memory.
  void SetOutput(std::FILE* out, pid_t pid, uint64_t process_start_ns);
  // Writes the process record and every record so far now, then each later
  // record as it is added, flushed at once (for scenarios that never end,
  // such as anr-deadlock). No-op without an output.
  void StartStreaming();
  // From now on messages are only counted, not recorded one by one (long, high-rate
  // scenarios such as storm); Finish writes {"type":"message_count","messages":N}.
  void CountMessagesOnly() { count_messages_only_.store(true); }

  // Writes the truth file (what is not written yet):
  //   {"type":"process","pid":N,"start_ns":N}
  //   {"type":"message","tid":N,"msg_id":N,"name":"...","begin_ns":N,"end_ns":N,
  //    "begin_after_ns":N,"end_after_ns":N}
  //     (plus ,"method_calls":N when instrumented methods ran in it, or
  //     when its scenario counted them, as method-storm does)
  //   {"type":"idle","tid":N,"idle_id":N,"name":"...","begin_ns":N,"end_ns":N}
  //   {"type":"method","tid":N,"method_id":N,"name":"A","depth":N,
  //    "begin_ns":N,"end_ns":N,"msg_id":N}
  //     (cyg flavour: plus ,"address":"0x...","symbol":"...","demangled":"...")
  //   {"type":"frame",...}, {"type":"vsync",...} and preformatted lines
  //   {"type":"end","end_ns":N}
  // Records appear in completion order (a method before its caller, methods
  // before their message). Closes the output in every case. Returns false
  // with the reason (strerror) in *error on failure; true without an output.
  bool Finish(std::string* error);

 private:
  void Add(TruthRecord record);
  // Formats one record as a JSON line (mu_ held).
  std::string FormatLocked(const TruthRecord& r) const;
  void WriteHeaderLocked();

  mutable std::mutex mu_;
  std::vector<TruthRecord> records_;
  std::vector<FrameTruth> frames_;
  std::vector<std::string> lines_;
  std::FILE* out_ = nullptr;
  pid_t pid_ = 0;
  uint64_t process_start_ns_ = 0;
  bool streaming_ = false;
  size_t written_ = 0;  // records already written (streaming)
  std::atomic<bool> count_messages_only_{false};
  std::atomic<uint64_t> messages_counted_{0};
};

}  // namespace looptrace::sample

#endif  // LOOPTRACE_TESTS_SAMPLE_APP_TRUTH_H_
