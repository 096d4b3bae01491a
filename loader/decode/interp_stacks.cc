#include "loader/decode/interp_stacks.h"

#include <cstddef>
#include <cstring>
#include <utility>

namespace looptrace::loader {
namespace {

// Native frames kept under the Python frames in the default view: the C code the time is in.
// BPF walks no further (events.h), unless --native-frames.
constexpr size_t kMaxNativeLeaf = LT_VIEW_NATIVE_LEAF;

}  // namespace

bool InterpreterStacks::Add(std::span<const uint8_t> raw) {
  constexpr size_t kFrames = offsetof(lt_interp_stack, frames);
  lt_interp_stack rec;
  if (raw.size() < kFrames) return false;
  std::memcpy(&rec, raw.data(), kFrames);
  if (rec.nr_frames > LT_MAX_INTERP_FRAMES || rec.header.size != kFrames + rec.nr_frames * sizeof(lt_interp_frame) ||
      raw.size() < rec.header.size)
    return false;
  std::memcpy(rec.frames, raw.data() + kFrames, rec.nr_frames * sizeof(lt_interp_frame));
  Pending& pending = pending_[rec.tid];
  pending.ts_ns = rec.ts_ns;
  pending.flags = rec.flags;
  pending.frames.clear();  // keeps its storage: a thread's stacks come all the time
  if (!interpreter_) return true;
  pending.frames.reserve(rec.nr_frames);
  if (rec.flags & LT_INTERP_TRUNCATED) stats_->Add(StatId::interp_stacks_truncated);
  if (rec.flags & (LT_INTERP_BAD_CODE | LT_INTERP_READ_FAILED)) stats_->Add(StatId::interp_stacks_failed);
  const bool keep = interpreter_->NamesFramesByCodeAlone();
  for (uint16_t i = 0; i < rec.nr_frames; ++i) {
    const lt_interp_frame& frame = rec.frames[i];
    const FrameKey key{frame.code, frame.offset, frame.fingerprint};
    if (keep)
      if (auto kept = kept_.find(key); kept != kept_.end()) {
        pending.frames.insert(pending.frames.end(), kept->second.begin(), kept->second.end());
        continue;
      }
    const bool ends_run = interpreter_->EndsLoopRun(frame);
    expanded_.clear();
    if (!interpreter_->ExpandFrame(frame, stats_, &expanded_)) {  // not kept (nor markers): a later walk may name it
      pending.frames.push_back(std::make_shared<const Named>(std::string(kUnknownFrame), ends_run, false, ""));
      continue;
    }
    const size_t first = pending.frames.size();
    bool has_marker = false;
    for (InterpreterFrame& named : expanded_) {
      has_marker |= named.marker;
      pending.frames.push_back(
          std::make_shared<const Named>(named.Name(), ends_run, named.user_code, std::move(named.callable)));
    }
    if (!keep || has_marker) continue;
    if (kept_.size() >= kMaxKeptFrames) kept_.clear();
    kept_.emplace(key, std::vector<SharedNamed>(pending.frames.begin() + first, pending.frames.end()));
  }
  interpreter_->NoteThreadStack(rec.tid, std::span<const lt_interp_frame>(rec.frames, rec.nr_frames));
  return true;
}

// A runtime whose walks mark where they reached its entry (a JVM's: the native walk cannot
// go on through JIT-compiled code, and is cut there on purpose while Java runs): its walk
// decides whether the stack is whole, and a cut one is counted as tried.
void InterpreterStacks::CountWhole(const ResolvedStack& native, uint16_t flags) {
  if (!interpreter_->MarksItsEntry() || native.whole) return;
  const bool whole =
      (flags & LT_INTERP_AT_ENTRY) && !(flags & (LT_INTERP_TRUNCATED | LT_INTERP_BAD_CODE | LT_INTERP_READ_FAILED));
  if (!native.tried) stats_->Add(StatId::user_stacks_sampled);
  if (whole) stats_->Add(StatId::user_stacks_complete);
}

void InterpreterStacks::Splice(const ResolvedStack& native, StackSample* sample) {
  auto it = pending_.find(sample->tid);
  if (it == pending_.end() || it->second.ts_ns != sample->ts_ns) {
    if (interpreter_) interpreter_->NoteThreadStack(sample->tid, {});  // this stop has none
    if (it == pending_.end()) return;
  }
  // Used up here, its storage kept for the thread's next stack: a vector of a dozen frames
  // freed and grown again at every stack made libc consolidate its free lists each time.
  Pending& pending = it->second;
  const uint64_t pending_ts_ns = std::exchange(pending.ts_ns, 0);
  if (pending_ts_ns != sample->ts_ns || !interpreter_) return;
  CountWhole(native, pending.flags);
  if (pending.frames.empty()) return;
  // The outermost frame of the program's own, from a whole walk only (a cut one may miss it).
  if (!(pending.flags & (LT_INTERP_TRUNCATED | LT_INTERP_BAD_CODE | LT_INTERP_READ_FAILED)))
    for (auto f = pending.frames.rbegin(); f != pending.frames.rend(); ++f)
      if ((*f)->user_code) {
        sample->callable = (*f)->callable.empty() ? (*f)->name : (*f)->callable;
        break;
      }
  std::string_view end_marker;
  if (pending.flags & LT_INTERP_TRUNCATED)
    end_marker = kCutFrames;
  else if (pending.flags & (LT_INTERP_BAD_CODE | LT_INTERP_READ_FAILED))
    end_marker = kBrokenChain;

  std::vector<std::string> frames;
  size_t next = 0;  // the next Python frame to place
  if (merged_) {
    bool in_generated_run = false;  // after the frames spliced at a run of generated code
    for (const ResolvedFrame& f : native.frames) {
      if (interpreter_->IsGeneratedCode(f.module)) {
        if (next < pending.frames.size()) {
          for (; next < pending.frames.size(); ++next) frames.push_back(pending.frames[next]->name);
          in_generated_run = true;
        }
        if (in_generated_run) continue;
      } else {
        in_generated_run = false;
      }
      if (!interpreter_->IsInterpreterLoop(f.function) || next == pending.frames.size()) {
        frames.push_back(f.Name());
        continue;
      }
      // One C call of the loop: the Python frames up to the outermost of its run.
      while (next < pending.frames.size()) {
        frames.push_back(pending.frames[next]->name);
        if (pending.frames[next++]->ends_run) break;
      }
    }
    // The native walk ended early (no frame pointers, no CFI): the rest goes on top.
    if (next < pending.frames.size()) sample->stop.clear();
  } else {
    for (const ResolvedFrame& f : native.frames) {
      if (frames.size() == kMaxNativeLeaf || interpreter_->IsInterpreterModule(f.module) ||
          interpreter_->IsInterpreterLoop(f.function))
        break;
      frames.push_back(f.Name());
    }
    sample->stop.clear();  // the Python walk reached the outermost frame
  }
  for (; next < pending.frames.size(); ++next) frames.push_back(pending.frames[next]->name);
  if (!end_marker.empty()) sample->stop = std::string(end_marker);  // shown where the walk ended
  sample->frames = std::move(frames);
}

}  // namespace looptrace::loader
