/* SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause) */
/*
 * The only contract between the BPF programs and user space.
 *
 * Plain C that compiles as C (clang -target bpf) and C++ (g++).
 * Fixed-width fields only, explicit padding, sizes checked on both sides.
 * User space decodes these records in exactly one place
 * (loader/decode/event_decoder.cc); nothing else reads raw bytes.
 *
 * Four channels (docs/ARCHITECTURE.md, "The event ABI"):
 *  - the record ring: fixed-size, time-ordered records (role hits, thread switches,
 *    wakeups, signals, exec) in an mmapable array. BPF writes a slot and publishes it by
 *    storing its sequence number last; user space polls it, nothing wakes per record;
 *  - the beat ring: method beats, 32 bytes each, copied by user space only for the spans
 *    that need them;
 *  - the ring buffer: variable-size side records (string texts, method identities) and the
 *    nudge that wakes user space when the record ring fills up;
 *  - the sample ring: stack samples of watched threads (frame-pointer ips, or registers and
 *    stack bytes for DWARF unwinding), also side records.
 */
#ifndef LOOPTRACE_EVENTS_H
#define LOOPTRACE_EVENTS_H

#ifdef __cplusplus
#include <cstddef>
#include <linux/types.h>
#elif !defined(__VMLINUX_H__)
#include <linux/types.h>
#endif

#define LT_ABI_VERSION 3
#define LT_MAX_ARGS 8          /* arguments a probe records */
#define LT_MAX_SOURCES 12      /* argument sources: parameters / USDT arguments 1..12 */
#define LT_MAX_PREDICATES 4    /* conditions per probe (all must hold) */
#define LT_MAX_PATTERN 64      /* bytes of a string condition's pattern */
#define LT_TASK_COMM_LEN 16

/* Record types. */
#define LT_RECORD_PROBE 1    /* record ring: a profile probe point fired (a role event) */
#define LT_RECORD_SWITCH 2   /* record ring: a watched thread left or got a CPU */
#define LT_RECORD_SIGNAL 3   /* record ring: SIGQUIT sent to the target */
#define LT_RECORD_EXEC 4     /* record ring: the target exec()ed */
#define LT_RECORD_STRING 5   /* ring buffer: text of a string argument, once per address */
#define LT_RECORD_WAKEUP 6   /* record ring: someone woke a watched thread */
#define LT_RECORD_IDENTITY 7 /* ring buffer: the arguments behind a string-flavour beat id */
#define LT_RECORD_NUDGE 8    /* ring buffer: the record ring is half full, drain it */
#define LT_RECORD_SAMPLE 9       /* sample ring: a watched thread's user stack (frame-pointer walk) */
#define LT_RECORD_SAMPLE_COPY 10 /* sample ring: registers + stack bytes of a sample (--dwarf-unwind) */
#define LT_RECORD_INTERP_STACK 11 /* sample ring: the interpreter's frames at a sample (before the sample) */
#define LT_RECORD_WAIT_OUTLIVED 12 /* ring buffer: an early wait without a stack outlived its grace (lt_wait_record) */

/*
 * Roles: every role a profile can bind, one line each, in ABI order. The one list: BPF takes
 * the numbers (LT_ROLE_*), user space its role table (tracers/roles.h: the Role enum, the span
 * tracker's pairing rules, profile checks, attach order, which probes watch every thread).
 * Numbers are part of the ABI and of saved recordings: append only, never renumber. Adding a
 * role: docs/ARCHITECTURE.md, "How to add". Columns:
 *   number, C name (LT_ROLE_<C name>), C++ name (Role::k<C++ name>), the profile's name;
 *   edge: Begin / End open or close a span of the span kind (tracers/roles.h, SpanKind)
 *     with the partner role; Instant: a point event; Beat: a method beat (the beat ring,
 *     never a span); instants and beats name the kind they belong with;
 *   key: the argument naming a span (Span::key): input.finish pairs with the
 *     input.receive of its seq, a dispatch.end closes the open message of its id, ...;
 *   threads: Filtered by the session's thread mode (LT_THREADS_*), or AllThreads: watched on
 *     every thread of the target (LT_PROBE_ALL_THREADS: other threads post messages, run the
 *     GC, release monitors, and it matters to the loop thread all the same);
 *   the argument names a profile may bind.
 * Runtime stall causes (CPython, HotSpot): gc.* a GC run, lock.wait.* a thread blocked on a
 * contended monitor until it got it, lock.release another thread releasing a monitor someone
 * waits for.
 */
