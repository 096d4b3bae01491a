// ART's "Signal Catcher": SIGQUIT is blocked in every thread and a dedicated
// thread takes it with sigwaitinfo(), prints a thread dump to stderr and lets
// the process run on (Android's system_server sends SIGQUIT to collect an
// ANR trace).

#ifndef LOOPTRACE_TESTS_SAMPLE_APP_SIGNAL_CATCHER_H_
#define LOOPTRACE_TESTS_SAMPLE_APP_SIGNAL_CATCHER_H_

#include <string>

namespace looptrace::sample {

// Blocks SIGQUIT in the calling thread (so in every thread it creates from
// now on) and starts the detached thread "Signal Catcher". Call from main()
// before any other thread exists. For each SIGQUIT it writes
//   ----- pid <pid> at <YYYY-mm-dd HH:MM:SS> -----
//   Cmd line: <cmdline>
//   THREADS (<n>):
//   "<comm>" tid=<k> <State>            (k = 1 for the main thread)
//     | sysTid=<tid> state=<R|S|D|...> nice=<n> utm=<ticks> stm=<ticks> core=<cpu>
//     | wchan=<kernel wait function or 0>
//   ...
//   ----- end <pid> -----
// to stderr and a truth record
//   {"type":"sigquit","ts_ns":N,"sender_pid":N,"sender_uid":N,"tid":N,"threads":N}
// Other signals keep their default actions (SIGTERM and SIGINT kill).
void StartSignalCatcher();

// The dump text the catcher would write now (for the selftest).
std::string ThreadDump();

}  // namespace looptrace::sample

#endif  // LOOPTRACE_TESTS_SAMPLE_APP_SIGNAL_CATCHER_H_
