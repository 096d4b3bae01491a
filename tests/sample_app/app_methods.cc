// The instrumented app methods (see app_methods.h). In looptrace-sample-app
// each starts with a MethodScope, which calls sample_method_enter(id) and,
// when the method returns, sample_method_exit(id). In
// looptrace-sample-app-cyg this is the only translation unit compiled with
// -finstrument-functions, and gcc adds the __cyg_profile_func_enter/exit calls
// (MethodScope then only records the truth).
//
// Keep this file free of inline code from other headers: gcc instruments
// every function it compiles here, inlined ones included (except
// no_instrument_function ones). Everything called from here is out of line.
// The file is also compiled with -fno-optimize-sibling-calls and -fno-ipa-icf
// so that no method ends in a tail call or gets folded into another.

#include "app_methods.h"

#include "method_trace.h"

namespace sample::app {

using ::looptrace::sample::EvilSleepMs;
using ::looptrace::sample::MethodScope;
using ::looptrace::sample::MethodSpinMs;
using ::looptrace::sample::StartupSleepMs;
using ::looptrace::sample::StartupSpinMs;
namespace ids = ::looptrace::sample;

void TestTraceMainActivity::A() {
  MethodScope scope(ids::kMethodA);
  LOOPTRACE_SAMPLE_CALL(B);
  LOOPTRACE_SAMPLE_CALL(H);
  LOOPTRACE_SAMPLE_CALL(L);
  EvilSleepMs(800);
}

void TestTraceMainActivity::B() {
  MethodScope scope(ids::kMethodB);
  LOOPTRACE_SAMPLE_CALL(C);
  LOOPTRACE_SAMPLE_CALL(G);
  EvilSleepMs(200);
}

void TestTraceMainActivity::C() {
  MethodScope scope(ids::kMethodC);
  LOOPTRACE_SAMPLE_CALL(D);
  LOOPTRACE_SAMPLE_CALL(E);
  LOOPTRACE_SAMPLE_CALL(F);
  EvilSleepMs(100);
}

void TestTraceMainActivity::D() {
  MethodScope scope(ids::kMethodD);
  EvilSleepMs(20);
}

void TestTraceMainActivity::E() {
  MethodScope scope(ids::kMethodE);
  EvilSleepMs(20);
}

void TestTraceMainActivity::F() {
  MethodScope scope(ids::kMethodF);
  EvilSleepMs(20);
}

void TestTraceMainActivity::G() {
  MethodScope scope(ids::kMethodG);
  EvilSleepMs(20);
}

void TestTraceMainActivity::H() {
  MethodScope scope(ids::kMethodH);
  EvilSleepMs(20);
  LOOPTRACE_SAMPLE_CALL(I);
  LOOPTRACE_SAMPLE_CALL(J);
  LOOPTRACE_SAMPLE_CALL(K);
}

void TestTraceMainActivity::I() {
  MethodScope scope(ids::kMethodI);
  EvilSleepMs(20);
}

void TestTraceMainActivity::J() {
  MethodScope scope(ids::kMethodJ);
  EvilSleepMs(6);
}

void TestTraceMainActivity::K() {
  MethodScope scope(ids::kMethodK);
  EvilSleepMs(10);
}

void TestTraceMainActivity::L() {
  MethodScope scope(ids::kMethodL);
  EvilSleepMs(1000);
}

void TestTraceMainActivity::shortWork() {
  MethodScope scope(ids::kMethodShortWork);
  MethodSpinMs(3);
}

void SampleApplication::onCreate() {
  MethodScope scope(ids::kMethodAppOnCreate);
  LOOPTRACE_SAMPLE_CALL(initCrashReporter);
  LOOPTRACE_SAMPLE_CALL(initNetwork);
  LOOPTRACE_SAMPLE_CALL(initDatabase);
  LOOPTRACE_SAMPLE_CALL(initImageLoader);
  StartupSleepMs(100);
}

void SampleApplication::initCrashReporter() {
  MethodScope scope(ids::kMethodInitCrashReporter);
  StartupSpinMs(100);
}

void SampleApplication::initNetwork() {
  MethodScope scope(ids::kMethodInitNetwork);
  LOOPTRACE_SAMPLE_CALL(loadConfig);
  LOOPTRACE_SAMPLE_CALL(connectPool);
  StartupSleepMs(50);
}

void SampleApplication::loadConfig() {
  MethodScope scope(ids::kMethodLoadConfig);
  StartupSleepMs(200);
}

void SampleApplication::connectPool() {
  MethodScope scope(ids::kMethodConnectPool);
  StartupSpinMs(150);
}

void SampleApplication::initDatabase() {
  MethodScope scope(ids::kMethodInitDatabase);
  LOOPTRACE_SAMPLE_CALL(openDatabase);
  LOOPTRACE_SAMPLE_CALL(migrateSchema);
}

void SampleApplication::openDatabase() {
  MethodScope scope(ids::kMethodOpenDatabase);
  StartupSleepMs(100);
}

void SampleApplication::migrateSchema() {
  MethodScope scope(ids::kMethodMigrateSchema);
  StartupSpinMs(250);
  StartupSleepMs(250);
}

void SampleApplication::initImageLoader() {
  MethodScope scope(ids::kMethodInitImageLoader);
  StartupSpinMs(300);
}

void MainActivity::onCreate() {
  MethodScope scope(ids::kMethodMainOnCreate);
  MethodSpinMs(20);
  ::looptrace::sample::MethodSleepMs(10);
}

void MainActivity::onResume() {
  MethodScope scope(ids::kMethodMainOnResume);
  MethodSpinMs(5);
}

void SplashActivity::onCreate() {
  MethodScope scope(ids::kMethodSplashOnCreate);
  MethodSpinMs(10);
}

void MethodStorm::leaf() {
#if !LOOPTRACE_SAMPLE_CYG
  sample_method_enter(ids::kMethodStormLeaf);
#endif
  asm volatile("" ::: "memory");
#if !LOOPTRACE_SAMPLE_CYG
  sample_method_exit(ids::kMethodStormLeaf);
  asm volatile("" ::: "memory");  // keeps the exit call out of tail position
#endif
}

}  // namespace sample::app
