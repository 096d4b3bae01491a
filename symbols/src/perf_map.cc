#include "looptrace/symbols/perf_map.h"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <charconv>
#include <fstream>
#include <sstream>

#include "looptrace/symbols/proc_maps.h"

namespace looptrace::symbols {
namespace {

bool ParseHex(std::string_view text, uint64_t* value) {
  if (text.starts_with("0x") || text.starts_with("0X")) text.remove_prefix(2);
  if (text.empty() || text.size() > 16) return false;
  auto [ptr, ec] = std::from_chars(text.data(), text.data() + text.size(), *value, 16);
  return ec == std::errc() && ptr == text.data() + text.size();
}

std::string_view NextField(std::string_view* line) {
  size_t begin = line->find_first_not_of(" \t");
  if (begin == std::string_view::npos) {
    *line = {};
    return {};
  }
  line->remove_prefix(begin);
  size_t end = line->find_first_of(" \t");
  std::string_view field = line->substr(0, end);
  line->remove_prefix(end == std::string_view::npos ? line->size() : end);
  return field;
}

}  // namespace

void ParsePerfMap(std::string_view text, std::vector<PerfMapEntry>* out, size_t* malformed) {
  while (!text.empty()) {
    size_t eol = text.find('\n');
    std::string_view line = text.substr(0, eol);
    text.remove_prefix(eol == std::string_view::npos ? text.size() : eol + 1);
    if (!line.empty() && line.back() == '\r') line.remove_suffix(1);
    if (line.find_first_not_of(" \t") == std::string_view::npos) continue;  // blank
    PerfMapEntry entry;
    std::string_view rest = line;
    std::string_view start = NextField(&rest);
    std::string_view size = NextField(&rest);
    size_t name_begin = rest.find_first_not_of(" \t");
    std::string_view name = name_begin == std::string_view::npos ? std::string_view() : rest.substr(name_begin);
    while (!name.empty() && (name.back() == ' ' || name.back() == '\t')) name.remove_suffix(1);
    if (!ParseHex(start, &entry.start) || !ParseHex(size, &entry.size) || entry.size == 0 || name.empty() ||
        entry.start + entry.size < entry.start) {
      if (malformed) ++*malformed;
      continue;
    }
    entry.name = std::string(name);
    out->push_back(std::move(entry));
  }
}

void PerfMap::MergeNew(size_t first_new) {
  // The new lines carry higher sequences than every old one: sorting them alone and merging
  // keeps (start, sequence) order without sorting the whole map again at each growth.
  auto by_start = [](const PerfMapEntry& a, const PerfMapEntry& b) { return a.start < b.start; };
  const auto middle = entries_.begin() + static_cast<std::ptrdiff_t>(first_new);
  std::stable_sort(middle, entries_.end(), by_start);
  std::inplace_merge(entries_.begin(), middle, entries_.end(), by_start);
  // A method recompiled at one start again and again (a long-running server's map grows for
  // days): its last few lines are enough for samples a poll or two old.
  constexpr size_t kLinesPerStart = 4;
  size_t kept = 0;
  for (size_t i = 0; i < entries_.size(); ++i) {
    size_t same_after = 0;
    for (size_t j = i + 1; j < entries_.size() && entries_[j].start == entries_[i].start && same_after < kLinesPerStart;
         ++j)
      ++same_after;
    if (same_after >= kLinesPerStart) continue;  // kLinesPerStart newer lines at this start
    if (kept != i) entries_[kept] = std::move(entries_[i]);
    ++kept;
  }
  entries_.resize(kept);
}

void PerfMap::Refresh(uint64_t now_ns) {
  // Lines found now were written after the previous look.
  const uint64_t written_after_ns = checked_at_ns_;
  checked_at_ns_ = now_ns;
  struct stat st;
  if (stat(path_.c_str(), &st) != 0) return;  // not written (yet), or the process is gone
  const int64_t mtime_ns = static_cast<int64_t>(st.st_mtim.tv_sec) * 1'000'000'000 + st.st_mtim.tv_nsec;
  const uint64_t size = static_cast<uint64_t>(st.st_size);
  if (st.st_ino == inode_ && size == size_ && mtime_ns == mtime_ns_) return;
  std::ifstream in(path_, std::ios::binary);
  if (!in) return;
  // Rewritten (another file, shorter, or other first bytes): start over; grown: parse the
  // new lines only.
  char head[64] = {};
  in.read(head, sizeof(head));
  const std::string now_head(head, static_cast<size_t>(in.gcount()));
  in.clear();
  const bool same_start = now_head.size() >= head_.size() && now_head.compare(0, head_.size(), head_) == 0;
  if (st.st_ino != inode_ || size < read_offset_ || !same_start) {
    entries_.clear();
    longest_ = 0;
    read_offset_ = 0;
    malformed_ = 0;
  }
  head_ = now_head;
  in.seekg(static_cast<std::streamoff>(read_offset_));
  std::string text((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  // A line still being written is parsed next time.
  size_t complete = text.rfind('\n');
  if (complete == std::string::npos) return;
  text.resize(complete + 1);
  const size_t first_new = entries_.size();
  ParsePerfMap(text, &entries_, &malformed_);
  for (size_t i = first_new; i < entries_.size(); ++i) {
    entries_[i].sequence = next_sequence_++;
    entries_[i].written_after_ns = written_after_ns;
    longest_ = std::max(longest_, entries_[i].size);
  }
  read_offset_ += text.size();
  inode_ = st.st_ino;
  size_ = size;
  mtime_ns_ = mtime_ns;
  MergeNew(first_new);
}

const std::string* PerfMap::Lookup(uint64_t address, uint64_t at_ns) const {
  auto it = std::upper_bound(entries_.begin(), entries_.end(), address,
                             [](uint64_t a, const PerfMapEntry& e) { return a < e.start; });
  const PerfMapEntry* newest_before = nullptr;  // the newest written before the sample
  const PerfMapEntry* oldest = nullptr;         // the oldest covering one, if all came later
  // Entries starting more than the longest size below `address` cannot cover it.
  while (it != entries_.begin()) {
    --it;
    if (address - it->start >= longest_) break;
    if (address - it->start >= it->size) continue;
    if (it->written_after_ns < at_ns && (!newest_before || it->sequence > newest_before->sequence))
      newest_before = &*it;
    if (!oldest || it->sequence < oldest->sequence) oldest = &*it;
  }
  if (newest_before) return &newest_before->name;
  return oldest ? &oldest->name : nullptr;
}

std::string PerfMapPath(pid_t pid) {
  // The pid the process knows itself by: the last field of NSpid.
  std::ifstream status("/proc/" + std::to_string(pid) + "/status");
  std::string line;
  pid_t ns_pid = pid;
  while (std::getline(status, line)) {
    if (!line.starts_with("NSpid:")) continue;
    std::istringstream fields(line.substr(6));
    pid_t value = 0;
    while (fields >> value) ns_pid = value;
  }
  return ProcRootPath(pid, "/tmp/perf-" + std::to_string(ns_pid) + ".map");
}

}  // namespace looptrace::symbols
