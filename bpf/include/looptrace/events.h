/* SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause) */
/*
 * The only contract between the BPF programs and user space.
 *
 * Plain C that compiles as C (clang -target bpf) and C++ (g++).
 * Fixed-width fields only, explicit padding, sizes checked on both sides.
 * User space decodes these records in exactly one place
 * (loader/event_decoder.cc); nothing else reads raw bytes.
 */
#ifndef LOOPTRACE_EVENTS_H
#define LOOPTRACE_EVENTS_H

#ifdef __cplusplus
#include <cstddef>
#include <linux/types.h>
#elif !defined(__VMLINUX_H__)
#include <linux/types.h>
#endif

#define LT_ABI_VERSION 2
#define LT_MAX_ARGS 4
#define LT_TASK_COMM_LEN 16

/* Record types: every record starts with struct lt_record_header. */
#define LT_RECORD_PROBE 1 /* a profile probe point fired (a role event) */
#define LT_RECORD_SWITCH 2 /* the main thread left or got a CPU (sched_switch) */
#define LT_RECORD_SIGNAL 3 /* SIGQUIT sent to the target (signal_generate) */
#define LT_RECORD_EXEC 4 /* the target exec()ed (sched_process_exec) */
#define LT_RECORD_STRING 5 /* text of a string argument, sent once per address */
#define LT_RECORD_WAKEUP 6 /* someone woke the main thread (sched_wakeup) */

/*
 * Roles (ARCHITECTURE.md section 4). Numbers are part of the ABI and of
 * saved recordings: append only, never renumber.
 */
#define LT_ROLE_DISPATCH_BEGIN 1
#define LT_ROLE_DISPATCH_END 2
#define LT_ROLE_FRAME_BEGIN 3
#define LT_ROLE_FRAME_END 4
#define LT_ROLE_PHASE_BEGIN 5
#define LT_ROLE_PHASE_END 6
#define LT_ROLE_VSYNC 7
#define LT_ROLE_METHOD_ENTER 8
#define LT_ROLE_METHOD_EXIT 9
#define LT_ROLE_IDLE_BEGIN 10
#define LT_ROLE_IDLE_END 11
#define LT_ROLE_INPUT_RECEIVE 12
#define LT_ROLE_INPUT_FINISH 13
#define LT_ROLE_APP_CREATE_BEGIN 14
#define LT_ROLE_APP_CREATE_END 15
#define LT_ROLE_ACTIVITY_LAUNCH 16
#define LT_ROLE_ACTIVITY_FOCUS 17
#define LT_ROLE_FULLY_DRAWN 18
#define LT_ROLE_POLL_BEGIN 19
#define LT_ROLE_POLL_END 20
#define LT_ROLE_BARRIER_POST 21
#define LT_ROLE_BARRIER_REMOVE 22
#define LT_ROLE_MESSAGE_ENQUEUE 23
#define LT_ROLE_MAX 24

/*
 * Attach cookie: everything the BPF program needs to know about a probe
 * point travels in its 64-bit cookie, so the hot path does no map lookup.
 *   bits  0..15  probe id (index into the loader's attach plan)
 *   bits 16..23  role (LT_ROLE_*)
 *   bits 24..26  number of arguments to capture (0..LT_MAX_ARGS)
 *   bits 27..30  string mask: bit i set = argument i is a string pointer whose
 *                text BPF copies once per address (LT_RECORD_STRING)
 *   bits 32..63  one 8-bit source per argument slot:
 *                0..5 = function parameter 1..6 (uprobe),
 *                       USDT argument 1..6 (usdt),
 *                LT_ARG_SOURCE_RETVAL = return value (uretprobe)
 */
#define LT_ARG_SOURCE_RETVAL 0xFE
#define LT_COOKIE_PROBE_ID(c) ((__u32)((c) & 0xFFFF))
#define LT_COOKIE_ROLE(c) ((__u32)(((c) >> 16) & 0xFF))
#define LT_COOKIE_NARGS(c) ((__u32)(((c) >> 24) & 0x7))
#define LT_COOKIE_STRING_MASK(c) ((__u32)(((c) >> 27) & 0xF))
#define LT_COOKIE_ARG_SOURCE(c, i) ((__u32)(((c) >> (32 + 8 * (i))) & 0xFF))

