#include "truth.h"

#include <cerrno>
#include <cinttypes>
#include <cstdio>
#include <cstring>

#include "method_trace.h"
#include "sys_util.h"

namespace looptrace::sample {
namespace {

// Enough for every built-in scenario without reallocating mid-run.
constexpr size_t kInitialCapacity = 1 << 14;

void WriteJsonString(FILE* out, const char* s) {
  std::fputc('"', out);
  for (const unsigned char* p = reinterpret_cast<const unsigned char*>(s); *p;
       ++p) {
    switch (*p) {
      case '"':
        std::fputs("\\\"", out);
        break;
      case '\\':
        std::fputs("\\\\", out);
        break;
      case '\n':
        std::fputs("\\n", out);
        break;
      case '\t':
        std::fputs("\\t", out);
        break;
      default:
        if (*p < 0x20) {
          std::fprintf(out, "\\u%04x", *p);
        } else {
          std::fputc(*p, out);
        }
    }
  }
  std::fputc('"', out);
}

}  // namespace

TruthRecorder& TruthRecorder::Global() {
  static TruthRecorder* recorder = new TruthRecorder();  // never destroyed
  return *recorder;
}

TruthRecorder::TruthRecorder() { records_.reserve(kInitialCapacity); }

void TruthRecorder::Add(const TruthRecord& record) {
  std::lock_guard lock(mu_);
  records_.push_back(record);
}

void TruthRecorder::RecordMessage(pid_t tid, uint64_t msg_id, const char* name,
                                  uint64_t begin_ns, uint64_t end_ns,
                                  std::optional<uint64_t> method_calls,
                                  uint64_t begin_after_ns, uint64_t end_after_ns) {
  TruthRecord record;
  record.type = TruthRecord::Type::kMessage;
  record.tid = tid;
  record.id = msg_id;
  record.name = name;
  record.begin_ns = begin_ns;
  record.end_ns = end_ns;
  record.begin_after_ns = begin_after_ns;
  record.end_after_ns = end_after_ns;
  record.method_calls = method_calls;
  Add(record);
}

void TruthRecorder::RecordIdle(pid_t tid, uint64_t idle_id, const char* name,
                               uint64_t begin_ns, uint64_t end_ns) {
  TruthRecord record;
  record.type = TruthRecord::Type::kIdle;
  record.tid = tid;
  record.id = idle_id;
  record.name = name;
  record.begin_ns = begin_ns;
  record.end_ns = end_ns;
  Add(record);
}

void TruthRecorder::RecordMethod(pid_t tid, const MethodInfo& method,
                                 uint32_t depth, uint64_t begin_ns,
                                 uint64_t end_ns, uint64_t msg_id) {
  TruthRecord record;
  record.type = TruthRecord::Type::kMethod;
  record.tid = tid;
  record.id = method.id;
  record.name = method.method_name;
  record.begin_ns = begin_ns;
  record.end_ns = end_ns;
  record.depth = depth;
  record.msg_id = msg_id;
  record.method = &method;
  Add(record);
}

std::vector<TruthRecord> TruthRecorder::Snapshot() const {
  std::lock_guard lock(mu_);
  return records_;
}

bool TruthRecorder::WriteJsonLines(std::FILE* out, pid_t pid,
                                   uint64_t process_start_ns,
                                   std::string* error) const {
  const std::vector<TruthRecord> records = Snapshot();
  std::fprintf(out, "{\"type\":\"process\",\"pid\":%d,\"start_ns\":%" PRIu64 "}\n",
               static_cast<int>(pid), process_start_ns);
  for (const TruthRecord& r : records) {
    if (r.type == TruthRecord::Type::kMethod) {
      std::fprintf(out, "{\"type\":\"method\",\"tid\":%d,\"method_id\":%" PRIu64
                   ",\"name\":", static_cast<int>(r.tid), r.id);
      WriteJsonString(out, r.name);
      std::fprintf(out,
                   ",\"depth\":%u,\"begin_ns\":%" PRIu64 ",\"end_ns\":%" PRIu64
                   ",\"msg_id\":%" PRIu64,
                   r.depth, r.begin_ns, r.end_ns, r.msg_id);
#if LOOPTRACE_SAMPLE_CYG
      // What gcc passes to __cyg_profile_func_enter/exit as `fn`.
      std::fprintf(out, ",\"address\":\"0x%jx\",\"symbol\":",
                   static_cast<uintmax_t>(reinterpret_cast<uintptr_t>(r.method->fn)));
      WriteJsonString(out, r.method->symbol);
      std::fputs(",\"demangled\":", out);
      WriteJsonString(out, r.method->demangled);
#endif
      std::fputs("}\n", out);
      continue;
    }
    const bool is_message = r.type == TruthRecord::Type::kMessage;
    std::fprintf(out, "{\"type\":\"%s\",\"tid\":%d,\"%s\":%" PRIu64 ",\"name\":",
                 is_message ? "message" : "idle", static_cast<int>(r.tid),
                 is_message ? "msg_id" : "idle_id", r.id);
    WriteJsonString(out, r.name);
    std::fprintf(out, ",\"begin_ns\":%" PRIu64 ",\"end_ns\":%" PRIu64,
                 r.begin_ns, r.end_ns);
    if (r.begin_after_ns) {
      std::fprintf(out, ",\"begin_after_ns\":%" PRIu64 ",\"end_after_ns\":%" PRIu64,
                   r.begin_after_ns, r.end_after_ns);
    }
    if (r.method_calls) {
      std::fprintf(out, ",\"method_calls\":%" PRIu64, *r.method_calls);
    }
    std::fputs("}\n", out);
  }
  std::fprintf(out, "{\"type\":\"end\",\"end_ns\":%" PRIu64 "}\n", NowNs());
  const bool write_failed = std::ferror(out) != 0 || std::fflush(out) != 0;
  const int saved_errno = errno;
  const bool close_failed = std::fclose(out) != 0;
  if (write_failed || close_failed) {
    *error = std::strerror(write_failed ? saved_errno : errno);
    return false;
  }
  return true;
}

}  // namespace looptrace::sample
