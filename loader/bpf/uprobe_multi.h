// uprobe_multi links (kernel >= 6.6) through a raw BPF_LINK_CREATE, which libbpf 1.1 and
// the uapi headers here predate, and the RAII owner of every attached link.
#pragma once

#include <string>
#include <utility>
#include <vector>

#include "looptrace/util/unique_fd.h"

struct bpf_link;
struct bpf_program;

namespace looptrace::loader {

// Owns attached probe points (bpftrace's AttachedProbe): a libbpf link, or the fd of a raw
// uprobe_multi link; detached on destruction.
class AttachedLink {
 public:
  explicit AttachedLink(bpf_link* link) : link_(link) {}
  explicit AttachedLink(UniqueFd link_fd) : fd_(std::move(link_fd)) {}
  AttachedLink(AttachedLink&& other) noexcept : link_(std::exchange(other.link_, nullptr)), fd_(std::move(other.fd_)) {}
  AttachedLink& operator=(AttachedLink&&) = delete;
  AttachedLink(const AttachedLink&) = delete;
  ~AttachedLink();

 private:
  bpf_link* link_ = nullptr;
  UniqueFd fd_;
};

// Creates one uprobe_multi link for a loaded program: the link fd, or the negative errno.
// The program must have been loaded with the uprobe_multi attach type.
int CreateUprobeMultiLink(int prog_fd, const std::string& path, const std::vector<uint64_t>& offsets,
                          const std::vector<uint64_t>& cookies, bool retprobe, int pid);
// Marks a program (before load) for uprobe_multi attachment.
void SetUprobeMultiAttachType(bpf_program* prog);

// "the instruction there cannot be probed" for the kernel-internal ENOTSUPP (524), else
// strerror.
std::string AttachErrorText(int err);

}  // namespace looptrace::loader
