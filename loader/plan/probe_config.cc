#include "loader/plan/probe_config.h"

#include <algorithm>
#include <cstring>

namespace looptrace::loader {

uint64_t MakeCookie(const ResolvedProbe& probe) {
  return LT_COOKIE(probe.probe_id, static_cast<uint16_t>(probe.spec.role) & 0xFF);
}

namespace {

lt_arg_config ArgConfig(const ArgSource& arg) {
  lt_arg_config c{};
  c.source = arg.source;
  c.type = arg.type == ArgType::kStr          ? LT_ARG_STR
           : arg.type == ArgType::kInt        ? LT_ARG_INT
           : arg.type == ArgType::kPyCallable ? LT_ARG_PY_CALLABLE
           : arg.type == ArgType::kAt         ? LT_ARG_AT
                                              : LT_ARG_UINT;  // sym: uint
  c.length_source = arg.type == ArgType::kStr ? arg.length_source : LT_SOURCE_NONE;
  c.offset_words =
      static_cast<uint8_t>(arg.type == ArgType::kAt || arg.type == ArgType::kPyCallable ? arg.offset / 8 : 0);
  return c;
}

uint8_t PredicateOp(CompareOp op) {
  switch (op) {
    case CompareOp::kEq:
      return LT_PRED_EQ;
    case CompareOp::kNe:
      return LT_PRED_NE;
    case CompareOp::kLt:
      return LT_PRED_LT;
    case CompareOp::kLe:
      return LT_PRED_LE;
    case CompareOp::kGt:
      return LT_PRED_GT;
    case CompareOp::kGe:
      return LT_PRED_GE;
    case CompareOp::kStrEq:
      return LT_PRED_STR_EQ;
    case CompareOp::kStrNe:
      return LT_PRED_STR_NE;
    case CompareOp::kStrPrefix:
      return LT_PRED_STR_PREFIX;
    case CompareOp::kStrSuffix:
      return LT_PRED_STR_SUFFIX;
    case CompareOp::kStrGlob:
      return LT_PRED_STR_GLOB;
  }
  return 0;
}

}  // namespace

lt_probe_config MakeProbeConfig(const ResolvedProbe& probe) {
  const ProbeSpec& spec = probe.spec;
  lt_probe_config c{};
  c.role = static_cast<uint16_t>(spec.role);
  // Loader-filled arguments (func, "text") come last and are not read by BPF.
  const size_t recorded = static_cast<size_t>(
      std::count_if(spec.args.begin(), spec.args.end(), [](const ArgSpec& a) { return !FilledByLoader(a); }));
  c.nargs = static_cast<uint8_t>(std::min<size_t>(recorded, LT_MAX_ARGS));
  c.npredicates = static_cast<uint8_t>(std::min<size_t>(spec.conditions.size(), LT_MAX_PREDICATES));
  if (IsBeatRole(spec.role)) {
    c.flags |= LT_PROBE_BEAT;
    c.enter = spec.role == Role::kMethodEnter;
    for (const auto& a : spec.args)
      if (a.type == ArgType::kStr) c.flags |= LT_PROBE_IDENTITY;
  }
  // Roles other threads fire for the loop thread (posting, GC, monitor releases): LT_ROLES.
  if (InfoOf(spec.role).all_threads) c.flags |= LT_PROBE_ALL_THREADS;
  if (spec.role == Role::kDispatchBegin) c.flags |= LT_PROBE_CLAIMS_LOOP;
  // The holder of a monitor is named by its thread name, taken at the hit.
  if (spec.role == Role::kLockRelease && c.nargs <= LT_COMM_ARG_SLOT) c.flags |= LT_PROBE_COMM;
  for (size_t i = 0; i < c.nargs; ++i) c.args[i] = ArgConfig(spec.args[i]);
  for (size_t i = 0; i < c.npredicates; ++i) {
    const Condition& cond = spec.conditions[i];
    lt_predicate& p = c.predicates[i];
    p.arg = ArgConfig(cond.arg);
    p.op = PredicateOp(cond.op);
    p.value = cond.value;
    p.pattern_len = static_cast<uint8_t>(std::min<size_t>(cond.pattern.size(), LT_MAX_PATTERN));
    std::memcpy(p.pattern, cond.pattern.data(), p.pattern_len);
  }
  return c;
}

std::vector<lt_probe_config> MakeProbeConfigs(const AttachPlan& plan) {
  bool dispatch = false;
  for (const auto& p : plan.probes) dispatch |= p.spec.role == Role::kDispatchBegin;
  std::vector<lt_probe_config> configs;
  for (const auto& p : plan.probes) {
    configs.push_back(MakeProbeConfig(p));
    // Poll-bounded messages begin when a poll returns: that thread runs the loop.
    if (!dispatch && p.spec.role == Role::kPollEnd) configs.back().flags |= LT_PROBE_CLAIMS_LOOP;
  }
  return configs;
}

bool UsesFastBeats(const ResolvedProbe& probe) {
  const ProbeSpec& spec = probe.spec;
  return (spec.role == Role::kMethodEnter || spec.role == Role::kMethodExit) && spec.kind == ProbeKind::kUprobe &&
         spec.args.size() == 1 && spec.args[0].source == 0 && spec.args[0].type != ArgType::kStr &&
         spec.args[0].type != ArgType::kPyCallable;
}

}  // namespace looptrace::loader
