#include "looptrace/tracers/sampled_tree.h"

#include "looptrace/tracers/sample_store.h"

namespace looptrace {

namespace {
// Methods listed per thread in a session profile.
constexpr size_t kTopMethods = 10;
}  // namespace

void SampledTreeTracer::Contribute(Report& report) {
  if (!context_.samples) return;
  report.session_stacks = context_.samples->SessionStacks(report.session.end_ns);
  // No message to hang samples on (a JVM without method probes, a profile without dispatch
  // roles): where each thread ran over the whole session is the report's answer instead.
  const MessagesReport& m = report.messages;
  if (m.messages.empty() && m.unfinished.empty() && m.not_listed == 0)
    report.session_profile.threads = context_.samples->ThreadProfiles(kTopMethods);
}

}  // namespace looptrace
