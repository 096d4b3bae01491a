// libFuzzer harness for recording replay (loader ReplayRecording): the line reader with
// plain and gzip input, header detection, bad-line counting. The first input byte picks
// the file: even = the remaining bytes as they are (gzip or not: LineReader detects it),
// odd = the remaining bytes gzip-compressed, so the fuzzer mutates the text behind gzip.
// Oracle: every event handed to the sink round-trips through the JSON line format, and
// no more lines are counted bad than the file has.
#include <sys/mman.h>
#include <unistd.h>
#include <zlib.h>

#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <string>

#include "loader/session/recording.h"
#include "looptrace/tracers/event_json.h"
#include "looptrace/util/log.h"

namespace {

class CheckingSink : public looptrace::EventSink {
 public:
  void OnEvent(const looptrace::Event& event) override {
    ++events;
    const std::string line = looptrace::EventToJsonLine(event);
    auto again = looptrace::EventFromJsonLine(line);
    if (!again || !*again || looptrace::EventToJsonLine(**again) != line) std::abort();
  }
  size_t events = 0;
};

bool WriteAll(int fd, const uint8_t* data, size_t size) {
  while (size > 0) {
    const ssize_t n = write(fd, data, size);
    if (n <= 0) return false;
    data += n;
    size -= static_cast<size_t>(n);
  }
  return true;
}

}  // namespace

extern "C" int LLVMFuzzerInitialize(int*, char***) {
  looptrace::log::Verbosity() = looptrace::log::Level::kError;  // bad lines are expected
  return 0;
}

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  if (size == 0) return 0;
  const bool compress = (data[0] & 1) != 0;
  ++data;
  --size;
  const int fd = memfd_create("recording_fuzz", MFD_CLOEXEC);
  if (fd < 0) return 0;
  bool written;
  if (compress) {
    gzFile gz = gzdopen(dup(fd), "wb");
    written = gz != nullptr && (size == 0 || gzwrite(gz, data, static_cast<unsigned>(size)) > 0);
    if (gz != nullptr && gzclose(gz) != Z_OK) written = false;
  } else {
    written = WriteAll(fd, data, size);
  }
  if (written) {
    const std::string path = "/proc/self/fd/" + std::to_string(fd);
    CheckingSink sink;
    looptrace::Stats stats;
    auto status = looptrace::loader::ReplayRecording(path, sink, &stats);
    // Plain text (not compressed here, no gzip magic): at most one bad line per line.
    if (!compress && !(size >= 2 && data[0] == 0x1f && data[1] == 0x8b)) {
      size_t newlines = 0;
      for (size_t i = 0; i < size; ++i) newlines += data[i] == '\n';
      if (stats.Get(looptrace::StatId::recording_bad_lines) > newlines + 1) std::abort();
    }
    if (!status && status.error().message.empty()) std::abort();
  }
  close(fd);
  return 0;
}
