// MessagesTracer (Matrix's LooperMonitor, from outside): every message span becomes a
// Message: cost distribution per thread, slowest messages, by-name table.
#pragma once

#include <algorithm>
#include <map>
#include <string>
#include <unordered_map>
#include <vector>

#include "looptrace/report/report.h"
#include "looptrace/tracers/cost_accumulator.h"
#include "looptrace/tracers/thread_map.h"
#include "looptrace/tracers/tracer.h"

namespace looptrace {

// A message span's Message without a string of its own (names are interned: TextPool), so
// the messages tracer keeps one per completed message without allocating.
struct MessageRecord {
  uint64_t begin_ns = 0, end_ns = 0, cpu_ns = 0, msg_id = 0;
  const std::string* name = nullptr;
  const std::string* group = nullptr;  // "messages by name" counts it under this, else its name
  uint64_t loop_delay_ns = 0;
  uint32_t tid = 0, depth = 0;
  bool has_id = false;
  bool has_loop_delay = false;

  // Inline: one per message.
  static MessageRecord Of(const Span& span) {
    MessageRecord m;
    m.tid = span.tid;
    m.begin_ns = span.begin_ns;
    m.end_ns = std::max(span.end_ns, span.begin_ns);
    if (span.keyed) {
      m.has_id = true;
      m.msg_id = span.key;
    }
    if (const EventArg* name = span.begin.Arg("name"); name && name->text && !name->text->empty()) {
      m.name = name->text;
      if (const EventArg* group = span.begin.Arg("group"); group && group->text && !group->text->empty())
        m.group = group->text;
    }
    m.depth = span.depth;
    m.cpu_ns = span.cpu_ns();
    // A timer's due time on the loop's millisecond clock (0: BPF could not read it).
    if (const EventArg* due = span.begin.Arg("due_ms"); due && due->value) {
      const uint64_t due_ns = due->value * 1'000'000;
      m.has_loop_delay = true;
      m.loop_delay_ns = m.begin_ns > due_ns ? m.begin_ns - due_ns : 0;
    }
    return m;
  }
  uint64_t cost_ns() const { return end_ns - begin_ns; }
  Message ToMessage() const {
    Message m;
    FillMessage(m);
    return m;
  }
  // Sets `m`'s fields (a report builds its list in place: no move per message). Inline:
  // once per listed message.
  void FillMessage(Message& m) const {
    m.tid = tid;
    m.begin_ns = begin_ns;
    m.end_ns = end_ns;
    if (has_id) m.msg_id = msg_id;
    if (name) m.name = *name;
    m.depth = depth;
    m.cpu_ns = cpu_ns;
    if (has_loop_delay) m.loop_delay_ns = loop_delay_ns;
  }
};

// The Message a message span describes.
inline Message MessageOf(const Span& span) { return MessageRecord::Of(span).ToMessage(); }

struct MessagesOptions : TracerOptions {
  // 0: every message is listed and every percentile exact. N: the report lists the latest
  // N completed messages; summaries still count all, exact up to N values per thread or
  // name and within 0.4% past that (cost_accumulator.h). Bounded by default: long sessions
  // stay flat in memory.
  size_t keep_messages = 100'000;
  void Declare(OptionSet& options) override;
};

class MessagesTracer : public CopyableTracer<MessagesTracer> {
 public:
  MessagesTracer(const MessagesOptions& options, const TracerContext& context);
  uint32_t span_kinds() const override { return SpanBit(SpanKind::kMessage); }
  // The session's probes: whether the profile can see messages at all.
  uint32_t event_types() const override { return EventBit<SessionStart>(); }
  void OnEvent(const Event& event) override;
  void OnSpanEnd(const Span& span) override;
  void Contribute(Report& report) override;

 private:
  void Keep(const MessageRecord& message);
  bool CouldRank(const Message& message) const;
  void Rank(const Message& message, std::vector<Message> nested);
  // A message that nests others, or is nested (or others wait on some thread).
  void RankNesting(const Message& message);
  // Ranks alone the nested ones waiting inside `holder`, which never ended.
  void ReleaseNested(const Message& holder);
  void DropUnlisted();  // from slowest_nested_, those under no slowest_ entry

  const MessagesOptions& options_;
  // In end order from oldest_: every one, or with keep_messages the latest that many (then a
  // ring: the newest overwrites the oldest, so memory stays flat).
  std::vector<MessageRecord> completed_;
  size_t oldest_ = 0;
  std::vector<Message> unfinished_;
  std::vector<Message> slowest_;  // top N by cost, kept as they come
  // A slow message is counted once: one nested in another (GLib's named callback inside its
  // g_main_context_dispatch message) waits here, by thread, until the message holding it
  // ends; then it is listed under that one (slowest_nested_), not ranked beside it. Ranked
  // alone only when the message holding it never ended (lost, or running at the end).
  struct NestedSlow {
    Message message;
    std::vector<Message> nested;  // the slow ones it holds in turn
  };
  std::map<uint32_t, std::vector<NestedSlow>> nested_waiting_;
  std::vector<Message> slowest_nested_;  // under a slowest_ entry (same thread, inside it)
  struct ThreadCosts {
    CostAccumulator costs;
    uint64_t busy_ns = 0;  // top-level messages only
  };
  ThreadMap<ThreadCosts> by_tid_;
  std::map<std::string, CostAccumulator> by_name_;
  CostAccumulator loop_delays_;
  // by_name_'s entries by the text pointer a message names them with (texts are interned,
  // one pointer per text: a lookup hashes a pointer instead of comparing names down a
  // tree). A copy starts empty, as its pointers are into the original's map.
  struct NameCache {
    NameCache() = default;
    NameCache(const NameCache&) {}
    NameCache& operator=(const NameCache&) {
      entries.clear();
      return *this;
    }
    std::unordered_map<const std::string*, CostAccumulator*> entries;
  };
  NameCache by_name_text_;
  uint64_t not_listed_ = 0;
  bool saw_message_ = false;
  bool dispatch_probed_ = false;  // the profile binds dispatch.begin
  bool poll_probed_ = false;      // ... or poll.begin
};

}  // namespace looptrace
