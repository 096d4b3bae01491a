#include "looper.h"

#include <pthread.h>

#include <atomic>
#include <memory>
#include <optional>
#include <utility>

#include "hooks.h"
#include "sys_util.h"
#include "truth.h"

#if LOOPTRACE_SAMPLE_HAVE_SDT
#include <sys/sdt.h>
#define LOOPTRACE_SAMPLE_USDT_DISPATCH_BEGIN(id, name) STAP_PROBE2(looptrace_sample, dispatch__begin, id, name)
#define LOOPTRACE_SAMPLE_USDT_DISPATCH_END(id) STAP_PROBE1(looptrace_sample, dispatch__end, id)
#else
#define LOOPTRACE_SAMPLE_USDT_DISPATCH_BEGIN(id, name) ((void)0)
#define LOOPTRACE_SAMPLE_USDT_DISPATCH_END(id) ((void)0)
#endif

namespace looptrace::sample {
namespace {

thread_local std::unique_ptr<Looper> t_looper;
std::atomic<Looper*> g_main_looper{nullptr};
std::atomic<uint64_t> g_next_msg_id{1};
thread_local uint64_t t_current_msg_id = 0;
thread_local uint64_t t_method_calls = 0;
thread_local bool t_method_calls_reported = false;

}  // namespace

// ---------------------------------------------------------------- Looper

Looper::Looper() : tid_(CurrentTid()) {}

Looper* Looper::Prepare() {
  if (!t_looper) t_looper.reset(new Looper());
  return t_looper.get();
}

Looper* Looper::PrepareMainLooper() {
  Looper* looper = Prepare();
  g_main_looper.store(looper);
  return looper;
}

std::unique_ptr<Looper> Looper::ReleaseMyLooper() { return std::move(t_looper); }

Looper* Looper::MyLooper() { return t_looper.get(); }

Looper* Looper::MainLooper() { return g_main_looper.load(); }

bool Looper::IsCurrentThread() const { return CurrentTid() == tid_; }

uint64_t Looper::CurrentMessageId() { return t_current_msg_id; }

void Looper::AddMethodCalls(uint64_t calls) {
  if (t_current_msg_id == 0) return;
  t_method_calls += calls;
  t_method_calls_reported = true;
}

void Looper::Loop() {
  for (;;) {
    std::optional<Message> msg = queue_.Next();
    if (!msg) return;
    Dispatch(*msg);
  }
}

void Looper::Dispatch(Message& msg) {
  const uint64_t msg_id = g_next_msg_id.fetch_add(1);
  const char* name = msg.name != nullptr ? msg.name : "";
  t_current_msg_id = msg_id;
  t_method_calls = 0;
  t_method_calls_reported = false;
  // The truth timestamps are read immediately before each hook so that a
  // probe on the hook and the truth see the same instants.
  // The clock is also read right after the hooks: a probe's timestamp must fall in
  // [before, after], a window that is wide only if the thread was preempted there.
  const uint64_t switches_before = ThreadContextSwitches();
  const uint64_t cpu_before_ns = ThreadCpuNs();
  const uint64_t begin_ns = NowNs();
  sample_looper_dispatch_begin(msg_id, name);
  LOOPTRACE_SAMPLE_USDT_DISPATCH_BEGIN(msg_id, name);
  const uint64_t begin_after_ns = NowNs();

  msg.target->DispatchMessage(msg);

  const uint64_t end_ns = NowNs();
  sample_looper_dispatch_end(msg_id);
  LOOPTRACE_SAMPLE_USDT_DISPATCH_END(msg_id);
  const uint64_t end_after_ns = NowNs();
  const uint64_t cpu_after_ns = ThreadCpuNs();
  const uint64_t switches = ThreadContextSwitches() - switches_before;
  t_current_msg_id = 0;
  TruthRecorder::Global().RecordMessage(
      tid_, msg_id, name, begin_ns, end_ns,
      t_method_calls_reported ? std::optional<uint64_t>(t_method_calls) : std::nullopt, begin_after_ns, end_after_ns,
      cpu_before_ns, cpu_after_ns, switches);
}

// ---------------------------------------------------------------- Handler

Handler::Handler(Looper* looper, bool async) : looper_(looper), async_(async) {}

Handler::~Handler() { looper_->queue().RemoveAllMessages(this); }

void Handler::HandleMessage(Message& /*msg*/) {}

void Handler::DispatchMessage(Message& msg) {
  if (msg.callback) {
    msg.callback();
  } else {
    HandleMessage(msg);
  }
}

Message Handler::Obtain(int32_t what, const char* name) const {
  Message msg;
  msg.what = what;
  msg.name = name;
  msg.target = const_cast<Handler*>(this);
  return msg;
}

Message Handler::Obtain(const char* name, std::function<void()> callback) const {
  Message msg = Obtain(0, name);
  msg.callback = std::move(callback);
  return msg;
}

bool Handler::Post(const char* name, std::function<void()> callback) {
  return SendMessageAtTime(Obtain(name, std::move(callback)), NowNs());
}

bool Handler::PostDelayed(const char* name, std::function<void()> callback, uint64_t delay_ns) {
  return SendMessageAtTime(Obtain(name, std::move(callback)), NowNs() + delay_ns);
}

bool Handler::PostAtTime(const char* name, std::function<void()> callback, uint64_t when_ns) {
  return SendMessageAtTime(Obtain(name, std::move(callback)), when_ns);
}

bool Handler::SendMessage(Message msg) { return SendMessageAtTime(std::move(msg), NowNs()); }

bool Handler::SendMessageDelayed(Message msg, uint64_t delay_ns) {
  return SendMessageAtTime(std::move(msg), NowNs() + delay_ns);
}

bool Handler::SendMessageAtTime(Message msg, uint64_t when_ns) {
  msg.target = this;
  if (async_) msg.asynchronous = true;
  return looper_->queue().Enqueue(std::move(msg), when_ns);
}

bool Handler::SendEmptyMessage(int32_t what, const char* name) { return SendMessage(Obtain(what, name)); }

void Handler::RemoveMessages(int32_t what) { looper_->queue().RemoveMessages(this, what); }

bool Handler::HasMessages(int32_t what) const { return looper_->queue().HasMessages(this, what); }

// ---------------------------------------------------------- HandlerThread

HandlerThread::HandlerThread(std::string name) : name_(std::move(name)) {}

HandlerThread::~HandlerThread() {
  if (thread_.joinable()) {
    QuitSafely();
    Join();
  }
}

void HandlerThread::Start() {
  thread_ = std::thread(&HandlerThread::Run, this);
  std::unique_lock lock(mu_);
  ready_cv_.wait(lock, [this] { return looper_ != nullptr; });
}

void HandlerThread::Run() {
  pthread_setname_np(pthread_self(), name_.substr(0, 15).c_str());
  Looper* looper = Looper::Prepare();
  {
    std::lock_guard lock(mu_);
    looper_ = looper;
    tid_ = CurrentTid();
  }
  ready_cv_.notify_all();
  looper->Loop();
  std::unique_ptr<Looper> owned = Looper::ReleaseMyLooper();
  std::lock_guard lock(mu_);
  owned_looper_ = std::move(owned);
}

void HandlerThread::Quit() {
  if (looper_ != nullptr) looper_->Quit();
}

void HandlerThread::QuitSafely() {
  if (looper_ != nullptr) looper_->QuitSafely();
}

void HandlerThread::Join() {
  if (thread_.joinable()) thread_.join();
}

}  // namespace looptrace::sample
