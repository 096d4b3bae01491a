#include "truth.h"

#include <cerrno>
#include <cinttypes>
#include <cstdio>
#include <cstring>
#include <utility>

#include "method_trace.h"
#include "sys_util.h"

namespace looptrace::sample {
namespace {

// Enough for every built-in scenario without reallocating mid-run.
constexpr size_t kInitialCapacity = 1 << 14;
constexpr size_t kInitialFrameCapacity = 1 << 11;

const char* const kPhaseNames[5] = {"INPUT", "ANIMATION", "INSETS_ANIMATION", "TRAVERSAL", "COMMIT"};

}  // namespace

void AppendJsonString(std::string* out, const char* s) {
  out->push_back('"');
  for (const unsigned char* p = reinterpret_cast<const unsigned char*>(s); *p; ++p) {
    switch (*p) {
      case '"':
        out->append("\\\"");
        break;
      case '\\':
        out->append("\\\\");
        break;
      case '\n':
        out->append("\\n");
        break;
      case '\t':
        out->append("\\t");
        break;
      default:
        if (*p < 0x20) {
          char buf[8];
          std::snprintf(buf, sizeof(buf), "\\u%04x", *p);
          out->append(buf);
        } else {
          out->push_back(static_cast<char>(*p));
        }
    }
  }
  out->push_back('"');
}

// ---------------------------------------------------------------- JsonLine

JsonLine::JsonLine(const char* type) {
  text_.reserve(160);
  text_ = "{\"type\":";
  AppendJsonString(&text_, type);
}

void JsonLine::Key(const char* key) {
  text_.append(",\"");
  text_.append(key);
  text_.append("\":");
}

JsonLine& JsonLine::U(const char* key, uint64_t value) {
  Key(key);
  char buf[24];
  std::snprintf(buf, sizeof(buf), "%" PRIu64, value);
  text_.append(buf);
  return *this;
}

JsonLine& JsonLine::I(const char* key, int64_t value) {
  Key(key);
  char buf[24];
  std::snprintf(buf, sizeof(buf), "%" PRId64, value);
  text_.append(buf);
  return *this;
}

JsonLine& JsonLine::S(const char* key, const char* value) {
  Key(key);
  AppendJsonString(&text_, value != nullptr ? value : "");
  return *this;
}

JsonLine& JsonLine::B(const char* key, bool value) {
  Key(key);
  text_.append(value ? "true" : "false");
  return *this;
}

JsonLine& JsonLine::Raw(const char* key, const std::string& json) {
  Key(key);
  text_.append(json);
  return *this;
}

std::string JsonLine::Take() {
  text_.append("}\n");
  return std::move(text_);
}

// ----------------------------------------------------------- TruthRecorder

TruthRecorder& TruthRecorder::Global() {
  static TruthRecorder* recorder = new TruthRecorder();  // never destroyed
  return *recorder;
}

TruthRecorder::TruthRecorder() {
  records_.reserve(kInitialCapacity);
  frames_.reserve(kInitialFrameCapacity);
}

void TruthRecorder::Add(TruthRecord record) {
  std::lock_guard lock(mu_);
  records_.push_back(std::move(record));
  if (streaming_ && out_ != nullptr) {
    const std::string line = FormatLocked(records_.back());
    std::fputs(line.c_str(), out_);
    std::fflush(out_);
    written_ = records_.size();
  }
}

void TruthRecorder::RecordMessage(pid_t tid, uint64_t msg_id, const char* name, uint64_t begin_ns, uint64_t end_ns,
                                  std::optional<uint64_t> method_calls, uint64_t begin_after_ns, uint64_t end_after_ns,
                                  uint64_t cpu_before_ns, uint64_t cpu_after_ns, uint64_t context_switches) {
  if (count_messages_only_.load(std::memory_order_relaxed)) {
    messages_counted_.fetch_add(1, std::memory_order_relaxed);
    return;
  }
  TruthRecord record;
  record.type = TruthRecord::Type::kMessage;
  record.tid = tid;
  record.id = msg_id;
  record.name = name;
  record.begin_ns = begin_ns;
  record.end_ns = end_ns;
  record.begin_after_ns = begin_after_ns;
  record.end_after_ns = end_after_ns;
  record.cpu_before_ns = cpu_before_ns;
  record.cpu_after_ns = cpu_after_ns;
  record.context_switches = context_switches;
  record.method_calls = method_calls;
  Add(std::move(record));
}

void TruthRecorder::RecordIdle(pid_t tid, uint64_t idle_id, const char* name, uint64_t begin_ns, uint64_t end_ns) {
  TruthRecord record;
  record.type = TruthRecord::Type::kIdle;
  record.tid = tid;
  record.id = idle_id;
  record.name = name;
  record.begin_ns = begin_ns;
  record.end_ns = end_ns;
  Add(std::move(record));
}

void TruthRecorder::RecordMethod(pid_t tid, const MethodInfo& method, uint32_t depth, uint64_t begin_ns,
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
  Add(std::move(record));
}

void TruthRecorder::RecordFrame(const FrameTruth& frame) {
  TruthRecord record;
  record.type = TruthRecord::Type::kFrame;
  record.tid = frame.tid;
  {
    std::lock_guard lock(mu_);
    record.aux = frames_.size();
    frames_.push_back(frame);
  }
  Add(std::move(record));
}

void TruthRecorder::RecordVsync(pid_t tid, uint64_t ts_ns, uint64_t ts_after_ns, uint64_t vsync_ns) {
  TruthRecord record;
  record.type = TruthRecord::Type::kVsync;
  record.tid = tid;
  record.id = vsync_ns;
  record.begin_ns = ts_ns;
  record.begin_after_ns = ts_after_ns;
  Add(std::move(record));
}

void TruthRecorder::RecordLine(std::string json_line) {
  TruthRecord record;
  record.type = TruthRecord::Type::kLine;
  {
    std::lock_guard lock(mu_);
    record.aux = lines_.size();
    lines_.push_back(std::move(json_line));
  }
  Add(std::move(record));
}

std::vector<TruthRecord> TruthRecorder::Snapshot() const {
  std::lock_guard lock(mu_);
  return records_;
}

std::string TruthRecorder::FormatLocked(const TruthRecord& r) const {
  switch (r.type) {
    case TruthRecord::Type::kMethod: {
      JsonLine line("method");
      line.I("tid", r.tid).U("method_id", r.id).S("name", r.name);
      line.U("depth", r.depth).U("begin_ns", r.begin_ns).U("end_ns", r.end_ns);
      line.U("msg_id", r.msg_id);
#if LOOPTRACE_SAMPLE_CYG
      // What gcc passes to __cyg_profile_func_enter/exit as `fn`.
      char address[32];
      std::snprintf(address, sizeof(address), "0x%jx",
                    static_cast<uintmax_t>(reinterpret_cast<uintptr_t>(r.method->fn)));
      line.S("address", address).S("symbol", r.method->symbol);
      line.S("demangled", r.method->demangled);
#endif
      return line.Take();
    }
    case TruthRecord::Type::kMessage:
    case TruthRecord::Type::kIdle: {
      const bool is_message = r.type == TruthRecord::Type::kMessage;
      JsonLine line(is_message ? "message" : "idle");
      line.I("tid", r.tid).U(is_message ? "msg_id" : "idle_id", r.id);
      line.S("name", r.name).U("begin_ns", r.begin_ns).U("end_ns", r.end_ns);
      if (r.begin_after_ns) {
        line.U("begin_after_ns", r.begin_after_ns);
        line.U("end_after_ns", r.end_after_ns);
      }
      if (r.cpu_after_ns) {
        line.U("cpu_before_ns", r.cpu_before_ns);
        line.U("cpu_after_ns", r.cpu_after_ns);
        line.U("context_switches", r.context_switches);
      }
      if (r.method_calls) line.U("method_calls", *r.method_calls);
      return line.Take();
    }
    case TruthRecord::Type::kFrame: {
      const FrameTruth& f = frames_[r.aux];
      std::string phases = "[";
      char buf[200];
      for (int i = 0; i < 5; ++i) {
        const FrameTruth::Phase& p = f.phases[i];
        std::snprintf(buf, sizeof(buf),
                      "%s{\"phase\":%d,\"name\":\"%s\",\"begin_ns\":%" PRIu64 ",\"end_ns\":%" PRIu64
                      ",\"begin_after_ns\":%" PRIu64 ",\"end_after_ns\":%" PRIu64 "}",
                      i == 0 ? "" : ",", i, kPhaseNames[i], p.begin_ns, p.end_ns, p.begin_after_ns, p.end_after_ns);
        phases.append(buf);
      }
      phases.push_back(']');
      JsonLine line("frame");
      line.I("tid", f.tid).U("frame_id", f.frame_id).U("msg_id", f.msg_id);
      line.U("vsync_ns", f.vsync_ns).U("intended_vsync_ns", f.intended_vsync_ns);
      line.U("skipped_frames", f.skipped_frames);
      line.U("begin_ns", f.begin_ns).U("begin_after_ns", f.begin_after_ns);
      line.U("end_ns", f.end_ns).U("end_after_ns", f.end_after_ns);
      line.U("refresh_hz", f.refresh_hz).U("interval_ns", f.interval_ns);
      line.S("scene", f.scene);
      if (f.planned_dropped >= 0) line.I("planned_dropped", f.planned_dropped);
      line.Raw("phases", phases);
      return line.Take();
    }
    case TruthRecord::Type::kVsync:
      return JsonLine("vsync")
          .I("tid", r.tid)
          .U("ts_ns", r.begin_ns)
          .U("ts_after_ns", r.begin_after_ns)
          .U("vsync_ns", r.id)
          .Take();
    case TruthRecord::Type::kLine:
      return lines_[r.aux];
  }
  return "";
}

void TruthRecorder::SetOutput(std::FILE* out, pid_t pid, uint64_t process_start_ns) {
  std::lock_guard lock(mu_);
  out_ = out;
  pid_ = pid;
  process_start_ns_ = process_start_ns;
}

void TruthRecorder::WriteHeaderLocked() {
  std::fprintf(out_, "{\"type\":\"process\",\"pid\":%d,\"start_ns\":%" PRIu64 "}\n", static_cast<int>(pid_),
               process_start_ns_);
}

void TruthRecorder::StartStreaming() {
  std::lock_guard lock(mu_);
  if (out_ == nullptr || streaming_) return;
  streaming_ = true;
  WriteHeaderLocked();
  for (const TruthRecord& r : records_) std::fputs(FormatLocked(r).c_str(), out_);
  written_ = records_.size();
  std::fflush(out_);
}

bool TruthRecorder::Finish(std::string* error) {
  std::lock_guard lock(mu_);
  if (out_ == nullptr) return true;
  std::FILE* out = out_;
  if (!streaming_) {
    WriteHeaderLocked();
  }
  for (size_t i = streaming_ ? written_ : 0; i < records_.size(); ++i) {
    std::fputs(FormatLocked(records_[i]).c_str(), out);
  }
  if (count_messages_only_.load())
    std::fprintf(out, "{\"type\":\"message_count\",\"messages\":%" PRIu64 "}\n", messages_counted_.load());
  out_ = nullptr;  // later records (other threads) stay in memory only
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