/* Thread filter modes (rodata). */
#define LT_THREADS_MAIN 0 /* only tid == tgid */
#define LT_THREADS_ALL 1

/* Per-CPU counters of things the BPF side lost or skipped. */
#define LT_STAT_RINGBUF_FULL 0 /* record dropped: ring buffer had no room */
#define LT_STAT_OTHER_PROCESS 1 /* hit from a process that is not the target */
#define LT_STAT_OTHER_THREAD 2 /* hit from a thread the filter excludes */
#define LT_STAT_ARG_READ_FAILED 3 /* an argument could not be read */
#define LT_STAT_RESERVED_4 4
#define LT_STAT_STRING_READ_FAILED 5 /* BPF could not copy a string (page not resident) */
#define LT_STAT_STACK_FAILED 6 /* bpf_get_stackid failed (map full, or no stack) */
#define LT_STAT_MAX 8

struct lt_record_header {
	__u32 type; /* LT_RECORD_* */
	__u32 size; /* bytes of the whole record */
};

struct lt_probe_record {
	struct lt_record_header header;
	__u64 ts_ns; /* bpf_ktime_get_ns(): CLOCK_MONOTONIC */
	__u32 tgid;
	__u32 tid;
	__u16 probe_id;
	__u16 role;
	__u16 nargs;
	__u16 cpu;
	__u64 beat_index;    /* method-beat buffer head at this hit (next slot to write) */
	__u64 thread_cpu_ns; /* the thread's sum_exec_runtime (as of its last accounting) */
	__u64 args[LT_MAX_ARGS]; /* raw values; strings are pointers (text: LT_RECORD_STRING) */
};

/*
 * Method beats (method.enter / method.exit) do not go through the ring buffer: BPF
 * writes them into an mmapable array used as a ring of LT_BEAT records (default
 * 1M, like Matrix's AppMethodBeat buffer), never waking user space. The head is
 * the .bss counter beat_head; dispatch records carry the head at their hit, so
 * user space copies exactly one message's beats, and only for messages that need
 * them. A beat older than head - capacity has been overwritten (detected, counted).
 */
#define LT_BEAT_ENTER 1
#define LT_BEAT_EXIT 0

/* probe_id of beats written by the cookie-less fast path (id = first argument). */
#define LT_FAST_BEAT_PROBE 0xFFFF

struct lt_beat {
	__u64 ts_ns;
	__u64 id;  /* method id, function address, or name string pointer */
	__u64 aux; /* second identity word (class string pointer), else 0 */
	__u32 tid;
	__u16 probe_id;
	__u8 kind; /* LT_BEAT_ENTER / LT_BEAT_EXIT */
	__u8 pad;
};

/*
 * String arguments are treated as stable per address (message and method names are
 * static): BPF copies the text the first time it sees an address, user space keeps
 * an address -> text table. Longer strings are truncated.
 */
#define LT_MAX_STRING 112

struct lt_string_record {
	struct lt_record_header header;
	__u64 address;
	__u32 tgid;
	__u32 length; /* bytes in text, without the NUL */
	char text[LT_MAX_STRING];
};

/*
 * Thread state (sched_switch / sched_wakeup / perf cpu-clock samples). The main thread's
 * switches stream through the ring buffer (off-CPU intervals with their kernel stack);
 * every thread of the target has its latest state in the thread_states hash, which
 * user space reads for ANR snapshots. Stacks are ids into the stack_traces map.
 */
#define LT_SWITCH_OUT 1 /* the thread left the CPU (state = its __state then) */
#define LT_SWITCH_IN 2  /* the thread got a CPU back */

struct lt_switch_record {
	struct lt_record_header header;
	__u64 ts_ns;
	__u32 tid;
	__u32 kind;        /* LT_SWITCH_OUT / LT_SWITCH_IN */
	__u32 state;       /* prev->__state at switch-out (0 = preempted while running) */
	__s32 kstack_id;   /* kernel stack at switch-out, -1 if none */
	__s32 ustack_id;   /* user stack (frame pointers) at switch-out, -1 if none */
	__u32 pad;
};

struct lt_wakeup_record {
	struct lt_record_header header;
	__u64 ts_ns;
	__u32 wakee_tid;
	__u32 waker_tid;
	__u32 waker_tgid;
	__u32 pad;
	char waker_comm[LT_TASK_COMM_LEN];
};

