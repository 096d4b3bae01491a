#include "method_trace.h"

#include <dlfcn.h>

#include <cerrno>
#include <cstring>
#include <iterator>

#include "app_methods.h"
#include "looper.h"
#include "sys_util.h"
#include "truth.h"
#include "work.h"

namespace looptrace::sample {
namespace {

using Activity = ::sample::app::TestTraceMainActivity;
using Storm = ::sample::app::MethodStorm;
using ::sample::app::MainActivity;
using ::sample::app::SampleApplication;
using ::sample::app::SplashActivity;

constexpr uint32_t kPublic = 1;  // ACC_PUBLIC

#define LOOPTRACE_SAMPLE_ACTIVITY_METHOD(id, name, mangled)                                                      \
  MethodInfo {                                                                                                   \
    id, kPublic, "sample.app.TestTraceMainActivity", #name, "()V",                                               \
        "_ZN6sample3app21TestTraceMainActivity" mangled "Ev", "sample::app::TestTraceMainActivity::" #name "()", \
        &Activity::name                                                                                          \
  }

// Any class: java_class "sample.app.X", cpp "X", mangled_class "<len>X".
#define LOOPTRACE_SAMPLE_METHOD(id, cls, mangled_class, name, mangled)                          \
  MethodInfo {                                                                                  \
    id, kPublic, "sample.app." #cls, #name, "()V", "_ZN6sample3app" mangled_class mangled "Ev", \
        "sample::app::" #cls "::" #name "()", &cls::name                                        \
  }

// The static id table: ids are assigned here, once, starting at 1, in
// increasing order (like Matrix's ids, but reproducible).
const MethodInfo kMethods[] = {
    LOOPTRACE_SAMPLE_ACTIVITY_METHOD(kMethodA, A, "1A"),
    LOOPTRACE_SAMPLE_ACTIVITY_METHOD(kMethodB, B, "1B"),
    LOOPTRACE_SAMPLE_ACTIVITY_METHOD(kMethodC, C, "1C"),
    LOOPTRACE_SAMPLE_ACTIVITY_METHOD(kMethodD, D, "1D"),
    LOOPTRACE_SAMPLE_ACTIVITY_METHOD(kMethodE, E, "1E"),
    LOOPTRACE_SAMPLE_ACTIVITY_METHOD(kMethodF, F, "1F"),
    LOOPTRACE_SAMPLE_ACTIVITY_METHOD(kMethodG, G, "1G"),
    LOOPTRACE_SAMPLE_ACTIVITY_METHOD(kMethodH, H, "1H"),
    LOOPTRACE_SAMPLE_ACTIVITY_METHOD(kMethodI, I, "1I"),
    LOOPTRACE_SAMPLE_ACTIVITY_METHOD(kMethodJ, J, "1J"),
    LOOPTRACE_SAMPLE_ACTIVITY_METHOD(kMethodK, K, "1K"),
    LOOPTRACE_SAMPLE_ACTIVITY_METHOD(kMethodL, L, "1L"),
    LOOPTRACE_SAMPLE_ACTIVITY_METHOD(kMethodShortWork, shortWork, "9shortWork"),
    MethodInfo{kMethodStormLeaf, kPublic, "sample.app.MethodStorm", "leaf", "()V", "_ZN6sample3app11MethodStorm4leafEv",
               "sample::app::MethodStorm::leaf()", &Storm::leaf},
    LOOPTRACE_SAMPLE_METHOD(kMethodAppOnCreate, SampleApplication, "17SampleApplication", onCreate, "8onCreate"),
    LOOPTRACE_SAMPLE_METHOD(kMethodInitCrashReporter, SampleApplication, "17SampleApplication", initCrashReporter,
                            "17initCrashReporter"),
    LOOPTRACE_SAMPLE_METHOD(kMethodInitNetwork, SampleApplication, "17SampleApplication", initNetwork, "11initNetwork"),
    LOOPTRACE_SAMPLE_METHOD(kMethodLoadConfig, SampleApplication, "17SampleApplication", loadConfig, "10loadConfig"),
    LOOPTRACE_SAMPLE_METHOD(kMethodConnectPool, SampleApplication, "17SampleApplication", connectPool, "11connectPool"),
    LOOPTRACE_SAMPLE_METHOD(kMethodInitDatabase, SampleApplication, "17SampleApplication", initDatabase,
                            "12initDatabase"),
    LOOPTRACE_SAMPLE_METHOD(kMethodOpenDatabase, SampleApplication, "17SampleApplication", openDatabase,
                            "12openDatabase"),
    LOOPTRACE_SAMPLE_METHOD(kMethodMigrateSchema, SampleApplication, "17SampleApplication", migrateSchema,
                            "13migrateSchema"),
    LOOPTRACE_SAMPLE_METHOD(kMethodInitImageLoader, SampleApplication, "17SampleApplication", initImageLoader,
                            "15initImageLoader"),
    LOOPTRACE_SAMPLE_METHOD(kMethodMainOnCreate, MainActivity, "12MainActivity", onCreate, "8onCreate"),
    LOOPTRACE_SAMPLE_METHOD(kMethodMainOnResume, MainActivity, "12MainActivity", onResume, "8onResume"),
    LOOPTRACE_SAMPLE_METHOD(kMethodSplashOnCreate, SplashActivity, "14SplashActivity", onCreate, "8onCreate"),
};

#undef LOOPTRACE_SAMPLE_ACTIVITY_METHOD
#undef LOOPTRACE_SAMPLE_METHOD

uint64_t g_evil_sleep_divisor = 1;
uint64_t g_startup_divisor = 1;

// Per thread (methods may in principle run on any looper).
thread_local uint32_t t_depth = 0;
thread_local uint64_t t_pending_call_ns = 0;

}  // namespace

std::span<const MethodInfo> Methods() { return kMethods; }

const MethodInfo* FindMethod(uint32_t id) {
  if (id == 0 || id > std::size(kMethods)) return nullptr;
  return &kMethods[id - 1];
}

bool WriteMethodMapping(std::FILE* out, std::string* error) {
  for (const MethodInfo& m : kMethods) {
    std::fprintf(out, "%u,%u,%s %s %s\n", m.id, m.access_flags, m.class_name, m.method_name, m.descriptor);
  }
  std::fprintf(out, "%u,1,android.os.Handler dispatchMessage (Landroid.os.Message;)V\n", kMethodIdDispatch);
  const bool write_failed = std::ferror(out) != 0 || std::fflush(out) != 0;
  const int saved_errno = errno;
  const bool close_failed = std::fclose(out) != 0;
  if (write_failed || close_failed) {
    *error = std::strerror(write_failed ? saved_errno : errno);
    return false;
  }
  return true;
}

std::vector<std::string> CheckMethodTable() {
  std::vector<std::string> problems;
  uint32_t expected_id = 1;
  for (const MethodInfo& m : kMethods) {
    if (m.id != expected_id) {
      problems.push_back("method " + std::string(m.method_name) + " has id " + std::to_string(m.id) + ", expected " +
                         std::to_string(expected_id));
    }
    ++expected_id;
    Dl_info info{};
    const void* address = reinterpret_cast<const void*>(m.fn);
    if (dladdr(address, &info) == 0 || info.dli_sname == nullptr) {
      problems.push_back(std::string("dladdr finds no symbol for ") + m.symbol);
    } else if (std::strcmp(info.dli_sname, m.symbol) != 0 || info.dli_saddr != address) {
      problems.push_back(std::string("dladdr names ") + m.symbol + " " + info.dli_sname);
    }
  }
  return problems;
}

void SetEvilSleepDivisor(uint64_t divisor) { g_evil_sleep_divisor = divisor == 0 ? 1 : divisor; }

void EvilSleepMs(uint64_t planned_ms) { SleepFor(planned_ms * kNsPerMs / g_evil_sleep_divisor); }

void MethodSpinMs(uint64_t ms) { SpinFor(ms * kNsPerMs); }

void MethodSleepMs(uint64_t ms) { SleepFor(ms * kNsPerMs); }

void SetStartupDivisor(uint64_t divisor) { g_startup_divisor = divisor == 0 ? 1 : divisor; }

void StartupSpinMs(uint64_t planned_ms) { SpinFor(planned_ms * kNsPerMs / g_startup_divisor); }

void StartupSleepMs(uint64_t planned_ms) { SleepFor(planned_ms * kNsPerMs / g_startup_divisor); }

uint64_t MethodScopeBegin(uint32_t* depth) {
  *depth = t_depth++;
#if LOOPTRACE_SAMPLE_CYG
  const uint64_t begin_ns = t_pending_call_ns;
  t_pending_call_ns = 0;
  return begin_ns != 0 ? begin_ns : NowNs();
#else
  return NowNs();  // the last thing before sample_method_enter
#endif
}

uint64_t MethodScopeEndNs() { return NowNs(); }

void MethodScopeRecord(uint32_t id, uint32_t depth, uint64_t begin_ns, uint64_t end_ns) {
  t_depth = depth;
  Looper::AddMethodCalls(1);
  TruthRecorder::Global().RecordMethod(CurrentTid(), *FindMethod(id), depth, begin_ns, end_ns,
                                       Looper::CurrentMessageId());
}

void MarkMethodCall() { t_pending_call_ns = NowNs(); }

}  // namespace looptrace::sample
