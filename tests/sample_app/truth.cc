#include "truth.h"

#include <cerrno>
#include <cinttypes>
#include <cstdio>
#include <cstring>

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
                                  uint64_t begin_ns, uint64_t end_ns) {
  Add({TruthRecord::Type::kMessage, tid, msg_id, name, begin_ns, end_ns});
}

void TruthRecorder::RecordIdle(pid_t tid, uint64_t idle_id, const char* name,
                               uint64_t begin_ns, uint64_t end_ns) {
  Add({TruthRecord::Type::kIdle, tid, idle_id, name, begin_ns, end_ns});
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
    const bool is_message = r.type == TruthRecord::Type::kMessage;
    std::fprintf(out, "{\"type\":\"%s\",\"tid\":%d,\"%s\":%" PRIu64 ",\"name\":",
                 is_message ? "message" : "idle", static_cast<int>(r.tid),
                 is_message ? "msg_id" : "idle_id", r.id);
    WriteJsonString(out, r.name);
    std::fprintf(out, ",\"begin_ns\":%" PRIu64 ",\"end_ns\":%" PRIu64 "}\n",
                 r.begin_ns, r.end_ns);
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