#define LT_ROLES(X) \
	X(1,  DISPATCH_BEGIN,   DispatchBegin,  "dispatch.begin",   Begin,   Message,   DispatchEnd,    "id",       Filtered,   ("id", "name", "target", "what", "group", "due_ms", "closure")) \
	X(2,  DISPATCH_END,     DispatchEnd,    "dispatch.end",     End,     Message,   DispatchBegin,  "id",       Filtered,   ("id")) \
	X(3,  FRAME_BEGIN,      FrameBegin,     "frame.begin",      Begin,   Frame,     FrameEnd,       "frame_id", Filtered,   ("vsync_ns", "frame_id")) \
	X(4,  FRAME_END,        FrameEnd,       "frame.end",        End,     Frame,     FrameBegin,     "frame_id", Filtered,   ("frame_id")) \
	X(5,  PHASE_BEGIN,      PhaseBegin,     "phase.begin",      Begin,   Phase,     PhaseEnd,       "phase",    Filtered,   ("phase")) \
	X(6,  PHASE_END,        PhaseEnd,       "phase.end",        End,     Phase,     PhaseBegin,     "phase",    Filtered,   ("phase")) \
	X(7,  VSYNC,            Vsync,          "vsync",            Instant, Frame,     Vsync,          "",         Filtered,   ("vsync_ns")) \
	X(8,  METHOD_ENTER,     MethodEnter,    "method.enter",     Beat,    Message,   MethodExit,     "",         Filtered,   ("id", "addr", "class", "name", "sig", "file", "line")) \
	X(9,  METHOD_EXIT,      MethodExit,     "method.exit",      Beat,    Message,   MethodEnter,    "",         Filtered,   ("id", "addr", "class", "name", "sig", "file", "line")) \
	X(10, IDLE_BEGIN,       IdleBegin,      "idle.begin",       Begin,   Idle,      IdleEnd,        "id",       Filtered,   ("id", "name")) \
	X(11, IDLE_END,         IdleEnd,        "idle.end",         End,     Idle,      IdleBegin,      "id",       Filtered,   ("id")) \
	X(12, INPUT_RECEIVE,    InputReceive,   "input.receive",    Begin,   Input,     InputFinish,    "seq",      Filtered,   ("seq")) \
	X(13, INPUT_FINISH,     InputFinish,    "input.finish",     End,     Input,     InputReceive,   "seq",      Filtered,   ("seq")) \
	X(14, APP_CREATE_BEGIN, AppCreateBegin, "app.create.begin", Begin,   AppCreate, AppCreateEnd,   "",         Filtered,   ()) \
	X(15, APP_CREATE_END,   AppCreateEnd,   "app.create.end",   End,     AppCreate, AppCreateBegin, "",         Filtered,   ("name")) \
	X(16, ACTIVITY_LAUNCH,  ActivityLaunch, "activity.launch",  Begin,   Launch,    ActivityFocus,  "",         Filtered,   ("name")) \
	X(17, ACTIVITY_FOCUS,   ActivityFocus,  "activity.focus",   End,     Launch,    ActivityLaunch, "",         Filtered,   ("name")) \
	X(18, FULLY_DRAWN,      FullyDrawn,     "fully.drawn",      Instant, Launch,    FullyDrawn,     "",         Filtered,   ()) \
	X(19, POLL_BEGIN,       PollBegin,      "poll.begin",       Begin,   Poll,      PollEnd,        "",         Filtered,   ("timeout_ms")) \
	X(20, POLL_END,         PollEnd,        "poll.end",         End,     Poll,      PollBegin,      "",         Filtered,   ("repeated")) \
	X(21, BARRIER_POST,     BarrierPost,    "barrier.post",     Begin,   Barrier,   BarrierRemove,  "token",    Filtered,   ("token")) \
	X(22, BARRIER_REMOVE,   BarrierRemove,  "barrier.remove",   End,     Barrier,   BarrierPost,    "token",    Filtered,   ("token")) \
	X(23, MESSAGE_ENQUEUE,  MessageEnqueue, "message.enqueue",  Instant, Message,   MessageEnqueue, "",         AllThreads, ("when_ns", "async")) \
	X(24, GC_BEGIN,         GcBegin,        "gc.begin",         Begin,   Gc,        GcEnd,          "",         AllThreads, ("full", "generation")) \
	X(25, GC_END,           GcEnd,          "gc.end",           End,     Gc,        GcBegin,        "",         AllThreads, ("collected")) \
	X(26, LOCK_WAIT_BEGIN,  LockWaitBegin,  "lock.wait.begin",  Begin,   LockWait,  LockWaitEnd,    "monitor",  Filtered,   ("monitor", "class")) \
	X(27, LOCK_WAIT_END,    LockWaitEnd,    "lock.wait.end",    End,     LockWait,  LockWaitBegin,  "monitor",  Filtered,   ("monitor")) \
	X(28, LOCK_RELEASE,     LockRelease,    "lock.release",     Instant, LockWait,  LockRelease,    "",         AllThreads, ("monitor"))

#define LT_ROLE_CONSTANT(number, c_name, ...) LT_ROLE_##c_name = (number),
enum lt_role {
	LT_ROLES(LT_ROLE_CONSTANT)
	LT_ROLE_MAX /* one past the last role */
};
#undef LT_ROLE_CONSTANT

/*
 * Attach cookie: the probe id and role; everything else about a probe point is in its
 * lt_probe_config (the probe_configs array map, indexed by probe id).
 */
#define LT_COOKIE(probe_id, role) ((__u64)(probe_id) | ((__u64)(role) << 16))
#define LT_COOKIE_PROBE_ID(c) ((__u32)((c) & 0xFFFF))
#define LT_COOKIE_ROLE(c) ((__u32)(((c) >> 16) & 0xFF))

/* Argument sources: 0..11 = parameter / USDT argument 1..12; the return value. */
#define LT_SOURCE_RETVAL 0xFE
#define LT_SOURCE_NONE 0xFF

/* Argument types. */
#define LT_ARG_UINT 0
#define LT_ARG_INT 1   /* sign-extended by user space */
#define LT_ARG_STR 2   /* a pointer to a NUL-terminated string, or with a length (length_source) */
/*
 * A CPython callable vector (PyObject *const *, e.g. Context.run's args): BPF follows its
 * first element through bound methods, functools.partial and asyncio's task wrappers and
 * writes what names it into this slot and the next LT_PY_CALLABLE_SLOTS - 1 (events below).
 */
#define LT_ARG_PY_CALLABLE 3
/*
 * The 8 bytes at the argument plus offset_words * 8 (a field of the structure it points to:
 * libuv's uv_timer_t.timeout, the timer's due time); 0 when unreadable.
 */
#define LT_ARG_AT 4

struct lt_arg_config {
	__u8 source;        /* LT_SOURCE_* or 0..LT_MAX_SOURCES-1 */
	__u8 type;          /* LT_ARG_* */
	__u8 length_source; /* strings whose length is another argument (HotSpot), else LT_SOURCE_NONE */
	__u8 offset_words;  /* LT_ARG_AT: the field's offset, in 8-byte words */
};

/* Condition operators: integers compare with value, strings with pattern. */
#define LT_PRED_EQ 1
#define LT_PRED_NE 2
#define LT_PRED_LT 3       /* signed */
#define LT_PRED_LE 4
#define LT_PRED_GT 5
#define LT_PRED_GE 6
#define LT_PRED_STR_EQ 16
#define LT_PRED_STR_NE 17
#define LT_PRED_STR_PREFIX 18
#define LT_PRED_STR_SUFFIX 19
#define LT_PRED_STR_GLOB 20  /* '*' any run, '?' one byte */

