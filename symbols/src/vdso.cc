#include "looptrace/symbols/vdso.h"

#include <elf.h>
#include <fcntl.h>
#include <sys/auxv.h>
#include <sys/mman.h>
#include <unistd.h>

#include <cstring>
#include <map>
#include <mutex>
#include <string>

#include "looptrace/symbols/proc_maps.h"
#include "looptrace/util/safe_file.h"

namespace looptrace::symbols {
namespace {

struct VdsoImage {
  std::string path;
  uint64_t size = 0;
  std::string bytes;  // the image itself, to tell a target's copy of it
};

// A memfd holding `bytes`, kept open for the life of the process: its /proc/self/fd path is
// the file. "" if it cannot be written.
std::string SaveImage(const std::string& bytes) {
  const int fd = memfd_create("looptrace-vdso", MFD_CLOEXEC);
  if (fd < 0) return "";
  if (write(fd, bytes.data(), bytes.size()) != static_cast<ssize_t>(bytes.size())) {
    close(fd);
    return "";
  }
  return "/proc/self/fd/" + std::to_string(fd);
}

const VdsoImage& Image() {
  static const VdsoImage image = [] {
    VdsoImage out;
    const uint64_t base = getauxval(AT_SYSINFO_EHDR);
    if (base == 0) return out;
    auto maps = ReadProcMaps(getpid());
    if (!maps) return out;
    for (const MapEntry& map : *maps) {
      if (map.path != "[vdso]" || map.start != base) continue;
      out.bytes.assign(reinterpret_cast<const char*>(base), map.end - map.start);
      out.path = SaveImage(out.bytes);
      out.size = out.path.empty() ? 0 : out.bytes.size();
    }
    return out;
  }();
  return image;
}

// Reads [start, end) of `pid`'s memory; "" if any of it cannot be read.
std::string ReadTargetMemory(int pid, uint64_t start, uint64_t end) {
  const int fd = OpenForReading("/proc/" + std::to_string(pid) + "/mem");
  if (fd < 0) return "";
  std::string bytes(end - start, '\0');
  size_t done = 0;
  while (done < bytes.size()) {
    const ssize_t n = pread(fd, bytes.data() + done, bytes.size() - done, static_cast<off_t>(start + done));
    if (n <= 0) break;
    done += static_cast<size_t>(n);
  }
  close(fd);
  return done == bytes.size() ? bytes : std::string();
}

}  // namespace

const std::string& VdsoImagePath() { return Image().path; }
uint64_t VdsoImageSize() { return Image().size; }

std::string TargetVdsoImagePath(int pid, uint64_t start, uint64_t end) {
  if (end <= start || end - start > kMaxVdsoBytes) return "";
  std::string bytes = ReadTargetMemory(pid, start, end);
  if (bytes.size() < SELFMAG || std::memcmp(bytes.data(), ELFMAG, SELFMAG) != 0) return "";
  if (bytes == Image().bytes && !Image().path.empty()) return Image().path;
  // Images that are not this process's own: one memfd each, a few at most (a target cannot
  // make the loader keep one per patched copy).
  constexpr size_t kMaxOtherImages = 8;
  static std::mutex mutex;
  static std::map<std::string, std::string> others;  // image -> path
  std::lock_guard lock(mutex);
  if (auto it = others.find(bytes); it != others.end()) return it->second;
  if (others.size() >= kMaxOtherImages) return "";
  std::string path = SaveImage(bytes);
  if (!path.empty()) others.emplace(std::move(bytes), path);
  return path;
}

}  // namespace looptrace::symbols
