// LooperMonitor: pairs dispatch.begin/end per thread into messages (Matrix's
// LooperMonitor, from outside): cost distribution, slowest messages, by-name table.
#pragma once

#include <cstddef>
#include <map>
#include <optional>
#include <set>
#include <vector>

#include "looptrace/tracers/event.h"
#include "looptrace/tracers/report.h"
#include "looptrace/tracers/stats.h"

namespace looptrace {

struct LooperMonitorOptions {
  size_t top_n = 10;  // slowest messages kept in the report
};

class LooperMonitor {
 public:
  explicit LooperMonitor(LooperMonitorOptions options, Stats* stats);

  // Returns the message a dispatch.end completed, if any.
  std::optional<Message> OnProbe(const ProbeEvent& event);
  // Closes the session: open messages become "unfinished" (cost up to end_ns).
  void Finish(uint64_t end_ns);
  void Contribute(MessagesReport* report) const;

  // Messages running now on `tid`, outermost first (other tracers ask instead of pairing
  // dispatch events themselves).
  std::vector<const Message*> OpenMessages(uint32_t tid) const;

 private:
  struct Open {
    Message message;
    uint64_t begin_cpu_ns = 0;
  };
  LooperMonitorOptions options_;
  Stats* stats_;
  std::map<uint32_t, std::vector<Open>> open_by_tid_;
  std::map<uint32_t, uint64_t> last_ts_by_tid_;
  std::set<uint32_t> began_tids_;
  std::vector<Message> completed_;
  std::vector<Message> unfinished_;
  bool saw_dispatch_ = false;
};

}  // namespace looptrace
