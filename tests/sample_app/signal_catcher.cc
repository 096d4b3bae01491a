#include "signal_catcher.h"

#include <dirent.h>
#include <pthread.h>
#include <signal.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <ctime>
#include <fstream>
#include <sstream>
#include <string>
#include <thread>
#include <vector>

#include "sys_util.h"
#include "truth.h"

namespace looptrace::sample {
namespace {

struct ThreadInfo {
  pid_t tid = 0;
  std::string comm;
  char state = '?';
  long long utime = 0, stime = 0, nice = 0, processor = -1;
  std::string wchan;
};

std::string ReadFile(const std::string& path) {
  std::ifstream in(path);
  std::stringstream ss;
  ss << in.rdbuf();
  return ss.str();
}

// /proc/self/task/<tid>/stat: "tid (comm) state ppid ...". comm may hold
// spaces and parentheses: the fields start after the last ')'.
bool ReadThread(pid_t tid, ThreadInfo* info) {
  const std::string base = "/proc/self/task/" + std::to_string(tid);
  const std::string stat = ReadFile(base + "/stat");
  const size_t open = stat.find('(');
  const size_t close = stat.rfind(')');
  if (open == std::string::npos || close == std::string::npos || close < open) {
    return false;
  }
  info->tid = tid;
  info->comm = stat.substr(open + 1, close - open - 1);
  std::istringstream fields(stat.substr(close + 2));
  std::vector<std::string> f;  // f[0] = state (field 3)
  for (std::string field; fields >> field;) f.push_back(field);
  if (f.size() < 37) return false;
  info->state = f[0].empty() ? '?' : f[0][0];
  info->utime = std::atoll(f[11].c_str());      // field 14
  info->stime = std::atoll(f[12].c_str());      // field 15
  info->nice = std::atoll(f[16].c_str());       // field 19
  info->processor = std::atoll(f[36].c_str());  // field 39
  info->wchan = ReadFile(base + "/wchan");
  if (info->wchan.empty()) info->wchan = "0";
  return true;
}

const char* StateName(char state) {
  switch (state) {
    case 'R':
      return "Runnable";
    case 'S':
      return "Sleeping";
    case 'D':
      return "Blocked (uninterruptible)";
    case 'T':
      return "Stopped";
    case 't':
      return "TracingStop";
    case 'Z':
      return "Zombie";
    case 'X':
      return "Dead";
    case 'I':
      return "Idle";
    default:
      return "Unknown";
  }
}

std::vector<ThreadInfo> ListThreads() {
  std::vector<ThreadInfo> threads;
  DIR* dir = opendir("/proc/self/task");
  if (dir == nullptr) return threads;
  while (dirent* entry = readdir(dir)) {
    if (entry->d_name[0] < '0' || entry->d_name[0] > '9') continue;
    ThreadInfo info;
    if (ReadThread(static_cast<pid_t>(std::atoi(entry->d_name)), &info)) {
      threads.push_back(std::move(info));
    }
  }
  closedir(dir);
  const pid_t pid = getpid();
  std::sort(threads.begin(), threads.end(), [pid](const ThreadInfo& a, const ThreadInfo& b) {
    if ((a.tid == pid) != (b.tid == pid)) return a.tid == pid;
    return a.tid < b.tid;
  });
  return threads;
}

std::string DumpThreads(const std::vector<ThreadInfo>& threads) {
  const pid_t pid = getpid();
  char when[64] = "?";
  const time_t now = time(nullptr);
  tm local{};
  if (localtime_r(&now, &local) != nullptr) {
    strftime(when, sizeof(when), "%Y-%m-%d %H:%M:%S", &local);
  }
  std::string cmdline = ReadFile("/proc/self/cmdline");
  std::replace(cmdline.begin(), cmdline.end(), '\0', ' ');
  while (!cmdline.empty() && cmdline.back() == ' ') cmdline.pop_back();

  std::string out;
  char line[512];
  std::snprintf(line, sizeof(line), "\n----- pid %d at %s -----\nCmd line: %s\n\nTHREADS (%zu):\n", pid, when,
                cmdline.c_str(), threads.size());
  out += line;
  int index = 0;
  for (const ThreadInfo& t : threads) {
    std::string wchan = t.wchan;
    while (!wchan.empty() && (wchan.back() == '\n')) wchan.pop_back();
    std::snprintf(line, sizeof(line),
                  "\"%s\" tid=%d %s%s\n"
                  "  | sysTid=%d state=%c nice=%lld utm=%lld stm=%lld core=%lld\n"
                  "  | wchan=%s\n\n",
                  t.comm.c_str(), ++index, StateName(t.state), t.tid == pid ? " (main)" : "", t.tid, t.state, t.nice,
                  t.utime, t.stime, t.processor, wchan.c_str());
    out += line;
  }
  std::snprintf(line, sizeof(line), "----- end %d -----\n", pid);
  out += line;
  return out;
}

void WriteAll(int fd, const std::string& text) {
  size_t done = 0;
  while (done < text.size()) {
    const ssize_t n = write(fd, text.data() + done, text.size() - done);
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) return;
    done += static_cast<size_t>(n);
  }
}

void CatcherLoop() {
  pthread_setname_np(pthread_self(), "Signal Catcher");
  sigset_t set;
  sigemptyset(&set);
  sigaddset(&set, SIGQUIT);
  for (;;) {
    siginfo_t info{};
    const int sig = sigwaitinfo(&set, &info);
    if (sig != SIGQUIT) continue;  // EINTR
    const uint64_t ts_ns = NowNs();
    const std::vector<ThreadInfo> threads = ListThreads();
    WriteAll(STDERR_FILENO, DumpThreads(threads));
    TruthRecorder::Global().RecordLine(JsonLine("sigquit")
                                           .U("ts_ns", ts_ns)
                                           .I("sender_pid", info.si_pid)
                                           .U("sender_uid", info.si_uid)
                                           .I("tid", CurrentTid())
                                           .U("threads", threads.size())
                                           .U("dump_end_ns", NowNs())
                                           .Take());
  }
}

}  // namespace

std::string ThreadDump() { return DumpThreads(ListThreads()); }

void StartSignalCatcher() {
  sigset_t set;
  sigemptyset(&set);
  sigaddset(&set, SIGQUIT);
  pthread_sigmask(SIG_BLOCK, &set, nullptr);
  std::thread(CatcherLoop).detach();
}

}  // namespace looptrace::sample
