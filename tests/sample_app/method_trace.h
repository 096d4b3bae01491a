// Method instrumentation support: the static method table (ids, Java-like
// names, ELF symbols), methodMapping.txt, and MethodScope, the guard each
// instrumented method starts with.
//
// Two flavours, chosen at compile time by LOOPTRACE_SAMPLE_CYG:
//   0 (looptrace-sample-app): id hooks. MethodScope calls
//     sample_method_enter(id) when constructed and sample_method_exit(id) when
//     destroyed, like Matrix's AppMethodBeat.i(id) / o(id).
//   1 (looptrace-sample-app-cyg): address hooks. app_methods.cc is compiled
//     with -finstrument-functions, so gcc calls __cyg_profile_func_enter/exit
//     around each method; MethodScope calls no hook.
// Either way MethodScope records the truth (begin, end, depth, message).
//
// Everything app_methods.cc uses from here is either out of line (defined in
// method_trace.cc, never instrumented) or always_inline and
// no_instrument_function, so -finstrument-functions instruments the methods
// themselves and nothing else.

#ifndef LOOPTRACE_TESTS_SAMPLE_APP_METHOD_TRACE_H_
#define LOOPTRACE_TESTS_SAMPLE_APP_METHOD_TRACE_H_

#include <cstdint>
#include <cstdio>
#include <span>
#include <string>
#include <vector>

#include "hooks.h"

#ifndef LOOPTRACE_SAMPLE_CYG
#define LOOPTRACE_SAMPLE_CYG 0
#endif

#define LOOPTRACE_SAMPLE_INLINE_NO_INSTRUMENT inline __attribute__((always_inline, no_instrument_function))

namespace looptrace::sample {

// Method ids, as in methodMapping.txt. A..L match Matrix's sample ids
// (docs/matrix-algorithms.md section 6).
enum MethodId : uint32_t {
  kMethodA = 1,
  kMethodB = 2,
  kMethodC = 3,
  kMethodD = 4,
  kMethodE = 5,
  kMethodF = 6,
  kMethodG = 7,
  kMethodH = 8,
  kMethodI = 9,
  kMethodJ = 10,
  kMethodK = 11,
  kMethodL = 12,
  kMethodShortWork = 13,
  kMethodStormLeaf = 14,
  kMethodAppOnCreate = 15,
  kMethodInitCrashReporter = 16,
  kMethodInitNetwork = 17,
  kMethodLoadConfig = 18,
  kMethodConnectPool = 19,
  kMethodInitDatabase = 20,
  kMethodOpenDatabase = 21,
  kMethodMigrateSchema = 22,
  kMethodInitImageLoader = 23,
  kMethodMainOnCreate = 24,
  kMethodMainOnResume = 25,
  kMethodSplashOnCreate = 26,
};

// Matrix's pseudo method for one main-looper message. Listed in
// methodMapping.txt; the sample app never emits it.
inline constexpr uint32_t kMethodIdDispatch = 1048574;

struct MethodInfo {
  uint32_t id;
  uint32_t access_flags;    // ASM access bits, 1 = public
  const char* class_name;   // "sample.app.TestTraceMainActivity"
  const char* method_name;  // "A"
  const char* descriptor;   // "()V"
  const char* symbol;       // ELF symbol: "_ZN6sample3app21TestTraceMainActivity1AEv"
  const char* demangled;    // "sample::app::TestTraceMainActivity::A()"
  void (*fn)();
};

// Sorted by id, ids 1..N.
std::span<const MethodInfo> Methods();
// nullptr for an unknown id.
const MethodInfo* FindMethod(uint32_t id);

// Writes methodMapping.txt in Matrix's format: "<id>,<accessFlag>,<class>
// <method> <desc>" per method, sorted by id, then the dispatchMessage line.
// Closes `out`. Returns false with the reason in *error on failure.
bool WriteMethodMapping(std::FILE* out, std::string* error);

// Selftest: the table is sorted with ids 1..N, and dladdr() names each
// method's address with its symbol. Returns one message per problem.
std::vector<std::string> CheckMethodTable();

// The evil-pattern methods sleep planned_ms / divisor milliseconds
// (clock_nanosleep on CLOCK_MONOTONIC). Divisor 1 = evil, 10 = evil-short.
void SetEvilSleepDivisor(uint64_t divisor);
void EvilSleepMs(uint64_t planned_ms);
// Busy-spins / sleeps for the given time (shortWork, activity callbacks).
void MethodSpinMs(uint64_t ms);
void MethodSleepMs(uint64_t ms);
// The SampleApplication methods spin / sleep planned_ms / divisor ms.
// Divisor 1 = startup-slow-create, 10 = the other startup scenarios.
void SetStartupDivisor(uint64_t divisor);
void StartupSpinMs(uint64_t planned_ms);
void StartupSleepMs(uint64_t planned_ms);

// Out-of-line helpers of MethodScope.
// Enters one level of nesting; stores the depth (0 = outermost instrumented
// method) in *depth and returns the begin timestamp: in the id flavour
// CLOCK_MONOTONIC read now (right before sample_method_enter), in the cyg
// flavour the time MarkMethodCall() saved in the caller right before the call
// (so before __cyg_profile_func_enter).
uint64_t MethodScopeBegin(uint32_t* depth);
// Reads the end timestamp.
uint64_t MethodScopeEndNs();
// Leaves the nesting level and adds the truth record.
void MethodScopeRecord(uint32_t id, uint32_t depth, uint64_t begin_ns, uint64_t end_ns);
// cyg flavour: saves CLOCK_MONOTONIC as the begin time of the method about to
// be called (see LOOPTRACE_SAMPLE_CALL).
void MarkMethodCall();

class MethodScope {
 public:
  LOOPTRACE_SAMPLE_INLINE_NO_INSTRUMENT explicit MethodScope(uint32_t id) : id_(id) {
    begin_ns_ = MethodScopeBegin(&depth_);
#if !LOOPTRACE_SAMPLE_CYG
    sample_method_enter(id_);
#endif
  }
  LOOPTRACE_SAMPLE_INLINE_NO_INSTRUMENT ~MethodScope() {
    const uint64_t end_ns = MethodScopeEndNs();
#if !LOOPTRACE_SAMPLE_CYG
    sample_method_exit(id_);
#endif
    MethodScopeRecord(id_, depth_, begin_ns_, end_ns);
  }
  MethodScope(const MethodScope&) = delete;
  MethodScope& operator=(const MethodScope&) = delete;

 private:
  const uint32_t id_;
  uint32_t depth_ = 0;
  uint64_t begin_ns_ = 0;
};

}  // namespace looptrace::sample

// Calls an instrumented method. In the cyg flavour the begin timestamp is
// read here, in the caller, because gcc's __cyg_profile_func_enter runs
// before any statement of the callee.
#if LOOPTRACE_SAMPLE_CYG
#define LOOPTRACE_SAMPLE_CALL(f) (::looptrace::sample::MarkMethodCall(), f())
#else
#define LOOPTRACE_SAMPLE_CALL(f) (f())
#endif

#endif  // LOOPTRACE_TESTS_SAMPLE_APP_METHOD_TRACE_H_
