#include "looptrace/symbols/vdso.h"

#include <sys/auxv.h>
#include <sys/mman.h>
#include <unistd.h>

#include <cstdio>
#include <fstream>
#include <string>

#include "looptrace/symbols/proc_maps.h"

namespace looptrace::symbols {
namespace {

struct VdsoImage {
  std::string path;
  uint64_t size = 0;
};

const VdsoImage& Image() {
  static const VdsoImage image = [] {
    VdsoImage out;
    const uint64_t base = getauxval(AT_SYSINFO_EHDR);
    if (base == 0) return out;
    auto maps = ReadProcMaps(getpid());
    if (!maps) return out;
    for (const MapEntry& map : *maps) {
      if (map.path != "[vdso]" || map.start != base) continue;
      // Kept open for the life of the process: its /proc/self/fd path is the file.
      const int fd = memfd_create("looptrace-vdso", MFD_CLOEXEC);
      if (fd < 0) return out;
      const size_t size = map.end - map.start;
      if (write(fd, reinterpret_cast<const void*>(base), size) != static_cast<ssize_t>(size)) {
        close(fd);
        return out;
      }
      out.path = "/proc/self/fd/" + std::to_string(fd);
      out.size = size;
    }
    return out;
  }();
  return image;
}

}  // namespace

const std::string& VdsoImagePath() { return Image().path; }
uint64_t VdsoImageSize() { return Image().size; }

}  // namespace looptrace::symbols