struct lt_exec_record {
	struct lt_record_header header;
	__u64 ts_ns;
	__u32 pid;
	__u32 pad;
	char comm[LT_TASK_COMM_LEN];
};

struct lt_signal_record {
	struct lt_record_header header;
	__u64 ts_ns;
	__s32 sig;
	__s32 result;       /* TRACE_SIGNAL_* (0 delivered) */
	__u32 target_tid;
	__u32 sender_tgid;
	__u32 sender_tid;
	__u32 pad;
	char sender_comm[LT_TASK_COMM_LEN];
};

/* Value of the thread_states hash (key: tid). */
struct lt_thread_state {
	__u64 since_ns;    /* when the thread entered this state */
	__u32 state;       /* __state at its last switch-out; LT_STATE_RUNNING when on CPU */
	__s32 kstack_id;   /* kernel stack at the last switch-out */
	__s32 ustack_id;   /* user stack at the last switch-out */
	__s32 sample_kstack_id; /* latest on-CPU sample (cpu-clock), -1 if none */
	__s32 sample_ustack_id;
	__u32 pad;
	__u64 sample_ns;
	__u64 switches;    /* context switches seen */
};
#define LT_STATE_RUNNING 0xFFFFFFFF

/*
 * With --dwarf-unwind, the main thread's user registers and the top of its user stack
 * at its last switch-out (and latest cpu-clock sample), for unwinding without frame
 * pointers in user space (symbols/unwinder.h). Registers in DWARF order: rax rdx rcx
 * rbx rsi rdi rbp rsp r8..r15 rip.
 */
#define LT_MAX_STACK_COPY 16384
#define LT_UNWIND_REGS 17

struct lt_stack_copy {
	__u64 ts_ns;
	__u64 regs[LT_UNWIND_REGS];
	__u32 valid_mask; /* bit n: DWARF register n was captured */
	__u32 size;       /* bytes copied from regs[7] (rsp) upwards */
	__u8 bytes[LT_MAX_STACK_COPY];
};

#ifdef __cplusplus
#define LT_STATIC_ASSERT static_assert
#else
#define LT_STATIC_ASSERT _Static_assert
#endif

LT_STATIC_ASSERT(sizeof(struct lt_record_header) == 8, "header size");
LT_STATIC_ASSERT(sizeof(struct lt_probe_record) == 80, "probe record size");
LT_STATIC_ASSERT(sizeof(struct lt_beat) == 32, "beat size");
LT_STATIC_ASSERT(sizeof(struct lt_switch_record) == 40, "switch record size");
LT_STATIC_ASSERT(sizeof(struct lt_wakeup_record) == 48, "wakeup record size");
LT_STATIC_ASSERT(sizeof(struct lt_signal_record) == 56, "signal record size");
LT_STATIC_ASSERT(sizeof(struct lt_exec_record) == 40, "exec record size");
LT_STATIC_ASSERT(sizeof(struct lt_stack_copy) == 8 + 17 * 8 + 8 + LT_MAX_STACK_COPY, "stack copy size");
LT_STATIC_ASSERT(sizeof(struct lt_thread_state) == 48, "thread state size");
LT_STATIC_ASSERT(__builtin_offsetof(struct lt_beat, tid) == 24, "beat tid offset");
LT_STATIC_ASSERT(sizeof(struct lt_string_record) == 136, "string record size");
LT_STATIC_ASSERT(__builtin_offsetof(struct lt_string_record, text) == 24, "string text offset");
LT_STATIC_ASSERT(__builtin_offsetof(struct lt_probe_record, ts_ns) == 8, "ts offset");
LT_STATIC_ASSERT(__builtin_offsetof(struct lt_probe_record, tgid) == 16, "tgid offset");
LT_STATIC_ASSERT(__builtin_offsetof(struct lt_probe_record, probe_id) == 24, "probe_id offset");
LT_STATIC_ASSERT(__builtin_offsetof(struct lt_probe_record, beat_index) == 32, "beat_index offset");
LT_STATIC_ASSERT(__builtin_offsetof(struct lt_probe_record, args) == 48, "args offset");

#endif /* LOOPTRACE_EVENTS_H */
