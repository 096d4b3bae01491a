#include "loader/target/proc_readers.h"

#include <dirent.h>
#include <fmt/format.h>
#include <unistd.h>

#include <algorithm>
#include <charconv>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <sstream>

#include "looptrace/util/safe_file.h"
#include "looptrace/util/text_safety.h"

namespace looptrace::loader {

std::string ReadProcFile(const std::string& path) { return ReadRegularFile(path, "", kMaxProcFileBytes).value_or(""); }

std::string ReadFirstLine(const std::string& path) {
  std::string text = ReadProcFile(path);
  text.resize(std::min(text.size(), text.find('\n')));
  return text;
}

std::string ReadName(const std::string& path) {
  std::string text = ReadProcFile(path);
  if (text.ends_with('\n')) text.pop_back();
  return text;
}

std::vector<std::string> StatFields(const std::string& path) {
  // The whole file: the comm in it may hold ')' and newlines (prctl(PR_SET_NAME)), so the
  // first line can end inside the name and a ')' there is not the closing one.
  std::string text = ReadProcFile(path);
  std::vector<std::string> fields;
  size_t paren = text.rfind(')');
  if (paren == std::string::npos) return fields;
  std::istringstream in(text.substr(paren + 1));
  for (std::string f; in >> f;) fields.push_back(f);
  return fields;
}

std::optional<uint64_t> ParseUnsigned(std::string_view text, int base) {
  if (base == 16 && (text.starts_with("0x") || text.starts_with("0X"))) text.remove_prefix(2);
  uint64_t value = 0;
  auto [ptr, ec] = std::from_chars(text.data(), text.data() + text.size(), value, base);
  if (ec != std::errc() || ptr != text.data() + text.size() || text.empty()) return std::nullopt;
  return value;
}

std::optional<int64_t> ParseSigned(std::string_view text) {
  int64_t value = 0;
  auto [ptr, ec] = std::from_chars(text.data(), text.data() + text.size(), value);
  if (ec != std::errc() || ptr != text.data() + text.size() || text.empty()) return std::nullopt;
  return value;
}

std::string ReadComm(pid_t pid) { return ReadName(fmt::format("/proc/{}/comm", pid)); }

std::vector<std::string> ThreadComms(pid_t pid) {
  std::vector<std::string> names;
  std::error_code ec;
  for (const auto& entry : std::filesystem::directory_iterator(fmt::format("/proc/{}/task", pid), ec))
    names.push_back(ReadName(entry.path().string() + "/comm"));
  return names;
}

std::string CommandLineText(const std::vector<std::string>& argv) {
  std::string out;
  for (const std::string& word : argv) {
    if (!out.empty()) out += ' ';
    const bool plain = !word.empty() && word.find_first_not_of(
                                            "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ"
                                            "0123456789-_./:=+,@%") == std::string::npos;
    if (plain) {
      out += word;
    } else {
      out += '\'';
      for (char c : word) out += c == '\'' ? std::string("'\\''") : std::string(1, c);
      out += '\'';
    }
    if (out.size() > kMaxCommandLineBytes) break;
  }
  if (out.size() <= kMaxCommandLineBytes) return out;
  // Cut at a character boundary (UTF-8 continuation bytes are 10xxxxxx).
  size_t cut = kMaxCommandLineBytes;
  while (cut > 0 && (static_cast<unsigned char>(out[cut]) & 0xC0) == 0x80) --cut;
  out.resize(cut);
  out += kTruncatedMark;
  return out;
}

std::string ReadCommandLine(pid_t pid) {
  std::string text = ReadProcFile(fmt::format("/proc/{}/cmdline", pid));
  // A program that rewrote its title (setproctitle) leaves NULs where its arguments were.
  while (!text.empty() && text.back() == '\0') text.pop_back();
  std::vector<std::string> argv;
  size_t start = 0;
  while (start < text.size()) {
    size_t end = text.find('\0', start);
    if (end == std::string::npos) end = text.size();
    argv.push_back(text.substr(start, end - start));
    start = end + 1;
  }
  return CommandLineText(argv);
}

std::vector<pid_t> PidsNamed(const std::string& name) {
  std::vector<pid_t> pids;
  DIR* proc = opendir("/proc");
  if (!proc) return pids;
  const pid_t self = getpid();
  while (dirent* entry = readdir(proc)) {
    char* end = nullptr;
    long pid = std::strtol(entry->d_name, &end, 10);
    if (pid <= 0 || *end || pid == self) continue;
    if (ReadComm(static_cast<pid_t>(pid)) == name) {
      pids.push_back(static_cast<pid_t>(pid));
      continue;
    }
    std::error_code ec;
    auto exe = std::filesystem::read_symlink(fmt::format("/proc/{}/exe", pid), ec);
    if (!ec && exe.filename() == name) pids.push_back(static_cast<pid_t>(pid));
  }
  closedir(proc);
  std::sort(pids.begin(), pids.end());
  return pids;
}

std::optional<uint64_t> ReadCpuTicks(pid_t pid) {
  auto fields = StatFields(fmt::format("/proc/{}/stat", pid));
  if (fields.size() < 13) return std::nullopt;
  auto utime = ParseUnsigned(fields[11]);
  auto stime = ParseUnsigned(fields[12]);
  if (!utime || !stime) return std::nullopt;
  return *utime + *stime;
}

std::vector<std::pair<std::string, uint64_t>> ReadMemoryFields(pid_t pid) {
  std::vector<std::pair<std::string, uint64_t>> out;
  std::ifstream status(fmt::format("/proc/{}/status", pid));
  for (std::string line; std::getline(status, line);) {
    if (!line.starts_with("Vm") && !line.starts_with("Rss")) continue;
    size_t colon = line.find(':');
    if (colon == std::string::npos) continue;
    std::istringstream rest(line.substr(colon + 1));
    std::string number;
    rest >> number;
    if (auto kb = ParseUnsigned(number)) out.emplace_back(line.substr(0, colon), *kb);
  }
  return out;
}

DeviceInfo ReadDeviceInfo(pid_t pid) {
  DeviceInfo info;
  std::ifstream meminfo("/proc/meminfo");
  std::string key, unit;
  uint64_t value = 0;
  while (meminfo >> key >> value >> unit) {
    if (key == "MemTotal:") info.mem_total_bytes = value * 1024;
    if (key == "MemAvailable:") info.mem_available_kb = value;
  }
  const uint64_t mb = info.mem_total_bytes / (1024 * 1024);
  const long cores = sysconf(_SC_NPROCESSORS_CONF);
  if (mb >= 8 * 1024)
    info.machine = "BEST";
  else if (mb >= 6 * 1024)
    info.machine = "HIGH";
  else if (mb >= 4 * 1024)
    info.machine = "MIDDLE";
  else if (mb >= 2 * 1024)
    info.machine = cores >= 4 ? "MIDDLE" : "LOW";
  else if (mb > 0)
    info.machine = "BAD";
  // The process's CPU share since boot: utime+stime over the sum of /proc/stat's cpu line.
  std::ifstream stat("/proc/stat");
  std::string cpu;
  uint64_t total = 0;
  stat >> cpu;
  for (int i = 0; i < 7 && stat >> value; ++i) total += value;
  if (auto ticks = ReadCpuTicks(pid); ticks && total)
    info.cpu_app_percent = 100.0 * static_cast<double>(*ticks) / static_cast<double>(total);
  return info;
}

}  // namespace looptrace::loader
