#include "loader/bpf/bpf_prerequisites.h"

#include <bpf/btf.h>
#include <bpf/libbpf.h>
#include <fmt/format.h>
#include <sys/stat.h>

#include <cstdarg>
#include <cstdio>
#include <fstream>

#include "looptrace/util/log.h"
#include "looptrace/util/safe_file.h"

namespace looptrace::loader {
namespace {

int LibbpfPrint(enum libbpf_print_level level, const char* format, va_list args) {
  log::Level ours = level == LIBBPF_DEBUG ? log::Level::kV2 : log::Level::kV1;
  if (!log::Enabled(ours)) return 0;
  va_list copy;
  va_copy(copy, args);
  int length = vsnprintf(nullptr, 0, format, copy);
  va_end(copy);
  if (length < 0) return 0;
  std::string text(static_cast<size_t>(length) + 1, '\0');
  vsnprintf(text.data(), text.size(), format, args);
  text.resize(length);
  while (!text.empty() && text.back() == '\n') text.pop_back();
  log::Write(ours, "libbpf: " + text);
  return 0;
}

bool HasCapability(uint64_t caps, int bit) { return (caps >> bit) & 1; }

uint64_t EffectiveCapabilities() {
  std::ifstream status("/proc/self/status");
  std::string line;
  while (std::getline(status, line)) {
    if (!line.starts_with("CapEff:")) continue;
    uint64_t caps = 0;
    if (sscanf(line.c_str() + 7, "%lx", &caps) == 1) return caps;
  }
  return 0;
}

}  // namespace

Result<void> CheckBpfPrerequisites(const std::string& btf_path) {
  libbpf_set_print(LibbpfPrint);
  constexpr int kCapSysAdmin = 21, kCapPerfmon = 38, kCapBpf = 39;
  uint64_t caps = EffectiveCapabilities();
  bool privileged =
      HasCapability(caps, kCapSysAdmin) || (HasCapability(caps, kCapBpf) && HasCapability(caps, kCapPerfmon));
  if (!privileged)
    return MakeError(
        "permission denied: attaching BPF probes needs CAP_BPF and CAP_PERFMON "
        "(or CAP_SYS_ADMIN)",
        ExitCode::kPermission, "run looptrace as root (sudo looptrace ...)");
  const std::string btf = btf_path.empty() ? "/sys/kernel/btf/vmlinux" : btf_path;
  struct stat st;
  if (stat(btf.c_str(), &st) != 0)
    return SystemError(fmt::format("kernel BTF {} is not available", btf), errno, ExitCode::kUnsupported,
                       btf_path.empty() ? "this kernel lacks CONFIG_DEBUG_INFO_BTF; pass --btf FILE "
                                          "with a BTF file for it"
                                        : "check the --btf path");
  if (!btf_path.empty()) {
    // A regular file of bounded size: a FIFO or device would block libbpf's read.
    if (auto file = OpenRegularFile(btf, "BTF file", kMaxBtfBytes, ExitCode::kUnsupported,
                                    "--btf needs a raw BTF or ELF file with .BTF");
        !file)
      return std::unexpected(file.error());
    struct btf* parsed = btf__parse(btf.c_str(), nullptr);
    if (!parsed)
      return SystemError(fmt::format("cannot parse BTF file {}", btf), errno, ExitCode::kUnsupported,
                         "--btf needs a raw BTF or ELF file with .BTF");
    btf__free(parsed);
  }
  if (stat("/sys/bus/event_source/devices/uprobe/type", &st) != 0)
    return MakeError(
        "this kernel has no uprobe perf events "
        "(/sys/bus/event_source/devices/uprobe missing)",
        ExitCode::kUnsupported, "looptrace needs CONFIG_UPROBE_EVENTS");
  return {};
}

}  // namespace looptrace::loader
