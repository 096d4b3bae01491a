#include "loader/bpf/uprobe_multi.h"

#include <bpf/libbpf.h>
#include <sys/syscall.h>
#include <unistd.h>

#include <cerrno>
#include <cstdint>
#include <cstring>

namespace looptrace::loader {
namespace {

// The kernel's layout of union bpf_attr for BPF_LINK_CREATE of a uprobe_multi link.
constexpr uint32_t kBpfTraceUprobeMulti = 48;
constexpr uint32_t kBpfFUprobeMultiReturn = 1;

struct UprobeMultiLinkAttr {
  uint32_t prog_fd;
  uint32_t target_fd;
  uint32_t attach_type;
  uint32_t flags;
  uint64_t path;
  uint64_t offsets;
  uint64_t ref_ctr_offsets;
  uint64_t cookies;
  uint32_t cnt;
  uint32_t multi_flags;
  uint32_t pid;
  uint8_t zero_tail[144 - 60];  // the rest of union bpf_attr must be zero
};
static_assert(sizeof(UprobeMultiLinkAttr) == 144);

}  // namespace

AttachedLink::~AttachedLink() {
  if (link_) bpf_link__destroy(link_);
}

int CreateUprobeMultiLink(int prog_fd, const std::string& path, const std::vector<uint64_t>& offsets,
                          const std::vector<uint64_t>& cookies, bool retprobe, int pid) {
  UprobeMultiLinkAttr attr{};
  attr.prog_fd = static_cast<uint32_t>(prog_fd);
  attr.attach_type = kBpfTraceUprobeMulti;
  attr.path = reinterpret_cast<uint64_t>(path.c_str());
  attr.offsets = reinterpret_cast<uint64_t>(offsets.data());
  attr.cookies = cookies.empty() ? 0 : reinterpret_cast<uint64_t>(cookies.data());
  attr.cnt = static_cast<uint32_t>(offsets.size());
  attr.multi_flags = retprobe ? kBpfFUprobeMultiReturn : 0;
  attr.pid = static_cast<uint32_t>(pid);
  int fd = static_cast<int>(syscall(__NR_bpf, BPF_LINK_CREATE, &attr, sizeof(attr)));
  return fd < 0 ? -errno : fd;
}

void SetUprobeMultiAttachType(bpf_program* prog) {
  bpf_program__set_expected_attach_type(prog, static_cast<bpf_attach_type>(kBpfTraceUprobeMulti));
}

std::string AttachErrorText(int err) { return err == 524 ? "the instruction there cannot be probed" : strerror(err); }

}  // namespace looptrace::loader