struct lt_predicate {
	struct lt_arg_config arg; /* the argument tested (need not be recorded) */
	__u8 op;                  /* LT_PRED_* */
	__u8 pattern_len;
	__u16 pad;
	__s64 value;
	char pattern[LT_MAX_PATTERN];
};

#define LT_PROBE_BEAT 1         /* method.enter / method.exit: to the beat ring */
#define LT_PROBE_ALL_THREADS 2  /* watched on every thread of the target (LT_ROLES: AllThreads) */
#define LT_PROBE_IDENTITY 4     /* beats identify their method by string arguments */
#define LT_PROBE_CLAIMS_LOOP 8  /* LT_THREADS_LOOP: a hit (conditions held) makes its thread the loop thread */
#define LT_PROBE_COMM 16        /* the hitting thread's name in the last two argument slots
                                 * (lock.release: the monitor's holder, often gone by decode time) */
#define LT_COMM_ARG_SLOT (LT_MAX_ARGS - 2)
#define LT_PROBE_SHADOW_PUSH 32 /* entry of a function with a uretprobe: remember its return address */
#define LT_PROBE_SHADOW_POP 64  /* a uretprobe: its function returned */
#define LT_PROBE_SHADOW_ONLY 128 /* added only for the shadow stack: records nothing */

struct lt_probe_config {
	__u16 role;
	__u8 nargs;       /* arguments recorded */
	__u8 npredicates;
	__u8 flags;       /* LT_PROBE_* */
	__u8 enter;       /* beats: 1 enter, 0 exit */
	__u16 pad;
	struct lt_arg_config args[LT_MAX_ARGS];
	struct lt_predicate predicates[LT_MAX_PREDICATES];
};

/*
 * CPython callables named in BPF (LT_ARG_PY_CALLABLE): the slots it fills, from its own on.
 *   +0 code object (0: none), +1 instruction offset (low 32 bits; 0xffffffff: none) and kind
 *   (bits 32..39, LT_PY_CALLABLE_*), +2 the code object's fingerprint, +3 and +4 addresses
 *   of texts (sent as LT_RECORD_STRING): a task's name or a type's name, and a C method's
 *   name; +3 holds the task's number instead when its name is an int (CPython 3.13).
 */
#define LT_PY_CALLABLE_SLOTS 5
#define LT_PY_CALLABLE_FUNCTION 1 /* a Python function: its code */
#define LT_PY_CALLABLE_TASK 2     /* an asyncio task's step: its name and coroutine (code, offset) */
#define LT_PY_CALLABLE_CFUNC 3    /* a C function or method: type name + method name */
#define LT_PY_CALLABLE_OTHER 4    /* another callable object: its type's name */
#define LT_PY_CALLABLE_TASK_NUMBER 0x100 /* kind flag: +3 is the task's number */

/* Thread filter modes (rodata). */
#define LT_THREADS_MAIN 0 /* only tid == tgid */
#define LT_THREADS_ALL 1
/*
 * Only the loop thread: the first thread (whose name starts with the loader's loop_name,
 * if set) to hit a probe flagged LT_PROBE_CLAIMS_LOOP (dispatch.begin) with its conditions
 * holding. Its tid is in .bss loop_tid (0 until claimed; the loader may set it first).
 */
#define LT_THREADS_LOOP 2

/* Per-CPU counters of things the BPF side lost or skipped. */
#define LT_STAT_RINGBUF_FULL 0        /* a side record dropped: ring buffer full */
#define LT_STAT_OTHER_PROCESS 1       /* hit from a process that is not the target */
#define LT_STAT_OTHER_THREAD 2        /* hit from a thread the filter excludes */
#define LT_STAT_ARG_READ_FAILED 3     /* an argument could not be read */
#define LT_STAT_RECORDS_FULL 4        /* a record dropped: the record ring was full */
#define LT_STAT_STRING_READ_FAILED 5  /* BPF could not copy a string (page not resident) */
#define LT_STAT_STACK_FAILED 6        /* bpf_get_stackid failed (map full, or no stack) */
#define LT_STAT_PREDICATE_REJECTED 7  /* hits whose conditions did not hold (not a loss) */
#define LT_STAT_VERDICTS_EVICTED 8    /* cached string verdicts replaced by another address */
#define LT_STAT_VERDICTS_STALE 9      /* cached verdicts whose string changed (address reused) */
#define LT_STAT_SAMPLES_DROPPED 10    /* a stack sample dropped: the sample ring was full */
#define LT_STAT_SHADOW_OVERFLOW 11    /* uretprobe return addresses not remembered (too deep, or slot taken) */
#define LT_STAT_CPU_SWITCH_UNTRACED 12 /* switches the kernel ran without a sched_switch event */
#define LT_STAT_SWITCH_STACKED 13     /* switch-outs of the target's threads whose stacks were taken */
#define LT_STAT_SWITCH_IDLE 14        /* loop-thread switch-outs while idle: no stack taken (LT_STACK_IDLE) */
#define LT_STAT_SAMPLE_IDLE 15        /* cpu-clock samples of the loop thread while idle: not taken */
#define LT_STAT_SWITCH_YOUNG 16       /* loop-thread preemptions early in a message: no stack taken (LT_STACK_YOUNG) */
#define LT_STAT_INTERP_STACKS_DROPPED 17 /* an interpreter stack dropped: the sample ring was full */
/* .eh_frame walks of sampled user stacks that stopped before the outermost frame: one counter
 * per enum lt_walk_end from LT_WALK_AT_INTERPRETER on, LT_STAT_WALK_BASE + walk_end */
#define LT_STAT_WALK_BASE 16
#define LT_STAT_WALK_AT_INTERPRETER 18 /* on purpose, at the interpreter's code (not a loss) */
#define LT_STAT_WALK_UNSUPPORTED 19   /* at a row the walker cannot follow */
#define LT_STAT_WALK_NO_CFI 20        /* at code of a module its rows do not cover */
#define LT_STAT_WALK_DEPTH 21         /* at LT_MAX_SAMPLE_FRAMES frames */
#define LT_STAT_WALK_READ_FAULT 22    /* a return address could not be read */
#define LT_STAT_WALK_NO_FP 23         /* in code outside every module, with no frame pointer */
#define LT_STAT_FP_FRAMES 24          /* frames the .eh_frame walk took by frame pointer (code without rows) */
#define LT_STAT_WALK_COPIED 25        /* walks that met a library without rows yet: sent as a stack copy */
#define LT_STAT_SWITCH_WAIT 26       /* other threads' switch-outs into a wait: no stack taken (LT_STACK_AT_SNAPSHOT) */
#define LT_STAT_SWITCH_YOUNG_WAIT 27 /* loop-thread waits early in a message: its syscall, no kernel stack (LT_STACK_IN_SYSCALL) */
#define LT_STAT_EARLY_WAIT_STACKED 28 /* ... stacked at the switch-out instead: the loader was busy (early_wait_defer_now) */
#define LT_STAT_MAX 29

/*
 * What looptrace's own programs cost (the report's cost block), per program and per CPU
 * (map prog_costs): every run counted, about one run in LT_COST_TIME_EVERY timed (every run
 * of a CPU's first LT_COST_TIME_ALL, so short sessions are exact). The kernel's BPF run-time
 * statistics would time every run of every BPF program on the machine: two clock reads a
 * run, ~450 ns a context switch of an unrelated workload here.
 */
#define LT_PROG_UPROBE 0
#define LT_PROG_UPROBE_MULTI 1
#define LT_PROG_USDT 2
#define LT_PROG_BEAT_ENTER 3
#define LT_PROG_BEAT_EXIT 4
#define LT_PROG_PROBES_END 5 /* programs below run once per probe hit on the target */
#define LT_PROG_SCHED_SWITCH 5
#define LT_PROG_SCHED_WAKING 6
#define LT_PROG_SIGNAL 7
#define LT_PROG_CPU_SAMPLE 8
#define LT_PROG_EXEC 9
#define LT_PROG_MAX 10
#define LT_COST_TIME_EVERY 64
#define LT_COST_TIME_ALL 1024

struct lt_prog_cost {
	__u64 runs;
	__u64 timed_runs;
	__u64 timed_ns;
	__u64 next_timed; /* the run count at which the next run is timed */
	__u64 began_ns;   /* the timed run in progress began (0: this run is not timed) */
};

/* Ring buffer records start with this header. */
struct lt_record_header {
	__u32 type; /* LT_RECORD_* */
	__u32 size; /* bytes of the whole record */
};

/*
 * The record ring: an mmapable BPF array of these, a power of two of them, indexed by
 * (index & mask). The writer takes an index from record_head (.bss) only when
 * record_head - record_tail < capacity (record_tail is user space's read position, in the
 * same .bss); a full ring drops the record (LT_STAT_RECORDS_FULL). seq = index + 1 is
 * stored last: a reader that finds another seq in the slot has not got the record yet
 * (smaller) or lost it to a concurrent writer (larger), which it counts.
 */
#define LT_SWITCH_OUT 1 /* the thread left the CPU (state = its __state then) */
#define LT_SWITCH_IN 2  /* the thread got a CPU back */

struct lt_probe_body {
	__u16 role;
	__u16 pad;
	/*
	 * The user stack pointer's low 32 bits at the hit (0 = unknown): a message that begins
	 * no deeper on its thread's stack than an open one is not nested in it, so the open
	 * one's end was lost (span_tracker.cc). Differences of low halves are exact on one stack.
	 */
	__u32 sp;
	__u64 beat_index;    /* method-beat ring head at this hit (next slot to write) */
	__u64 thread_cpu_ns; /* the thread's sum_exec_runtime (as of its last accounting) */
	__u64 args[LT_MAX_ARGS]; /* raw values; strings are pointers (text: LT_RECORD_STRING) */
};

struct lt_switch_body {
	__u32 kind;      /* LT_SWITCH_OUT / LT_SWITCH_IN */
	__u32 state;     /* prev->__state at switch-out (0 = preempted while running) */
	__s32 kstack_id; /* kernel stack at switch-out, -1 if none, LT_STACK_IDLE if not taken */
	__s32 ustack_id; /* user stack (frame pointers) at switch-out, -1 if none, LT_STACK_IDLE */
};

/*
 * A switch-out of the loop thread while no message was open (idle, or in its poll wait):
 * no stack was taken (lt_thread_state) and no switch record written, unless the loader asked
 * for stacks at every switch-out (switch_stacks_idle). Nothing a report shows is inside such
 * a stretch.
 */
#define LT_STACK_IDLE -2
/*
 * A preemption (the thread still runnable) of the loop thread in a message open for less
 * than preempt_stacks_after_ns: no stack taken either. A message that turns slow lost the
 * CPU there for a scheduler's time slice, not for a reason of its own: only the reason
 * ("preempted", from the state) is kept.
 */
#define LT_STACK_YOUNG -3
/*
 * A switch-out of another thread (not a watched one) into a wait (sleep, lock, I/O): its
 * stacks show only in a stall snapshot, and a thread still waiting there is read then (its
 * kernel stack from /proc, its user stack unwound from the registers kept in lt_thread_state
 * over its stack memory, unchanged while it waits). A busy worker thread's thousands of
 * waits a second take no stack (lt_thread_state).
 */
#define LT_STACK_AT_SNAPSHOT -4
/*
 * A wait (sleep, lock, I/O) of the loop thread in a message open for less than
 * preempt_stacks_after_ns, with no uretprobe pending on its stack: no kernel stack taken (its
 * walk was most of a switch-out's cost), only the system call it waits in (regs->orig_ax),
 * which tells the same reason (a futex: a lock; clock_nanosleep: a sleep; epoll_wait: a
 * poll). LT_STACK_OUTSIDE_SYSCALL: a wait outside one (a page fault). Its user stack is
 * sampled as at every switch-out; a snapshot that finds it still waiting reads both stacks
 * then, as for LT_STACK_AT_SNAPSHOT, from the registers kept in lt_thread_state (its
 * ustack_id is LT_STACK_AT_SNAPSHOT). A pending uretprobe left the trampoline's address in a
 * return slot: the snapshot puts the real one back from the shadow stack, which the loader
 * keeps for this (waits_by_syscall is set only then, or for a plan without uretprobes).
 */
#define LT_STACK_OUTSIDE_SYSCALL -5
/*
 * The user stack of an early wait (LT_STACK_IN_SYSCALL), in the switch record's ustack_id
 * only: not taken at the switch-out (a busy handler's many short waits each cost a walk),
 * and taken later, from outside, if the wait outlives preempt_stacks_after_ns
 * (LT_RECORD_WAIT_OUTLIVED); a shorter one keeps only its system call.
 */
#define LT_STACK_DEFERRED -6
#define LT_STACK_SYSCALL_BASE -16
#define LT_STACK_IN_SYSCALL(nr) (LT_STACK_SYSCALL_BASE - (__s32)(nr))
#define LT_MAX_SYSCALL_NR 4095 /* larger: LT_STACK_OUTSIDE_SYSCALL */

struct lt_wakeup_body {
	__u32 waker_tid;
	__u32 waker_tgid;
	char waker_comm[LT_TASK_COMM_LEN];
};

struct lt_signal_body {
	__s32 sig;
	__s32 result;    /* TRACE_SIGNAL_* (0 delivered) */
	__u32 sender_tgid;
	__u32 sender_tid;
	char sender_comm[LT_TASK_COMM_LEN];
};

struct lt_exec_body {
	__u32 pid;
	__u32 pad;
	char comm[LT_TASK_COMM_LEN];
};

struct lt_record {
	__u64 seq;      /* ring index + 1, stored last */
	__u64 ts_ns;    /* bpf_ktime_get_ns(): CLOCK_MONOTONIC */
	__u32 tid;      /* the thread it is about (the wakee, the signal's target, ...) */
	__u16 type;     /* LT_RECORD_PROBE / SWITCH / WAKEUP / SIGNAL / EXEC */
	__u16 probe_id; /* LT_RECORD_PROBE */
	union {
		struct lt_probe_body probe;
		struct lt_switch_body sw;
		struct lt_wakeup_body wakeup;
		struct lt_signal_body signal;
		struct lt_exec_body exec;
	};
};

/*
 * Method beats (method.enter / method.exit) go to their own ring of 32-byte records in an
 * mmapable array (default 1M, like Matrix's AppMethodBeat buffer), never waking user space.
 * The head is the .bss counter beat_head; span records carry the head at their hit, so user
 * space copies exactly one span's beats, and only for spans that need them. A beat older
 * than head - capacity has been overwritten (detected, counted).
 */
#define LT_BEAT_ENTER 1
#define LT_BEAT_EXIT 0

/* probe_id of beats written by the cookie-less fast path (id = first argument). */
#define LT_FAST_BEAT_PROBE 0xFFFF

struct lt_beat {
	__u64 ts_ns;
	__u64 id;  /* method id, function address, or identity (LT_RECORD_IDENTITY) */
	__u64 aux; /* reserved, 0 */
	__u32 tid;
	__u16 probe_id;
	__u8 kind; /* LT_BEAT_ENTER / LT_BEAT_EXIT */
	__u8 pad;
};

/*
 * String arguments are treated as stable per address (message, class and method names are
 * static): BPF copies the text the first time it sees an address, user space keeps an
 * address -> text table. Longer strings are truncated.
 */
#define LT_MAX_STRING 240

struct lt_string_record {
	struct lt_record_header header;
	__u64 address;
	__u32 tgid;
	__u32 length; /* bytes in text (no NUL needed) */
	char text[LT_MAX_STRING];
};

/* The argument values a string-flavour beat id stands for (sent once per id). */
struct lt_identity_record {
	struct lt_record_header header;
	__u64 id;
	__u16 probe_id;
	__u16 pad[3];
	__u64 values[LT_MAX_ARGS];
};

struct lt_nudge_record {
	struct lt_record_header header;
	__u64 record_head;
};

/*
 * An early wait of the loop thread whose stack was deferred (LT_STACK_DEFERRED) still waits
 * preempt_stacks_after_ns after its switch-out (a BPF timer's callback, which cannot read the
 * thread's memory): the loader unwinds it from the registers kept in lt_thread_state while it
 * still waits, and keeps that stack as the switch-out's sample if `switches` did not move.
 */
struct lt_wait_record {
	struct lt_record_header header;
	__u32 tid;
	__u32 pad;
	__u64 ts_ns;    /* the wait's switch-out */
	__u64 switches; /* lt_thread_state.switches after it */
};

/* Value of the thread_states hash (key: tid). */
struct lt_thread_state {
	__u64 since_ns;         /* when the thread entered this state */
	__u32 state;            /* __state at its last switch-out; LT_STATE_RUNNING when on CPU */
	__s32 kstack_id;        /* kernel stack at the last switch-out */
	__s32 ustack_id;        /* user stack at the last switch-out */
	__s32 sample_kstack_id; /* latest on-CPU sample (cpu-clock), -1 if none */
	__s32 sample_ustack_id;
	__u32 pad;
	__u64 sample_ns;
	__u64 switches;         /* context switches seen */
	/* user registers at a switch-out into a wait whose stacks were left to a snapshot
	 * (ustack_id LT_STACK_AT_SNAPSHOT): where an unwind of its stack starts while it still
	 * waits */
	__u64 wait_pc;
	__u64 wait_sp;
	__u64 wait_bp;
	__u64 cpu_ns_at_out; /* its sum_exec_runtime at the last switch-out (0: none seen yet) */
};
#define LT_STATE_RUNNING 0xFFFFFFFF

/*
 * Uretprobes replace the return address of the probed function with the kernel's
 * trampoline (the [uprobes] page), which breaks every stack walk through that frame. The
 * entry probe of such a function pushes the real return address and where it is stored
 * (the slot: the stack pointer at the entry) on a per-thread shadow stack; the uretprobe
 * pops it. Samples carry the entries still in effect, innermost first, and user space puts
 * the real addresses back (see docs/ARCHITECTURE.md, "Stack samples").
 */
#define LT_MAX_SHADOW 8
/* Shadow stacks are direct-mapped by thread id (an array lookup, not a hash one, on every
 * hit of a uretprobed function); a thread whose slot another one holds takes it over. */
#define LT_SHADOW_SLOTS 4096

struct lt_shadow_frame {
	__u64 slot; /* stack address of the replaced return address */
	__u64 ret;  /* the real return address */
};

struct lt_shadow_stack {
	__u32 depth; /* entries in use, outermost first */
	__u32 tid;   /* the thread the slot holds (tid & (LT_SHADOW_SLOTS - 1) is its index) */
	struct lt_shadow_frame frames[LT_MAX_SHADOW];
};

/* Sample kinds: while running (cpu-clock), or at a switch-out (weighted by the time off CPU). */
#define LT_SAMPLE_CPU 1
#define LT_SAMPLE_SWITCH 2
#define LT_MAX_SAMPLE_FRAMES 127
/*
 * Native frames the default view of an interpreted runtime shows above the interpreter's
 * frames (loader/decode/interp_stacks.h): the BPF walk of such a sample stops after them.
 */
#define LT_VIEW_NATIVE_LEAF 8

/* How the walk of a sample's user stack ended (lt_sample_record.walk_end). */
enum lt_walk_end {
	LT_WALK_KERNEL = 0,	    /* the kernel's frame-pointer walk: not known */
	LT_WALK_ENDED = 1,	    /* at a frame with no caller (outermost row, null return address) */
	LT_WALK_AT_INTERPRETER = 2, /* on purpose: the interpreter's frames are shown instead */
	LT_WALK_UNSUPPORTED = 3,    /* a row the walker cannot follow, or an impossible frame */
	LT_WALK_NO_CFI = 4,	    /* code of a module no row covers, with no frame pointer */
	LT_WALK_DEPTH = 5,	    /* LT_MAX_SAMPLE_FRAMES frames */
	LT_WALK_READ_FAULT = 6,	    /* a return address could not be read */
	LT_WALK_NO_FP = 7,	    /* code outside every module, with no frame pointer */
};

/*
 * A stack sample of a watched thread, frame-pointer walk by the kernel (bpf_get_stack).
 * Variable size: header.size = offsetof(ips) + 8 * nr_ips.
 */
struct lt_sample_record {
	struct lt_record_header header;
	__u64 ts_ns;
	__u32 tid;
	__u16 kind;      /* LT_SAMPLE_* */
	__u16 nr_shadow; /* shadow frames in effect, innermost first */
	__u32 state;     /* LT_SAMPLE_SWITCH: prev->__state (0 = preempted) */
	__u16 nr_ips;
	__u16 walk_end;  /* enum lt_walk_end */
	struct lt_shadow_frame shadow[LT_MAX_SHADOW];
	__u64 ips[LT_MAX_SAMPLE_FRAMES]; /* innermost first */
};

/*
 * Unwind rows compiled from a module's .eh_frame (symbols/unwind_table.h), read by the BPF
 * walker of sampled user stacks: the loader appends each module's rows (sorted by start) to
 * the unwind_rows array, sized before load for the target's modules plus room for later
 * ones, and publishes the sorted list of the target's executable mappings that have rows
 * (unwind_modules, eh_modules entries). Code outside them (JIT, anonymous) and code of a
 * module its rows do not cover (V8's builtins) is walked by frame pointers.
 */
#define LT_MAX_UNWIND_MODULES 256
enum lt_cfa_rule {
	LT_CFA_NONE = 0,	/* no CFI: the walk stops */
	LT_CFA_RSP = 1,		/* CFA = rsp + cfa_offset */
	LT_CFA_RBP = 2,		/* CFA = rbp + cfa_offset */
	LT_CFA_PLT = 3,		/* CFA = rsp + cfa_offset + 8 * ((rip & 15) >= plt_threshold) */
	LT_CFA_UNSUPPORTED = 4, /* the walk stops */
};
#define LT_ROW_RBP_SAVED 0x1 /* the caller's rbp is at CFA + rbp_offset, else unchanged */
#define LT_ROW_OUTERMOST 0x2 /* the return address is undefined: the thread's first frame */
/* The module is the interpreter's own code (lt_unwind_module.flags): the default view shows
 * the interpreter's frames from there on, so a walk of a sample with them stops there. */
#define LT_MODULE_INTERPRETER 0x1

struct lt_unwind_row {
	__u32 start; /* module virtual address where the row begins */
	__s32 cfa_offset;
	__s16 rbp_offset;
	__u8 cfa_rule; /* enum lt_cfa_rule */
	__u8 flags;    /* LT_ROW_*; bits 4-7: the PLT threshold */
};

struct lt_unwind_module {
	__u64 start; /* the executable mapping [start, end) */
	__u64 end;
	__u64 bias; /* runtime address - module virtual address */
	__u32 first_row; /* index in unwind_rows */
	__u32 rows;
	__u32 flags; /* LT_MODULE_* */
	__u32 pad;
};

/*
 * With --dwarf-unwind: a thread's user registers and the top of its user stack, for
 * unwinding without frame pointers in user space (symbols/unwinder.h). Kept per thread in
 * the stack_copies map at every switch-out of a target thread (and cpu-clock sample of
 * the main thread), and sent as a variable-size side record for samples of watched
 * threads (header.size = offsetof(bytes) + size). Registers in DWARF order: rax rdx rcx
 * rbx rsi rdi rbp rsp r8..r15 rip.
 */
#define LT_MAX_STACK_COPY 16384
#define LT_UNWIND_REGS 17

struct lt_stack_copy {
	struct lt_record_header header; /* LT_RECORD_SAMPLE_COPY when sent */
	__u64 ts_ns;
	__u32 tid;
	__u16 kind;       /* LT_SAMPLE_* */
	__u16 nr_shadow;
	__u32 state;
	__u32 valid_mask; /* bit n: DWARF register n was captured */
	__u64 regs[LT_UNWIND_REGS];
	struct lt_shadow_frame shadow[LT_MAX_SHADOW];
	__u32 size;       /* bytes copied from regs[7] (rsp) upwards; 0: the copy faulted */
	__u32 pad;
	__u8 bytes[LT_MAX_STACK_COPY];
};

#ifdef __cplusplus
#define LT_STATIC_ASSERT static_assert
#else
#define LT_STATIC_ASSERT _Static_assert
#endif

LT_STATIC_ASSERT(sizeof(struct lt_record_header) == 8, "header size");
LT_STATIC_ASSERT(sizeof(struct lt_arg_config) == 4, "arg config size");
LT_STATIC_ASSERT(sizeof(struct lt_predicate) == 80, "predicate size");
LT_STATIC_ASSERT(sizeof(struct lt_probe_config) == 8 + 4 * LT_MAX_ARGS + 80 * LT_MAX_PREDICATES, "config size");
LT_STATIC_ASSERT(sizeof(struct lt_probe_body) == 24 + 8 * LT_MAX_ARGS, "probe body size");
LT_STATIC_ASSERT(sizeof(struct lt_record) == 24 + 24 + 8 * LT_MAX_ARGS, "record size");
LT_STATIC_ASSERT(__builtin_offsetof(struct lt_record, probe) == 24, "record body offset");
LT_STATIC_ASSERT(sizeof(struct lt_beat) == 32, "beat size");
LT_STATIC_ASSERT(__builtin_offsetof(struct lt_beat, tid) == 24, "beat tid offset");
LT_STATIC_ASSERT(sizeof(struct lt_string_record) == 24 + LT_MAX_STRING, "string record size");
LT_STATIC_ASSERT(sizeof(struct lt_identity_record) == 24 + 8 * LT_MAX_ARGS, "identity record size");
LT_STATIC_ASSERT(sizeof(struct lt_shadow_frame) == 16, "shadow frame size");
LT_STATIC_ASSERT(sizeof(struct lt_shadow_stack) == 8 + 16 * LT_MAX_SHADOW, "shadow stack size");
LT_STATIC_ASSERT(__builtin_offsetof(struct lt_sample_record, ips) == 32 + 16 * LT_MAX_SHADOW, "sample ips offset");
LT_STATIC_ASSERT(__builtin_offsetof(struct lt_stack_copy, bytes) == 32 + 17 * 8 + 16 * LT_MAX_SHADOW + 8,
		 "stack copy bytes offset");
LT_STATIC_ASSERT(sizeof(struct lt_stack_copy) == __builtin_offsetof(struct lt_stack_copy, bytes) + LT_MAX_STACK_COPY,
		 "stack copy size");
LT_STATIC_ASSERT(sizeof(struct lt_thread_state) == 80, "thread state size");
LT_STATIC_ASSERT(sizeof(struct lt_unwind_module) == 40, "unwind module size");
LT_STATIC_ASSERT(sizeof(struct lt_wait_record) == 32, "wait record size");

/*
 * Interpreter stacks: at every stack sample of a thread of a runtime looptrace walks in BPF
 * (CPython: loader/runtimes/python/), the interpreter's own frames, innermost first, as
 * (code object, instruction offset, fingerprint) triples named in user space. Sent to the
 * sample ring right before the sample it belongs to (same tid and ts_ns).
 */
#define LT_MAX_INTERP_FRAMES 64
#define LT_INTERP_ENTRY 0x80000000u /* offset bit: the outermost frame of one C call of the interpreter loop */
#define LT_INTERP_NO_OFFSET 0x7fffffffu

#define LT_INTERP_TRUNCATED 1    /* more frames than LT_MAX_INTERP_FRAMES */
#define LT_INTERP_NO_THREAD 2    /* the thread has no interpreter thread state (not a Python thread) */
#define LT_INTERP_BAD_CODE 4     /* a frame's code object is not one (layout mismatch, or freed) */
#define LT_INTERP_READ_FAILED 8  /* a frame could not be read (paged out, or freed) */
#define LT_INTERP_AT_ENTRY 16    /* the walk ended where native code called the runtime (HotSpot's call stub) */

struct lt_interp_frame {
	__u64 code;
	__u32 offset;      /* instruction offset (bytes to 3.10, code units from 3.11) | LT_INTERP_ENTRY */
	__u32 fingerprint; /* 4 bytes of the code object read with it: a reused address differs */
};

struct lt_interp_stack {
	struct lt_record_header header; /* LT_RECORD_INTERP_STACK; size = offsetof(frames) + n frames */
	__u64 ts_ns;
	__u32 tid;
	__u16 nr_frames;
	__u16 flags; /* LT_INTERP_* */
	struct lt_interp_frame frames[LT_MAX_INTERP_FRAMES];
};

/* Frame chains of the CPython versions (lt_py_layout.frame_model). */
#define LT_PY_FRAME_OBJECTS 1 /* 3.8-3.10: tstate->frame, a PyFrameObject chain (f_back) */
#define LT_PY_CFRAME 2        /* 3.11-3.12: tstate->cframe->current_frame, _PyInterpreterFrame chain */
#define LT_PY_CURRENT_FRAME 3 /* 3.13: tstate->current_frame */
#define LT_PY_NONE 0xffff     /* a field the version does not have */
#define LT_PY_FRAME_BYTES 128 /* a frame's fields all lie in its first bytes */

/*
 * A CPython's object layout, set by the loader (rodata py_layout) from its per-version
 * tables before load. Offsets in bytes. Where the interpreter lies in the target is known
 * only once it is mapped and initialized (a command `run` starts maps libpython after
 * exec): the loader checks the layout against the running interpreter and then publishes
 * the addresses (struct lt_py_addresses, .bss py_addresses); BPF walks nothing before.
 */
struct lt_py_layout {
	__u16 frame_model;  /* LT_PY_*; 0: no CPython walking */
	__u16 interp_tstate_head;
	__u16 tstate_next;
	__u16 tstate_thread_id; /* pthread_t: the thread's fs base on x86-64 glibc */
	__u16 tstate_frame;     /* frame, cframe or current_frame */
	__u16 cframe_current_frame;
	__u16 frame_code;
	__u16 frame_back;
	__u16 frame_instr;      /* f_lasti (int) to 3.10, else prev_instr / instr_ptr */
	__u16 frame_owner;      /* 3.12+: FRAME_OWNED_BY_CSTACK frames are entry shims */
	__u16 frame_is_entry;   /* 3.11 */
	__u16 code_fingerprint; /* co_firstlineno */
	__u16 code_adaptive;    /* 3.11+: co_code_adaptive */
	__u16 lasti_in_units;   /* 3.10: f_lasti counts code units */
	/* callables (LT_ARG_PY_CALLABLE) */
	__u16 type_name;
	__u16 method_func;
	__u16 partial_fn;
	__u16 wrapper_task;
	__u16 cfunc_ml;
	__u16 cfunc_self;
	__u16 func_code;
	__u16 func_qualname; /* every version: the function's own __qualname__ (it may differ from its code's) */
	__u16 task_coro;
	__u16 task_name;
	__u16 gen_code;      /* to 3.11 */
	__u16 gen_frame;     /* to 3.10 */
	__u16 gen_iframe;    /* from 3.11 */
	__u16 str_state;
	__u16 str_ascii_data;
	__u16 long_digit;
	__u16 pad[2];
};

struct lt_py_addresses {
	__u64 interp_head; /* address of _PyRuntime.interpreters.head; 0: not located (yet) */
	__u64 code_type;   /* address of PyCode_Type: every frame's code object is checked */
};

/*
 * HotSpot (loader/runtimes/jvm/): what BPF needs to walk a Java thread's frames, read by the
 * loader from the JVM's own tables (gHotSpotVMStructs) once it runs, so set at run time
 * (.bss hs_config; BPF walks nothing while `ready` is 0). Offsets in bytes; the interpreter
 * frame slots in words from fp. Frames go out as lt_interp_frame: interpreted ones as code =
 * the Method*, offset = the bytecode index, fingerprint = the low half of the method's
 * ConstMethod* (a method redefined or freed differs); compiled ones as code = the nmethod,
 * offset = LT_HS_COMPILED | (pc - nmethod), fingerprint = its compile id (unique for the VM's
 * life: a freed nmethod's reused memory differs), from which the loader reads the inlined
 * methods and lines at that pc from the nmethod's debug info. A JVM that does not export the
 * nmethod's compile id (nmethod_compile_id 0) sends compiled frames as interpreted ones with
 * offset LT_INTERP_NO_OFFSET: the nmethod's own method, no line. A sample in one of
 * StubRoutines' stubs (an intrinsic's code) has a frame of its own: code = the pc, offset =
 * LT_HS_COMPILED | LT_HS_STUB, fingerprint 0.
 */
#define LT_HS_MAX_HEAPS 3
#define LT_HS_COMPILED 0x40000000u    /* offset bit (not in LT_INTERP_NO_OFFSET): an nmethod, offset the pc's from it */
#define LT_HS_STUB 0x20000000u        /* with LT_HS_COMPILED: a StubRoutines stub, code its pc (named by the VM's list) */
#define LT_HS_PC_OFFSET 0x1fffffffu

struct lt_hotspot_heap {
	__u64 low;    /* the code heap's reserved range */
	__u64 high;
	__u64 segmap; /* its segment map: bytes, hops back to a block's first segment */
	__u64 log2_segment;
};

struct lt_hotspot_config {
	__u64 java_thread_list;     /* address of ThreadsSMRSupport::_java_thread_list */
	__u64 interpreter_begin;    /* the template interpreter's code */
	__u64 interpreter_end;
	__u64 call_stub_return;     /* StubRoutines::_call_stub_return_address: native below */
	struct lt_hotspot_heap heaps[LT_HS_MAX_HEAPS];
	__u16 threads_list_length;
	__u16 threads_list_threads;
	__u16 thread_osthread;
	__u16 osthread_thread_id;
	__u16 thread_state;
	__u16 thread_anchor;
	__u16 anchor_sp;
	__u16 anchor_pc;
	__u16 anchor_fp;
	__u16 blob_name;
	__u16 blob_frame_size;
	__u16 nmethod_method;
	__u16 method_const;
	__u16 const_method_size;
	__u16 heap_block_size;
	__u16 in_java;              /* _thread_in_Java */
	__s16 frame_sender_sp;      /* interpreter frame slots, words from fp */
	__s16 frame_method;
	__s16 frame_bcp;
	__u16 nr_heaps;
	__u16 nmethod_compile_id;   /* 0: compiled frames name their method only */
	__u64 ready;                /* stored last */
};

LT_STATIC_ASSERT(sizeof(struct lt_py_layout) == 64, "python layout size");
LT_STATIC_ASSERT(sizeof(struct lt_hotspot_config) == 184, "hotspot config size");
LT_STATIC_ASSERT(sizeof(struct lt_py_addresses) == 16, "python addresses size");
LT_STATIC_ASSERT(sizeof(struct lt_interp_frame) == 16, "interpreter frame size");

/*
 * V8 (Node.js; loader/runtimes/node/): what the frame walker needs of V8's post-mortem
 * metadata (the v8dbg_* symbols of the node executable), set by the loader (rodata
 * v8_layout) before load. The walker follows the frame-pointer chain of the sampled thread
 * and records each JavaScript frame as (SharedFunctionInfo, bytecode offset or
 * LT_INTERP_NO_OFFSET, 4 bytes of the SharedFunctionInfo) in an lt_interp_stack.
 */
struct lt_v8_layout {
	__u16 enabled;            /* 0: no V8 walking */
	__s16 fp_context;         /* context, or a typed frame's marker (low bit 0) */
	__s16 fp_function;        /* the JSFunction of a JavaScript frame */
	__s16 fp_bytecode_array;  /* interpreted frames: the BytecodeArray */
	__s16 fp_bytecode_offset; /* interpreted frames: the offset, a Smi */
	__u16 map_instance_type;  /* Map: the instance type (u16) */
	__u16 function_shared;    /* JSFunction: its SharedFunctionInfo */
	__u16 sfi_fingerprint;    /* SharedFunctionInfo: 4 bytes read as the fingerprint */
	__u16 type_function_first; /* instance types of JSFunction and its subclasses */
	__u16 type_function_last;
	__u16 type_sfi;
	__u16 type_bytecode_array;
	__u16 smi_shift;          /* a Smi's value is word >> smi_shift (32 without pointer compression) */
	__u16 pad[3];
};

LT_STATIC_ASSERT(sizeof(struct lt_v8_layout) == 32, "v8 layout size");

#endif /* LOOPTRACE_EVENTS_H */
