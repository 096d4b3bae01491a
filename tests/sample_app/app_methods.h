// The instrumented "app methods" of the sample target, named like the Java
// methods of Matrix's sample activity (TestTraceMainActivity.testJankiess):
// A() calls B(), H(), L(), and so on (see app_methods.cc). They live in their
// own translation unit, app_methods.cc, the only one that
// looptrace-sample-app-cyg compiles with -finstrument-functions.
//
// They are deliberately outside namespace looptrace so that their ELF
// symbols read like the Java names: sample::app::TestTraceMainActivity::A()
// is _ZN6sample3app21TestTraceMainActivity1AEv. Each is noinline with its own
// symbol (in .symtab and .dynsym), so a profiler can name it from the ELF
// symbol table. Ids, Java names and symbols are in method_trace.cc.

#ifndef LOOPTRACE_TESTS_SAMPLE_APP_APP_METHODS_H_
#define LOOPTRACE_TESTS_SAMPLE_APP_APP_METHODS_H_

#define LOOPTRACE_SAMPLE_APP_METHOD __attribute__((noinline, noclone, used))

namespace sample::app {

// Matrix's sample call pattern. Planned wall time per call (sleeps; the
// evil-short scenario divides every sleep by 10):
//   A: B() H() L() sleep 800      -> 2236 ms
//   B: C() G() sleep 200          ->  380 ms
//   C: D() E() F() sleep 100      ->  160 ms
//   D, E, F, G, I: sleep 20       ->   20 ms
//   H: sleep 20, I() J() K()      ->   56 ms
//   J: sleep 6;  K: sleep 10;  L: sleep 1000
struct TestTraceMainActivity {
  LOOPTRACE_SAMPLE_APP_METHOD static void A();
  LOOPTRACE_SAMPLE_APP_METHOD static void B();
  LOOPTRACE_SAMPLE_APP_METHOD static void C();
  LOOPTRACE_SAMPLE_APP_METHOD static void D();
  LOOPTRACE_SAMPLE_APP_METHOD static void E();
  LOOPTRACE_SAMPLE_APP_METHOD static void F();
  LOOPTRACE_SAMPLE_APP_METHOD static void G();
  LOOPTRACE_SAMPLE_APP_METHOD static void H();
  LOOPTRACE_SAMPLE_APP_METHOD static void I();
  LOOPTRACE_SAMPLE_APP_METHOD static void J();
  LOOPTRACE_SAMPLE_APP_METHOD static void K();
  LOOPTRACE_SAMPLE_APP_METHOD static void L();
  // The work of the ordinary short messages around the slow one: 3 ms of
  // busy-spinning.
  LOOPTRACE_SAMPLE_APP_METHOD static void shortWork();
};

// The startup call tree (startup-slow-create; the other startup scenarios
// divide every spin and sleep of SampleApplication by 10). Planned wall time:
//   onCreate: initCrashReporter() initNetwork() initDatabase()
//             initImageLoader() then sleep 100                  -> 1500 ms
//   initCrashReporter: spin 100
//   initNetwork: loadConfig() connectPool() then sleep 50         ->  400 ms
//     loadConfig: sleep 200;  connectPool: spin 150
//   initDatabase: openDatabase() migrateSchema()                  ->  600 ms
//     openDatabase: sleep 100;  migrateSchema: spin 250, sleep 250
//   initImageLoader: spin 300
struct SampleApplication {
  LOOPTRACE_SAMPLE_APP_METHOD static void onCreate();
  LOOPTRACE_SAMPLE_APP_METHOD static void initCrashReporter();
  LOOPTRACE_SAMPLE_APP_METHOD static void initNetwork();
  LOOPTRACE_SAMPLE_APP_METHOD static void loadConfig();
  LOOPTRACE_SAMPLE_APP_METHOD static void connectPool();
  LOOPTRACE_SAMPLE_APP_METHOD static void initDatabase();
  LOOPTRACE_SAMPLE_APP_METHOD static void openDatabase();
  LOOPTRACE_SAMPLE_APP_METHOD static void migrateSchema();
  LOOPTRACE_SAMPLE_APP_METHOD static void initImageLoader();
};

// Activity callbacks run by the launchActivity message (not scaled):
//   MainActivity.onCreate: spin 20, sleep 10; onResume: spin 5
//   SplashActivity.onCreate: spin 10
struct MainActivity {
  LOOPTRACE_SAMPLE_APP_METHOD static void onCreate();
  LOOPTRACE_SAMPLE_APP_METHOD static void onResume();
};

struct SplashActivity {
  LOOPTRACE_SAMPLE_APP_METHOD static void onCreate();
};

struct MethodStorm {
  // A tiny leaf: enter + exit and nothing else (method-storm scenario). No
  // truth record per call.
  LOOPTRACE_SAMPLE_APP_METHOD static void leaf();
};

}  // namespace sample::app

#endif  // LOOPTRACE_TESTS_SAMPLE_APP_APP_METHODS_H_
