// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
/*
 * Role events from profile probe points (uprobe, uretprobe, USDT), thread state from
 * scheduler tracepoints, and stacks from cpu-clock samples.
 *
 * The hot path of a probe hit: filter by tgid and thread, check the probe's conditions
 * (string verdicts are cached per address), read the clock only then, and write one
 * fixed-size record into the record ring (or a beat into the beat ring) without waking
 * user space. events.h describes the channels.
 */
#include "vmlinux.h"
#include <bpf/bpf_helpers.h>
#include <bpf/bpf_tracing.h>
#include <bpf/bpf_core_read.h>
#include <bpf/usdt.bpf.h>
#include "looptrace/events.h"

char LICENSE[] SEC("license") = "Dual BSD/GPL";

/* Set between open() and load() by the loader. */
const volatile __u32 target_tgid = 0;
const volatile __u32 thread_filter = LT_THREADS_MAIN;
/* LT_THREADS_LOOP: the prefix a thread's name (comm) needs to claim the loop (0 = any). */
const volatile char loop_name[LT_TASK_COMM_LEN] = {};
const volatile __u32 loop_name_len = 0;
const volatile __u64 beat_mask = (1 << 20) - 1;
const volatile __u64 record_mask = (1 << 16) - 1;

/* Side records: strings, identities, the nudge. */
struct {
	__uint(type, BPF_MAP_TYPE_RINGBUF);
	__uint(max_entries, 8 << 20); /* resized by the loader */
} events SEC(".maps");

/* The record ring (events.h). */
struct {
	__uint(type, BPF_MAP_TYPE_ARRAY);
	__uint(map_flags, BPF_F_MMAPABLE);
	__uint(max_entries, 1 << 16); /* resized by the loader; a power of two */
	__type(key, __u32);
	__type(value, struct lt_record);
} records SEC(".maps");

__u64 record_head; /* next index to claim */
__u64 record_tail; /* user space's read position (written by user space) */

/* Method beats: a ring of lt_beat records in an mmapable array (see events.h). */
struct {
	__uint(type, BPF_MAP_TYPE_ARRAY);
	__uint(map_flags, BPF_F_MMAPABLE);
	__uint(max_entries, 1 << 20); /* resized by the loader; a power of two */
	__type(key, __u32);
	__type(value, struct lt_beat);
} beats SEC(".maps");

__u64 beat_head; /* next beat slot (monotonic; slot = head & (capacity - 1)) */

/* LT_THREADS_LOOP: the loop thread (events.h), 0 until a claiming probe hit names it
 * (64 bits: clang 14 has only 64-bit compare-and-swap for BPF). */
__u64 loop_tid;

/*
 * The loop thread's CPU time, exact at every probe hit: its on-CPU stretches are bounded
 * by the sched_switch program, in the clock the records carry. The kernel's own
 * sum_exec_runtime is only brought up to date at ticks and switches, so a message of a few
 * milliseconds read 0 or a whole tick. Set by the loader once sched_switch is attached;
 * until then (and for other threads) records carry sum_exec_runtime.
 * The kernel now and then runs a task again without a sched_switch event naming it (seen
 * with bpftrace too, a few in 10,000 switch-ins here): such a stretch falls back to the
 * kernel's accounting, which is exact at the edges it did trace.
 */
__u64 loop_cpu_exact;
__u64 loop_cpu_base;   /* its CPU time when the current stretch began (0: not started yet) */
__u64 loop_cpu_since;  /* when it went on CPU (0: off CPU) */
__u64 loop_cpu_kernel; /* its sum_exec_runtime at the last edge traced */

/*
 * Whether the loop thread has a message open, as its probe hits say (sched_switch takes no
 * stack at a switch-out while it has none: LT_STACK_IDLE). Written by the loop thread only.
 * A lost dispatch.end leaves the depth up: stacks are then taken, as before.
 */
__u32 loop_dispatch_depth; /* dispatch.begin hits minus dispatch.end hits, never below 0 */
__u32 loop_in_poll;        /* between poll.begin and poll.end */
/* 1: stacks at every switch-out (the profile reports spans outside messages, or
 * --idle-stacks); 0: not while the loop thread is idle. */
const volatile __u32 switch_stacks_idle = 1;
/* Messages are poll-bounded (the busy time between polls): idle only inside the poll. */
const volatile __u32 messages_poll_bounded = 0;
__u64 loop_message_begin_ns; /* when the outermost open message began */
/* Preemptions of the loop thread in a message open for less than this get no stack (0: all
 * do). Written by the loader once the session has started (the tracers know then which
 * messages a report can show with stacks). */
__u64 preempt_stacks_after_ns;

/* Per probe id: role, arguments and conditions (filled by the loader before attach). */
struct {
	__uint(type, BPF_MAP_TYPE_ARRAY);
	__uint(max_entries, 1); /* resized by the loader to the number of probes */
	__type(key, __u32);
	__type(value, struct lt_probe_config);
} probe_configs SEC(".maps");

struct {
	__uint(type, BPF_MAP_TYPE_PERCPU_ARRAY);
	__uint(max_entries, LT_STAT_MAX);
	__type(key, __u32);
	__type(value, __u64);
} stats SEC(".maps");

static __always_inline void count_n(__u32 index, __u64 n)
{
	__u64 *value = bpf_map_lookup_elem(&stats, &index);

	if (value)
		*value += n;
}

static __always_inline void count(__u32 index)
{
	count_n(index, 1);
}

struct {
	__uint(type, BPF_MAP_TYPE_PERCPU_ARRAY);
	__uint(max_entries, LT_PROG_MAX);
	__type(key, __u32);
	__type(value, struct lt_prog_cost);
} prog_costs SEC(".maps");

/*
 * Counts a run of program `prog` and, for a random one in about LT_COST_TIME_EVERY, notes
 * when it began. The start is kept in the map, not in a register, so that the timed and
 * the untimed run reach the program's body in the same verifier state.
 */
static __always_inline void cost_begin(__u32 prog)
{
	struct lt_prog_cost *cost = bpf_map_lookup_elem(&prog_costs, &prog);

	if (!cost)
		return;
	cost->runs++;
	if (cost->runs > LT_COST_TIME_ALL && cost->runs < cost->next_timed)
		return;
	cost->next_timed = cost->runs + 1 + bpf_get_prandom_u32() % (2 * LT_COST_TIME_EVERY - 1);
	cost->began_ns = bpf_ktime_get_ns();
}

static __always_inline void cost_end(__u32 prog)
{
	struct lt_prog_cost *cost = bpf_map_lookup_elem(&prog_costs, &prog);

	if (!cost || !cost->began_ns)
		return;
	cost->timed_ns += bpf_ktime_get_ns() - cost->began_ns;
	cost->timed_runs++;
	cost->began_ns = 0;
}

/* `return LT_TIMED(LT_PROG_X, body(...))`: runs the body, counted and now and then timed. */
#define LT_TIMED(prog, call)         \
	({                           \
		int timed_ret_;      \
		cost_begin(prog);    \
		timed_ret_ = (call); \
		cost_end(prog);      \
		timed_ret_;          \
	})

/* ---- record ring ---- */

/*
 * Claims the next slot of the record ring; null when the ring is full (counted). The
 * caller fills the slot and then publishes it with publish_record().
 */
static __always_inline struct lt_record *claim_record(__u64 *index)
{
	__u64 head = *(volatile __u64 *)&record_head;
	__u64 tail = *(volatile __u64 *)&record_tail;
	__u64 capacity = record_mask + 1;
	struct lt_record *rec;
	__u32 slot;

	if (head - tail >= capacity) {
		count(LT_STAT_RECORDS_FULL);
		return 0;
	}
	/* Several writers: the main thread, and the scheduler or a signal sender on another CPU. */
	*index = __sync_fetch_and_add(&record_head, 1);
	if (*index - tail == capacity / 2) {
		/* Half full: wake user space once, instead of once per record. */
		struct lt_nudge_record nudge = {
			.header = { .type = LT_RECORD_NUDGE, .size = sizeof(nudge) },
			.record_head = *index,
		};

		bpf_ringbuf_output(&events, &nudge, sizeof(nudge), BPF_RB_FORCE_WAKEUP);
	}
	slot = *index & record_mask;
	rec = bpf_map_lookup_elem(&records, &slot);
	return rec;
}

static __always_inline void publish_record(struct lt_record *rec, __u64 index)
{
	/* Every field before the sequence number (x86 keeps stores in order; this keeps clang). */
	asm volatile("" ::: "memory");
	rec->seq = index + 1;
}

/* ---- arguments ---- */

/* The six register parameters, then the return value, into regs[0..6]. */
static __always_inline void copy_registers(struct pt_regs *ctx, __u64 *regs)
{
	regs[0] = PT_REGS_PARM1(ctx);
	regs[1] = PT_REGS_PARM2(ctx);
	regs[2] = PT_REGS_PARM3(ctx);
	regs[3] = PT_REGS_PARM4(ctx);
	regs[4] = PT_REGS_PARM5(ctx);
	regs[5] = ctx->r9; /* libbpf 1.1 has no PT_REGS_PARM6 */
	regs[6] = PT_REGS_RC(ctx);
}

/*
 * The value of argument source `source` (events.h LT_SOURCE_*). A global function: the
 * verifier checks it once, not at every call. Registers are copied to the stack first: a
 * switch on the source would let clang turn the reads into ctx pointer arithmetic, which
 * the verifier rejects.
 */
__noinline __u64 read_arg(struct pt_regs *ctx, __u32 source, int usdt)
{
	__u64 regs[8] = {};
	__u64 value = 0;

	if (!ctx || (source >= LT_MAX_SOURCES && source != LT_SOURCE_RETVAL))
		return 0;
	if (usdt) {
		long v = 0;

		if (source == LT_SOURCE_RETVAL || bpf_usdt_arg(ctx, source, &v))
			count(LT_STAT_ARG_READ_FAILED);
		return v;
	}
	if (source == LT_SOURCE_RETVAL)
		return PT_REGS_RC(ctx);
	if (source < 6) {
		copy_registers(ctx, regs);
		/* Masked where the verifier sees it (clang would drop a plain & 7 after the check). */
		asm volatile("%0 &= 7" : "+r"(source));
		return regs[source];
	}
	/* Parameters 7..12 are on the stack above the return address (at a function's entry). */
	if (bpf_probe_read_user(&value, sizeof(value), (void *)(PT_REGS_SP(ctx) + 8 * (source - 5))))
		count(LT_STAT_ARG_READ_FAILED);
	return value;
}

/* ---- strings ---- */

/*
 * Addresses whose text was already sent (LT_RECORD_STRING): a direct-mapped cache in
 * .bss, read without a helper call. A collision or a race between CPUs only re-sends a
 * string; user space keeps the authoritative table.
 */
#define LT_STRING_CACHE_SLOTS 4096
__u64 sent_strings[LT_STRING_CACHE_SLOTS];
__u64 sent_identities[LT_STRING_CACHE_SLOTS];

static __always_inline __u32 cache_slot(__u64 key)
{
	return (__u32)((key >> 3) ^ (key >> 15) ^ (key >> 29)) & (LT_STRING_CACHE_SLOTS - 1);
}

/* Copies `length` bytes, or up to the NUL when `length` is 0; returns the bytes copied. */
static __always_inline long read_string(char *buf, __u32 size, __u64 address, __u64 length, int delimited)
{
	long n;

	if (!delimited) {
		n = bpf_probe_read_user_str(buf, size, (const void *)address);
		return n > 0 ? n - 1 : n;
	}
	if (length > size - 1)
		length = size - 1;
	if (length == 0)
		return 0;
	n = bpf_probe_read_user(buf, length, (const void *)address);
	return n ? n : (long)length;
}

/* Sends the text at `address` unless it was sent before; runs before the record is
 * written, so user space always sees the text first. */
__noinline int send_string_once(__u64 address, __u64 length, int delimited)
{
	struct lt_string_record *rec;
	__u32 slot = cache_slot(address);
	long n;

	if (!address || sent_strings[slot] == address)
		return 0;
	rec = bpf_ringbuf_reserve(&events, sizeof(*rec), 0);
	if (!rec) {
		count(LT_STAT_RINGBUF_FULL);
		return 0;
	}
	n = read_string(rec->text, sizeof(rec->text), address, length, delimited);
	if (n < 0 || (n == 0 && !delimited)) {
		/* not resident: user space reads it from the process instead */
		bpf_ringbuf_discard(rec, BPF_RB_NO_WAKEUP);
		count(LT_STAT_STRING_READ_FAILED);
		return 0;
	}
	rec->header.type = LT_RECORD_STRING;
	rec->header.size = sizeof(*rec);
	rec->address = address;
	rec->tgid = target_tgid;
	rec->length = n;
	bpf_ringbuf_submit(rec, BPF_RB_NO_WAKEUP);
	sent_strings[slot] = address;
	return 0;
}

/* ---- CPython objects (loader/runtimes/python/) ---- */

/* The CPython layout of the target (events.h); frame_model 0: not a CPython. */
const volatile struct lt_py_layout py_layout = {};
/* Where the target's interpreter is, published by the loader once it checked the layout. */
struct lt_py_addresses py_addresses = {};

static __always_inline __u64 py_code_type(void)
{
	return *(volatile __u64 *)&py_addresses.code_type;
}

static __always_inline __u64 read_user_u64(__u64 address)
{
	__u64 value = 0;

	bpf_probe_read_user(&value, sizeof(value), (const void *)address);
	return value;
}

/* Kinds of Python objects a callable is followed through (by their type's name). */
#define LT_PYK_OTHER 0
#define LT_PYK_FUNCTION 1
#define LT_PYK_METHOD 2
#define LT_PYK_PARTIAL 3
#define LT_PYK_CFUNC 4
#define LT_PYK_TASK_WRAPPER 5
#define LT_PYK_TASK 6
#define LT_PYK_STR 7

/* Type object -> LT_PYK_*: type objects outlive the callables of a session. */
struct {
	__uint(type, BPF_MAP_TYPE_LRU_HASH);
	__uint(max_entries, 512);
	__type(key, __u64);
	__type(value, __u32);
} py_type_kinds SEC(".maps");

static __always_inline int starts_with(const char *text, const char *prefix, int n)
{
	for (int i = 0; i < n; i++)
		if (text[i] != prefix[i])
			return 0;
	return 1;
}

/* The kind of a type, from its tp_name ("_asyncio." types with or without the module). */
static __noinline __u32 py_kind_of(__u64 type)
{
	char name[40] = {};
	__u32 *cached, kind = LT_PYK_OTHER;
	const char *n = name;

	if (!type)
		return LT_PYK_OTHER;
	cached = bpf_map_lookup_elem(&py_type_kinds, &type);
	if (cached)
		return *cached;
	if (bpf_probe_read_user_str(name, sizeof(name), (const void *)read_user_u64(type + py_layout.type_name)) <= 0)
		return LT_PYK_OTHER;
	if (starts_with(n, "_asyncio.", 9))
		n += 9;
	if (starts_with(n, "function", 9))
		kind = LT_PYK_FUNCTION;
	else if (starts_with(n, "method", 7))
		kind = LT_PYK_METHOD;
	else if (starts_with(n, "functools.partial", 18))
		kind = LT_PYK_PARTIAL;
	else if (starts_with(n, "builtin_function_or_method", 27) || starts_with(n, "builtin_method", 15))
		kind = LT_PYK_CFUNC;
	else if (starts_with(n, "TaskStepMethWrapper", 20) || starts_with(n, "TaskWakeupMethWrapper", 22))
		kind = LT_PYK_TASK_WRAPPER;
	else if (starts_with(n, "Task", 5))
		kind = LT_PYK_TASK;
	else if (starts_with(n, "str", 4))
		kind = LT_PYK_STR;
	bpf_map_update_elem(&py_type_kinds, &type, &kind, BPF_ANY);
	return kind;
}

static __always_inline __u64 py_type_of(__u64 object)
{
	return read_user_u64(object + 8);
}

/* A str's ASCII text (its address, for LT_RECORD_STRING), or 0 for another kind of str. */
static __always_inline __u64 py_ascii_text(__u64 str)
{
	__u32 state = 0;

	bpf_probe_read_user(&state, sizeof(state), (const void *)(str + py_layout.str_state));
	return (state & 0x40) ? str + py_layout.str_ascii_data : 0; /* state.ascii (compact ASCII) */
}

/*
 * asyncio's default task names, "Task-<n>": their number. A task's name is a str freed with
 * the task, and the next task's name often takes its address: texts are sent once per
 * address, so a default name travels as its number instead.
 */
static __always_inline int py_task_number(__u64 text, __u64 *number)
{
	char buf[24] = {};
	__u64 n = 0;

	if (bpf_probe_read_user_str(buf, sizeof(buf), (const void *)text) <= 6 ||
	    !starts_with(buf, "Task-", 5))
		return 0;
#pragma unroll
	for (int i = 5; i < (int)sizeof(buf); i++) {
		if (buf[i] == 0) {
			*number = n;
			return 1;
		}
		if (buf[i] < '0' || buf[i] > '9')
			return 0;
		n = n * 10 + (buf[i] - '0');
	}
	return 0;
}

/*
 * Names a callable the way asyncio's debug repr does: follows bound methods,
 * functools.partial and asyncio's task wrappers, and writes LT_PY_CALLABLE_SLOTS values
 * (events.h) to slots[0..4]: code, offset | kind << 32, fingerprint, text, text.
 */
static __noinline int py_name_callable(__u64 vector, __u64 *slots)
{
	__u64 object, code = 0, text = 0, text2 = 0, kind_out = LT_PY_CALLABLE_OTHER;
	__u32 kind = LT_PYK_OTHER, offset = 0xffffffff;
	int i;

	if (!slots || !vector || !py_code_type())
		return 0;
	object = read_user_u64(vector);
	for (i = 0; i < 4 && object; i++) {
		kind = py_kind_of(py_type_of(object));
		if (kind == LT_PYK_METHOD)
			object = read_user_u64(object + py_layout.method_func);
		else if (kind == LT_PYK_PARTIAL)
			object = read_user_u64(object + py_layout.partial_fn);
		else if (kind == LT_PYK_TASK_WRAPPER)
			object = read_user_u64(object + py_layout.wrapper_task);
		else if (kind == LT_PYK_CFUNC &&
			 py_kind_of(py_type_of(read_user_u64(object + py_layout.cfunc_self))) == LT_PYK_TASK)
			object = read_user_u64(object + py_layout.cfunc_self); /* Task.task_wakeup (3.12+) */
		else
			break;
	}
	if (kind == LT_PYK_FUNCTION) {
		code = read_user_u64(object + py_layout.func_code);
		kind_out = LT_PY_CALLABLE_FUNCTION;
		if (py_layout.func_qualname != LT_PY_NONE)
			text = py_ascii_text(read_user_u64(object + py_layout.func_qualname));
	} else if (kind == LT_PYK_TASK) {
		__u64 coro = read_user_u64(object + py_layout.task_coro);
		__u64 name = read_user_u64(object + py_layout.task_name);

		kind_out = LT_PY_CALLABLE_TASK;
		if (py_layout.gen_frame != LT_PY_NONE) {
			/* to 3.10: the coroutine's code, and its frame object (none once finished) */
			__u64 frame = read_user_u64(coro + py_layout.gen_frame);
			__s32 lasti = 0;

			code = read_user_u64(coro + py_layout.gen_code);
			if (frame)
				bpf_probe_read_user(&lasti, sizeof(lasti), (const void *)(frame + py_layout.frame_instr));
			offset = lasti < 0 ? 0 : (__u32)lasti << (py_layout.lasti_in_units ? 1 : 0);
		} else {
			/* 3.11+: the frame is part of the coroutine object */
			__u64 frame = coro + py_layout.gen_iframe;
			__u64 instr = read_user_u64(frame + py_layout.frame_instr);

			code = read_user_u64(frame + py_layout.frame_code);
			offset = instr > code + py_layout.code_adaptive ? (__u32)((instr - code - py_layout.code_adaptive) / 2) : 0;
		}
		if (py_kind_of(py_type_of(name)) == LT_PYK_STR) {
			__u64 number = 0;

			text = py_ascii_text(name);
			if (text && py_task_number(text, &number)) {
				text = number;
				kind_out |= LT_PY_CALLABLE_TASK_NUMBER;
			}
		} else {
			/* 3.13 names tasks lazily: an int, "Task-<n>" */
			text = read_user_u64(name + py_layout.long_digit) & 0x3fffffff;
			kind_out |= LT_PY_CALLABLE_TASK_NUMBER;
		}
	} else if (kind == LT_PYK_CFUNC) {
		kind_out = LT_PY_CALLABLE_CFUNC;
		text = read_user_u64(py_type_of(read_user_u64(object + py_layout.cfunc_self)) + py_layout.type_name);
		text2 = read_user_u64(read_user_u64(object + py_layout.cfunc_ml)); /* ml_name */
	} else if (object) {
		text = read_user_u64(py_type_of(object) + py_layout.type_name);
	}
	if (code && read_user_u64(code + 8) != py_code_type())
		code = 0; /* not a code object: a layout mismatch, never a name */
	slots[0] = code;
	slots[1] = (__u64)offset | kind_out << 32;
	slots[2] = code ? (__u32)read_user_u64(code + py_layout.code_fingerprint) : 0;
	slots[3] = text;
	slots[4] = text2;
	if (text && !(kind_out & LT_PY_CALLABLE_TASK_NUMBER))
		send_string_once(text, 0, 0);
	if (text2)
		send_string_once(text2, 0, 0);
	return 0;
}

/* A probe hit's recorded argument values. */
struct lt_arg_values {
	__u64 v[LT_MAX_ARGS];
};

/*
 * Every recorded argument of a hit, and the text of each string argument not sent before:
 * one global function call per hit (verified once), registers read by index without a call
 * of their own, and a string already sent costs a cache look-up. Calls cost ~7 ns each on
 * kernels that return through a mitigation thunk, and a message made three to four of them.
 */
__noinline int read_args(struct pt_regs *ctx, const struct lt_probe_config *cfg, struct lt_arg_values *out, int usdt)
{
	__u64 regs[8] = {};
	__u32 i;

	if (!ctx || !cfg || !out)
		return 0;
	if (!usdt)
		copy_registers(ctx, regs);
#pragma unroll
	for (i = 0; i < LT_MAX_ARGS; i++) {
		const struct lt_arg_config *arg = &cfg->args[i];
		__u32 source = arg->source;
		__u64 value;

		if (i >= cfg->nargs)
			break;
		if (!usdt && (source < 6 || source == LT_SOURCE_RETVAL)) {
			if (source == LT_SOURCE_RETVAL)
				source = 6;
			/* Masked where the verifier sees it (clang would drop a plain & 7). */
			asm volatile("%0 &= 7" : "+r"(source));
			value = regs[source];
		} else {
			value = read_arg(ctx, source, usdt);
		}
		if (arg->type == LT_ARG_AT) {
			__u64 field = 0;

			bpf_probe_read_user(&field, sizeof(field), (const void *)(value + arg->offset_words * 8ULL));
			value = field;
		}
		out->v[i] = value;
		/* py_layout is rodata: for any other target the verifier never sees this branch */
		if (py_layout.frame_model && arg->type == LT_ARG_PY_CALLABLE &&
		    i + LT_PY_CALLABLE_SLOTS <= LT_MAX_ARGS) {
			__u64 named[LT_PY_CALLABLE_SLOTS] = {};

			/* pycallable(OFFSET): the callable is a field of what the argument points to */
			py_name_callable(value ? value + arg->offset_words * 8ULL : 0, named);
#pragma unroll
			for (__u32 k = 0; k < LT_PY_CALLABLE_SLOTS; k++)
				out->v[(i + k) & (LT_MAX_ARGS - 1)] = named[k];
			break; /* the callable's slots are the last */
		}
		if (arg->type == LT_ARG_STR && value && sent_strings[cache_slot(value)] != value) {
			int delimited = arg->length_source != LT_SOURCE_NONE;

			send_string_once(value, delimited ? read_arg(ctx, arg->length_source, usdt) : 0, delimited);
		}
	}
	return 0;
}

/* ---- conditions ---- */

/*
 * Verdicts of string conditions, by (probe, condition, address): a direct-mapped cache, so
 * a busy probe whose string does not match costs one lookup and an 8-byte re-read (the
 * guard, against a freed name's memory now holding another string), not a compare.
 */
#define LT_VERDICT_SLOTS 4096

struct verdict {
	__u64 address;
	__u64 guard;     /* the string's first bytes (up to 8) when the verdict was made */
	__u32 key;       /* probe id << 8 | condition index, + 1 (0 = empty) */
	__u8 verdict;
	__u8 guard_len;
	__u16 pad;
};

struct {
	__uint(type, BPF_MAP_TYPE_ARRAY);
	__uint(max_entries, LT_VERDICT_SLOTS);
	__type(key, __u32);
	__type(value, struct verdict);
} verdicts SEC(".maps");

#define LT_SCRATCH_STRING 256

struct string_scratch {
	char text[LT_SCRATCH_STRING];
	char pattern[LT_MAX_PATTERN];
	__u32 len;
	__u32 pattern_len;
	/* glob matcher state */
	__s32 si, pi, star, mark;
	__u32 done, matched;
};

struct {
	__uint(type, BPF_MAP_TYPE_PERCPU_ARRAY);
	__uint(max_entries, 1);
	__type(key, __u32);
	__type(value, struct string_scratch);
} scratch SEC(".maps");

/* One step of '*' / '?' wildcard matching (the classic single-backtrack algorithm). */
static long glob_step(__u32 i, void *ctx)
{
	__u32 zero = 0;
	struct string_scratch *s = bpf_map_lookup_elem(&scratch, &zero);
	__s32 si, pi;
	char p, c;

	if (!s)
		return 1;
	si = s->si;
	pi = s->pi;
	if (si < 0 || pi < 0 || si > LT_SCRATCH_STRING || pi > LT_MAX_PATTERN) {
		s->done = 1;
		return 1;
	}
	if (si >= (__s32)s->len) {
		/* The text is used up: what is left of the pattern must be stars. */
		__u32 k;

		for (k = 0; k < LT_MAX_PATTERN; k++) {
			if (pi >= (__s32)s->pattern_len || s->pattern[pi & (LT_MAX_PATTERN - 1)] != '*')
				break;
			pi++;
		}
		s->matched = pi == (__s32)s->pattern_len;
		s->done = 1;
		return 1;
	}
	p = pi < (__s32)s->pattern_len ? s->pattern[pi & (LT_MAX_PATTERN - 1)] : 0;
	c = s->text[si & (LT_SCRATCH_STRING - 1)];
	if (pi < (__s32)s->pattern_len && (p == '?' || (p != '*' && p == c))) {
		s->si = si + 1;
		s->pi = pi + 1;
	} else if (pi < (__s32)s->pattern_len && p == '*') {
		s->star = pi;
		s->mark = si;
		s->pi = pi + 1;
	} else if (s->star >= 0) {
		s->pi = s->star + 1;
		s->mark++;
		s->si = s->mark;
	} else {
		s->matched = 0;
		s->done = 1;
		return 1;
	}
	return 0;
}

static __always_inline int bytes_equal(struct string_scratch *s, __u32 offset, __u32 n)
{
	__u32 i;

	for (i = 0; i < LT_MAX_PATTERN; i++) {
		if (i >= n)
			break;
		if (s->text[(offset + i) & (LT_SCRATCH_STRING - 1)] != s->pattern[i & (LT_MAX_PATTERN - 1)])
			return 0;
	}
	return 1;
}

/* Evaluates a string condition on the text in scratch. */
static __always_inline int string_verdict(struct string_scratch *s, __u8 op)
{
	__u32 len = s->len, plen = s->pattern_len;

	switch (op) {
	case LT_PRED_STR_EQ:
		return len == plen && bytes_equal(s, 0, plen);
	case LT_PRED_STR_NE:
		return !(len == plen && bytes_equal(s, 0, plen));
	case LT_PRED_STR_PREFIX:
		return len >= plen && bytes_equal(s, 0, plen);
	case LT_PRED_STR_SUFFIX:
		return len >= plen && bytes_equal(s, len - plen, plen);
	case LT_PRED_STR_GLOB:
		s->si = 0;
		s->pi = 0;
		s->star = -1;
		s->mark = 0;
		s->done = 0;
		s->matched = 0;
		bpf_loop(LT_SCRATCH_STRING * LT_MAX_PATTERN + LT_MAX_PATTERN + 1, glob_step, 0, 0);
		return s->done && s->matched;
	}
	return 0;
}

static __always_inline __u64 guard_of(const char *text, __u32 n)
{
	__u64 guard = 0;

	__builtin_memcpy(&guard, text, 8);
	if (n < 8)
		guard &= (1ull << (8 * n)) - 1;
	return guard;
}

static __always_inline int check_string(const struct lt_predicate *p, __u64 address, __u64 length, __u32 key)
{
	__u32 zero = 0, slot = cache_slot(address ^ ((__u64)key << 40));
	struct string_scratch *s;
	struct verdict *v;
	int delimited = p->arg.length_source != LT_SOURCE_NONE;
	long n;
	__u32 i;

	if (!address)
		return p->op == LT_PRED_STR_NE;
	v = bpf_map_lookup_elem(&verdicts, &slot);
	if (!v)
		return 0;
	if (v->key == key && v->address == address) {
		__u64 now = 0;

		if (bpf_probe_read_user(&now, 8, (const void *)address) == 0) {
			if (v->guard_len < 8)
				now &= (1ull << (8 * v->guard_len)) - 1;
			if (now == v->guard)
				return v->verdict;
		}
		count(LT_STAT_VERDICTS_STALE);
	} else if (v->key) {
		count(LT_STAT_VERDICTS_EVICTED);
	}
	s = bpf_map_lookup_elem(&scratch, &zero);
	if (!s)
		return 0;
	n = read_string(s->text, sizeof(s->text), address, length, delimited);
	if (n < 0) {
		count(LT_STAT_STRING_READ_FAILED);
		return 0;
	}
	s->len = n;
	s->pattern_len = p->pattern_len > LT_MAX_PATTERN ? LT_MAX_PATTERN : p->pattern_len;
	for (i = 0; i < LT_MAX_PATTERN; i++)
		s->pattern[i] = p->pattern[i];
	v->verdict = string_verdict(s, p->op);
	v->address = address;
	v->key = key;
	v->guard_len = n < 8 ? n : 8;
	v->guard = guard_of(s->text, v->guard_len);
	return v->verdict;
}

/* Whether a condition holds for this hit (a global function: verified once). */
__noinline int condition_holds(struct pt_regs *ctx, const struct lt_predicate *p, __u32 key, int usdt)
{
	__u64 value;
	__s64 v;

	if (!p)
		return 0;
	value = read_arg(ctx, p->arg.source, usdt);
	v = (__s64)value;

	switch (p->op) {
	case LT_PRED_EQ:
		return v == p->value;
	case LT_PRED_NE:
		return v != p->value;
	case LT_PRED_LT:
		return v < p->value;
	case LT_PRED_LE:
		return v <= p->value;
	case LT_PRED_GT:
		return v > p->value;
	case LT_PRED_GE:
		return v >= p->value;
	}
	return check_string(p, value,
			    p->arg.length_source == LT_SOURCE_NONE ? 0 : read_arg(ctx, p->arg.length_source, usdt),
			    key);
}

/* ---- beats ---- */

static __always_inline void write_beat(__u32 probe_id, __u8 enter, __u32 tid, __u64 id)
{
	__u64 index = __sync_fetch_and_add(&beat_head, 1);
	__u32 slot = index & beat_mask;
	struct lt_beat *beat = bpf_map_lookup_elem(&beats, &slot);

	if (!beat)
		return;
	beat->ts_ns = bpf_ktime_get_ns();
	beat->id = id;
	beat->aux = 0;
	beat->tid = tid;
	beat->probe_id = probe_id;
	beat->kind = enter ? LT_BEAT_ENTER : LT_BEAT_EXIT;
}

/* One id for a method named by several arguments; their values go out once per id. */
static __always_inline __u64 identity_of(__u32 probe_id, __u32 nargs, const __u64 *values)
{
	__u64 id = 0x9E3779B97F4A7C15ull * (probe_id + 1);
	__u32 i, slot;

#pragma unroll
	for (i = 0; i < LT_MAX_ARGS; i++)
		if (i < nargs)
			id = (id ^ values[i]) * 0xBF58476D1CE4E5B9ull;
	id ^= id >> 31;
	slot = cache_slot(id);
	if (sent_identities[slot] != id) {
		struct lt_identity_record rec = {
			.header = { .type = LT_RECORD_IDENTITY, .size = sizeof(rec) },
			.id = id,
			.probe_id = probe_id,
		};

#pragma unroll
		for (i = 0; i < LT_MAX_ARGS; i++)
			rec.values[i] = values[i];
		if (bpf_ringbuf_output(&events, &rec, sizeof(rec), BPF_RB_NO_WAKEUP))
			count(LT_STAT_RINGBUF_FULL);
		else
			sent_identities[slot] = id;
	}
	return id;
}

/* ---- the loop thread ---- */

/* The thread whose loop is watched: the main thread, or the claimed loop thread (0 = none yet). */
static __always_inline __u32 looper_tid(void)
{
	if (thread_filter == LT_THREADS_LOOP)
		return *(volatile __u64 *)&loop_tid;
	return target_tgid;
}

/* Whether the current thread's name starts with loop_name. */
static __always_inline int name_may_claim(void)
{
	char comm[LT_TASK_COMM_LEN] = {};
	__u32 i;

	if (!loop_name_len)
		return 1;
	bpf_get_current_comm(comm, sizeof(comm));
#pragma unroll
	for (i = 0; i < LT_TASK_COMM_LEN; i++)
		if (i < loop_name_len && comm[i] != loop_name[i])
			return 0;
	return 1;
}

/* ---- uretprobe shadow stack (events.h) ---- */

struct {
	__uint(type, BPF_MAP_TYPE_ARRAY);
	__uint(max_entries, LT_SHADOW_SLOTS);
	__type(key, __u32);
	__type(value, struct lt_shadow_stack);
} shadow_stacks SEC(".maps");

/* The thread's shadow stack, or null if its slot holds another thread's. */
static __always_inline struct lt_shadow_stack *shadow_of(__u32 tid)
{
	__u32 index = tid & (LT_SHADOW_SLOTS - 1);
	struct lt_shadow_stack *s = bpf_map_lookup_elem(&shadow_stacks, &index);

	return s && s->tid == tid ? s : 0;
}

/* An index into a shadow stack, masked where the verifier sees it (clang drops a plain
 * mask after a range check). */
static __always_inline __u32 shadow_index(__u32 index)
{
	asm volatile("%0 &= 7" : "+r"(index));
	return index;
}

/* Drops the entries whose slot is at or below `limit`: frames already left. */
static __always_inline void shadow_trim(struct lt_shadow_stack *s, __u64 limit)
{
	__u32 i;

	for (i = 0; i < LT_MAX_SHADOW; i++) {
		__u32 depth = s->depth;

		if (!depth || depth > LT_MAX_SHADOW || s->frames[shadow_index(depth - 1)].slot > limit)
			break;
		s->depth = depth - 1;
	}
}

/*
 * At the entry of a function that has a uretprobe: the kernel replaces its return address
 * after the entry handlers ran, so [sp] still holds the real one here.
 */
static __always_inline void shadow_push(struct pt_regs *ctx, __u32 tid)
{
	__u32 index = tid & (LT_SHADOW_SLOTS - 1);
	struct lt_shadow_stack *s = bpf_map_lookup_elem(&shadow_stacks, &index);
	__u64 sp = PT_REGS_SP(ctx), ret = 0;
	__u32 depth;

	if (!s)
		return;
	if (s->tid != tid) {
		/* A thread exited, or two live threads share the slot: the other one's entries
		 * still in use are forgotten (counted, as entries nested too deep are). */
		if (s->depth && s->depth <= LT_MAX_SHADOW)
			count_n(LT_STAT_SHADOW_OVERFLOW, s->depth);
		s->tid = tid;
		s->depth = 0;
	}
	if (bpf_probe_read_user(&ret, sizeof(ret), (const void *)sp))
		return;
	/* frames left without their return (longjmp, exceptions) lie at or below sp */
	shadow_trim(s, sp);
	depth = s->depth;
	if (depth >= LT_MAX_SHADOW) {
		count(LT_STAT_SHADOW_OVERFLOW);
		return;
	}
	s->frames[shadow_index(depth)].slot = sp;
	s->frames[shadow_index(depth)].ret = ret;
	s->depth = depth + 1;
}

/* At a uretprobe: the return popped the slot, sp is above it now. */
static __always_inline void shadow_pop(struct pt_regs *ctx, __u32 tid)
{
	struct lt_shadow_stack *s = shadow_of(tid);

	if (s)
		shadow_trim(s, PT_REGS_SP(ctx) - 1);
}

/*
 * The shadow entries in effect for a thread whose user stack pointer is `sp`, innermost
 * first: above sp, and whose slot no longer holds the real address (the kernel replaced
 * it; a function it did not hijack, beyond its nesting limit, keeps its own).
 */
static __always_inline __u16 shadow_capture(__u32 tid, __u64 sp, struct lt_shadow_frame *out)
{
	struct lt_shadow_stack *s = shadow_of(tid);
	__u16 n = 0;
	__u32 i;

	if (!s)
		return 0;
	for (i = 0; i < LT_MAX_SHADOW; i++) {
		__u32 depth = s->depth;
		struct lt_shadow_frame f;
		__u64 now = 0;

		if (i >= depth || depth > LT_MAX_SHADOW)
			break;
		f = s->frames[shadow_index(depth - 1 - i)];
		if (f.slot < sp)
			continue;
		if (bpf_probe_read_user(&now, sizeof(now), (const void *)f.slot) || now == f.ret)
			continue;
		out[shadow_index(n)] = f;
		n++;
	}
	return n;
}

/* The loop thread's probe hits keep its message state (sched_switch reads it). */
static __always_inline void loop_message_state(__u32 role)
{
	if (role == LT_ROLE_DISPATCH_BEGIN) {
		if (!loop_dispatch_depth++ && !messages_poll_bounded)
			loop_message_begin_ns = bpf_ktime_get_ns();
	} else if (role == LT_ROLE_DISPATCH_END && loop_dispatch_depth) {
		loop_dispatch_depth--;
	} else if (role == LT_ROLE_POLL_BEGIN) {
		loop_in_poll = 1;
	} else if (role == LT_ROLE_POLL_END) {
		loop_in_poll = 0;
		if (messages_poll_bounded)
			loop_message_begin_ns = bpf_ktime_get_ns();
	}
}

/* ---- the loop thread's CPU time ---- */

/*
 * A stretch of the loop thread no traced edge bounds: the kernel's count since the last
 * traced edge stands in for it (exact at a switch, up to a tick behind at a probe hit).
 */
static __always_inline void loop_cpu_untraced(__u64 kernel)
{
	if (kernel > loop_cpu_kernel)
		loop_cpu_base += kernel - loop_cpu_kernel;
	count(LT_STAT_CPU_SWITCH_UNTRACED);
}

/* What a record of thread `tid` carries as its CPU time, at `now` (it is running). */
static __always_inline __u64 thread_cpu_at(struct task_struct *task, __u32 tid, __u64 now)
{
	__u64 kernel = task->se.sum_exec_runtime;

	if (!loop_cpu_exact || tid != looper_tid())
		return kernel;
	if (!loop_cpu_base) {
		/* First hit: the kernel's figure as the base (it only fixes the origin), exact
		 * from here on. */
		loop_cpu_base = kernel | 1;
	} else if (!loop_cpu_since) {
		loop_cpu_untraced(kernel); /* running, but its switch-in was not traced */
	} else {
		return loop_cpu_base + (now - loop_cpu_since);
	}
	loop_cpu_since = now;
	loop_cpu_kernel = kernel;
	return loop_cpu_base;
}

/*
 * At sched_switch: the loop thread's stretch on CPU ends or begins. The scheduler brought
 * its sum_exec_runtime up to date at its switch-out, and nothing ran it since then at its
 * switch-in, so the kernel's figure is exact at both edges: an edge the kernel did not
 * trace is made up from it.
 */
static __always_inline void loop_cpu_switch(struct task_struct *task, __u32 tid, int on_cpu, __u64 now)
{
	__u64 kernel;

	if (!loop_cpu_exact || !loop_cpu_base || tid != looper_tid())
		return;
	kernel = task->se.sum_exec_runtime;
	if (on_cpu) {
		if (loop_cpu_since)
			loop_cpu_untraced(kernel); /* its switch-out was not traced */
		loop_cpu_since = now;
	} else if (loop_cpu_since) {
		loop_cpu_base += now - loop_cpu_since;
		loop_cpu_since = 0;
	} else {
		loop_cpu_untraced(kernel); /* its switch-in was not traced (no probe hit since) */
	}
	loop_cpu_kernel = kernel;
}

/* ---- the probe hit ---- */

static __always_inline int on_hit(struct pt_regs *ctx, __u64 cookie, int usdt)
{
	__u64 pid_tgid = bpf_get_current_pid_tgid();
	__u32 tid = (__u32)pid_tgid;
	__u32 probe_id = LT_COOKIE_PROBE_ID(cookie);
	struct lt_probe_config *cfg;
	struct lt_arg_values values = {};
	struct task_struct *task;
	struct lt_record *rec;
	__u64 index, now;
	int claim = 0;
	__u32 i;

	/* The kernel's pid filter on the perf event is not relied upon. */
	if ((pid_tgid >> 32) != target_tgid) {
		count(LT_STAT_OTHER_PROCESS);
		return 0;
	}
	cfg = bpf_map_lookup_elem(&probe_configs, &probe_id);
	if (!cfg)
		return 0;
	/* Every thread's: a lock holder's stack may pass through a probed function too. */
	if (cfg->flags & LT_PROBE_SHADOW_PUSH)
		shadow_push(ctx, tid);
	if (cfg->flags & LT_PROBE_SHADOW_POP)
		shadow_pop(ctx, tid);
	if (cfg->flags & LT_PROBE_SHADOW_ONLY)
		return 0;
	if (!(cfg->flags & LT_PROBE_ALL_THREADS)) {
		if (thread_filter == LT_THREADS_MAIN && tid != target_tgid) {
			count(LT_STAT_OTHER_THREAD);
			return 0;
		}
		if (thread_filter == LT_THREADS_LOOP) {
			__u32 loop = *(volatile __u64 *)&loop_tid;

			/* Before the loop thread is known, only a claiming hit from a thread with the
			 * right name goes on (its conditions decide below). */
			if (loop ? loop != tid : !(cfg->flags & LT_PROBE_CLAIMS_LOOP) || !name_may_claim()) {
				count(LT_STAT_OTHER_THREAD);
				return 0;
			}
			claim = !loop;
		}
	}
	if (cfg->npredicates) {
#pragma unroll
		for (i = 0; i < LT_MAX_PREDICATES; i++) {
			if (i >= cfg->npredicates)
				break;
			if (!condition_holds(ctx, &cfg->predicates[i], ((probe_id << 8) | i) + 1, usdt)) {
				count(LT_STAT_PREDICATE_REJECTED);
				return 0;
			}
		}
	}
	/* Two threads may race to claim: the first wins, the other is filtered out. */
	if (claim && __sync_val_compare_and_swap(&loop_tid, 0, (__u64)tid) != 0 && *(volatile __u64 *)&loop_tid != tid) {
		count(LT_STAT_OTHER_THREAD);
		return 0;
	}
	if (!switch_stacks_idle && tid == looper_tid())
		loop_message_state(cfg->role);
	if (cfg->nargs)
		read_args(ctx, cfg, &values, usdt);
	if (cfg->flags & LT_PROBE_COMM)
		bpf_get_current_comm(&values.v[LT_COMM_ARG_SLOT], 2 * sizeof(__u64));
	if (cfg->flags & LT_PROBE_BEAT) {
		__u64 id = values.v[0];

		if (cfg->flags & LT_PROBE_IDENTITY)
			id = identity_of(probe_id, cfg->nargs, values.v);
		else if (!cfg->nargs)
			id = probe_id;
		write_beat(probe_id, cfg->enter, tid, id);
		return 0;
	}
	rec = claim_record(&index);
	if (!rec)
		return 0;
	task = bpf_get_current_task_btf();
	now = bpf_ktime_get_ns();
	rec->ts_ns = now;
	rec->tid = tid;
	rec->type = LT_RECORD_PROBE;
	rec->probe_id = probe_id;
	rec->probe.role = cfg->role;
	rec->probe.sp = (__u32)PT_REGS_SP(ctx);
	rec->probe.beat_index = beat_head;
	rec->probe.thread_cpu_ns = thread_cpu_at(task, tid, now);
#pragma unroll
	for (i = 0; i < LT_MAX_ARGS; i++)
		rec->probe.args[i] = values.v[i];
	publish_record(rec, index);
	return 0;
}

/* Attached per probe point through a perf event (fallback, and USDT-less kernels). */
SEC("uprobe")
int lt_uprobe(struct pt_regs *ctx)
{
	return LT_TIMED(LT_PROG_UPROBE, on_hit(ctx, bpf_get_attach_cookie(ctx), 0));
}

/*
 * The same, loaded with the uprobe_multi attach type (kernel >= 6.6): one link for
 * all points of a binary, attached and detached in one step. libbpf 1.1 cannot
 * name the section, so the loader sets the attach type before load.
 */
SEC("uprobe")
int lt_uprobe_multi(struct pt_regs *ctx)
{
	return LT_TIMED(LT_PROG_UPROBE_MULTI, on_hit(ctx, bpf_get_attach_cookie(ctx), 0));
}

SEC("usdt")
int lt_usdt(struct pt_regs *ctx)
{
	return LT_TIMED(LT_PROG_USDT, on_hit(ctx, bpf_usdt_cookie(ctx), 1));
}

/*
 * Fast path for method beats whose identity is the first argument (id and address
 * hooks): no cookie, no configuration, nothing but the beat. About a third of the
 * generic path's added cost, which matters at a million beats per second.
 */
static __always_inline int fast_beat(struct pt_regs *ctx, __u8 kind)
{
	__u64 pid_tgid = bpf_get_current_pid_tgid();
	__u32 tid = (__u32)pid_tgid;
	struct lt_beat *beat;
	__u64 index;
	__u32 slot;

	if ((pid_tgid >> 32) != target_tgid)
		return 0;
	if (thread_filter != LT_THREADS_ALL) {
		if (tid != looper_tid())
			return 0;
		/* one writer (the main or loop thread): no locked instruction needed */
		index = beat_head;
		beat_head = index + 1;
	} else {
		index = __sync_fetch_and_add(&beat_head, 1);
	}
	slot = index & beat_mask;
	beat = bpf_map_lookup_elem(&beats, &slot);
	if (!beat)
		return 0;
	beat->ts_ns = bpf_ktime_get_ns();
	beat->id = PT_REGS_PARM1(ctx);
	beat->aux = 0;
	beat->tid = tid;
	beat->probe_id = LT_FAST_BEAT_PROBE;
	beat->kind = kind;
	return 0;
}

/* uprobe_multi programs (the loader sets the attach type), like lt_uprobe_multi. */
SEC("uprobe")
int lt_beat_enter(struct pt_regs *ctx)
{
	return LT_TIMED(LT_PROG_BEAT_ENTER, fast_beat(ctx, LT_BEAT_ENTER));
}

SEC("uprobe")
int lt_beat_exit(struct pt_regs *ctx)
{
	return LT_TIMED(LT_PROG_BEAT_EXIT, fast_beat(ctx, LT_BEAT_EXIT));
}

/* ---- thread state: sched_switch, sched_waking, cpu-clock samples, SIGQUIT ---- */

#define LT_STACK_DEPTH 127
#define LT_PF_EXITING 0x00000004

struct {
	__uint(type, BPF_MAP_TYPE_STACK_TRACE);
	__uint(max_entries, 16384);
	__uint(key_size, sizeof(__u32));
	__uint(value_size, LT_STACK_DEPTH * sizeof(__u64));
} stack_traces SEC(".maps");

struct {
	__uint(type, BPF_MAP_TYPE_HASH);
	__uint(max_entries, 4096);
	__type(key, __u32);
	__type(value, struct lt_thread_state);
} thread_states SEC(".maps");

/* --dwarf-unwind: copy this many stack bytes (0 = off). */
const volatile __u32 dwarf_stack_bytes = 0;
/* Stack samples for sampled call trees (--sample-rate > 0): one per cpu-clock sample of the
 * main thread and per switch-out of a watched thread. */
const volatile __u32 sample_records = 0;
/* Walk sampled user stacks with the rows when the loader has published them (0: the
 * kernel's frame-pointer walk, --fp-unwind). */
const volatile __u32 eh_unwind = 0;
/* looptrace run: no samples until the held child exec()s the command (before, it is a
 * copy of looptrace). */
const volatile __u32 samples_after_exec = 0;
__u32 exec_done;

/* Stack samples (lt_sample_record, lt_stack_copy): their own ring, so a burst of samples
 * never costs a string or an identity. */
struct {
	__uint(type, BPF_MAP_TYPE_RINGBUF);
	__uint(max_entries, 4 << 20); /* resized by the loader */
} samples SEC(".maps");

/* 0: every sample wakes the loader (while a program starts, its drains publish the unwind
 * rows of the libraries it maps: a drain sooner is whole stacks sooner); 1: see below. */
__u32 samples_batched;

/*
 * Once the program runs, the loader drains the sample ring at every poll (25 ms), as it does
 * the record ring: a sample wakes it only once the ring is half full, not at every sample (a
 * wake-up each is a context switch on the target's CPUs and a drain of a few records,
 * thousands a second on a busy server).
 */
static __always_inline __u64 sample_wakeup(void)
{
	if (!*(volatile __u32 *)&samples_batched)
		return 0;
	return bpf_ringbuf_query(&samples, BPF_RB_AVAIL_DATA) >= bpf_ringbuf_query(&samples, BPF_RB_RING_SIZE) / 2 ?
		       BPF_RB_FORCE_WAKEUP :
		       BPF_RB_NO_WAKEUP;
}

/* Every watched thread's latest copy (switch-out, or sample): for stall snapshots. */
struct {
	__uint(type, BPF_MAP_TYPE_LRU_HASH);
	__uint(max_entries, 64);
	__type(key, __u32);
	__type(value, struct lt_stack_copy);
} stack_copies SEC(".maps");

struct {
	__uint(type, BPF_MAP_TYPE_PERCPU_ARRAY);
	__uint(max_entries, 1);
	__type(key, __u32);
	__type(value, struct lt_stack_copy);
} stack_scratch SEC(".maps");

struct {
	__uint(type, BPF_MAP_TYPE_PERCPU_ARRAY);
	__uint(max_entries, 1);
	__type(key, __u32);
	__type(value, struct lt_sample_record);
} sample_scratch SEC(".maps");

/* ---- interpreter stacks: CPython (loader/runtimes/python/) ---- */

/* Thread id -> its PyThreadState (checked at every use: the thread's fs base must match). */
struct {
	__uint(type, BPF_MAP_TYPE_LRU_HASH);
	__uint(max_entries, 1024);
	__type(key, __u32);
	__type(value, __u64);
} py_thread_states SEC(".maps");

struct {
	__uint(type, BPF_MAP_TYPE_PERCPU_ARRAY);
	__uint(max_entries, 1);
	__type(key, __u32);
	__type(value, struct lt_interp_stack);
} interp_scratch SEC(".maps");

struct py_thread_search {
	__u64 fs_base;
	__u64 tstate;
	__u64 found;
};

static long py_thread_step(__u32 i, struct py_thread_search *search)
{
	if (!search->tstate)
		return 1;
	if (read_user_u64(search->tstate + py_layout.tstate_thread_id) == search->fs_base) {
		search->found = search->tstate;
		return 1;
	}
	search->tstate = read_user_u64(search->tstate + py_layout.tstate_next);
	return 0;
}

/*
 * The thread state of the current thread: its pthread_t (thread_id) is its fs base. Cached
 * per tid and checked again at each use, so a thread state freed or reused is not followed.
 */
static __noinline __u64 py_thread_state(struct task_struct *task, __u32 tid)
{
	struct py_thread_search search = {};
	__u64 *cached;

	if (!task)
		return 0;
	search.fs_base = BPF_CORE_READ(task, thread.fsbase);
	cached = bpf_map_lookup_elem(&py_thread_states, &tid);
	if (cached && *cached && read_user_u64(*cached + py_layout.tstate_thread_id) == search.fs_base)
		return *cached;
	search.tstate = read_user_u64(read_user_u64(*(volatile __u64 *)&py_addresses.interp_head) +
				      py_layout.interp_tstate_head);
	bpf_loop(256, py_thread_step, &search, 0);
	if (search.found)
		bpf_map_update_elem(&py_thread_states, &tid, &search.found, BPF_ANY);
	return search.found;
}

struct py_frame_walk {
	struct lt_interp_stack *stack;
	__u64 frame;
	__u32 n;
};

#define LT_PY_FRAME_OWNED_BY_CSTACK 3
/* Bytes read at a code object's start (ob_type at 8, co_firstlineno at 40-96 from 2.7 to
 * 3.13): no code object is smaller (2.7's basic size; 144-200 bytes from 3.6 to 3.13). */
#define LT_PY_CODE_HEAD 128

/* One frame of the chain: a bpf_loop callback, verified once whatever the chain's length. */
static long py_frame_step(__u32 i, struct py_frame_walk *walk)
{
	__u8 frame[LT_PY_FRAME_BYTES];
	__u64 head[LT_PY_CODE_HEAD / 8];
	struct lt_interp_stack *stack = walk->stack;
	__u64 code, code_type = 0, instr;
	__u32 offset, entry = 0, fingerprint;

	if (!walk->frame || !stack)
		return 1;
	if (bpf_probe_read_user(frame, sizeof(frame), (const void *)walk->frame)) {
		stack->flags |= LT_INTERP_READ_FAILED;
		return 1;
	}
	walk->frame = *(__u64 *)(frame + (py_layout.frame_back & (LT_PY_FRAME_BYTES - 8)));
	code = *(__u64 *)(frame + (py_layout.frame_code & (LT_PY_FRAME_BYTES - 8)));
	if (py_layout.frame_owner != LT_PY_NONE &&
	    frame[py_layout.frame_owner & (LT_PY_FRAME_BYTES - 1)] == LT_PY_FRAME_OWNED_BY_CSTACK) {
		/* an entry shim (3.12+): the frame before it was the outermost of its C call */
		if (walk->n > 0)
			stack->frames[(walk->n - 1) & (LT_MAX_INTERP_FRAMES - 1)].offset |= LT_INTERP_ENTRY;
		return 0;
	}
	if (py_layout.frame_is_entry != LT_PY_NONE)
		entry = frame[py_layout.frame_is_entry & (LT_PY_FRAME_BYTES - 1)];
	/* the code object's type and fingerprint in one read where both lie in its head
	 * (every CPython's code object is larger than it): a read costs ~60 ns */
	if (py_layout.code_fingerprint + 4 <= LT_PY_CODE_HEAD) {
		if (bpf_probe_read_user(head, sizeof(head), (const void *)code))
			head[1] = 0;
		code_type = head[1];
		fingerprint = *(__u32 *)((__u8 *)head + (py_layout.code_fingerprint & (LT_PY_CODE_HEAD - 4)));
	} else {
		bpf_probe_read_user(&code_type, sizeof(code_type), (const void *)(code + 8));
		fingerprint = (__u32)read_user_u64(code + py_layout.code_fingerprint);
	}
	if (!code_type || code_type != py_code_type()) {
		stack->flags |= LT_INTERP_BAD_CODE;
		return 1;
	}
	if (walk->n >= LT_MAX_INTERP_FRAMES) {
		stack->flags |= LT_INTERP_TRUNCATED;
		return 1;
	}
	if (py_layout.frame_model == LT_PY_FRAME_OBJECTS) {
		__s32 lasti = *(__s32 *)(frame + (py_layout.frame_instr & (LT_PY_FRAME_BYTES - 4)));

		/* -1: not started yet */
		offset = lasti < 0 ? 0 : (__u32)lasti << (py_layout.lasti_in_units ? 1 : 0);
	} else {
		instr = *(__u64 *)(frame + (py_layout.frame_instr & (LT_PY_FRAME_BYTES - 8)));
		offset = instr > code + py_layout.code_adaptive ? (__u32)((instr - code - py_layout.code_adaptive) / 2) : 0;
	}
	stack->frames[walk->n & (LT_MAX_INTERP_FRAMES - 1)].code = code;
	stack->frames[walk->n & (LT_MAX_INTERP_FRAMES - 1)].offset = (offset & LT_INTERP_NO_OFFSET) | (entry ? LT_INTERP_ENTRY : 0);
	stack->frames[walk->n & (LT_MAX_INTERP_FRAMES - 1)].fingerprint = fingerprint;
	walk->n++;
	return 0;
}

/* An interpreter stack record of its first `n` frames, to the sample ring (events.h). */
static __always_inline int send_interp_record(struct lt_interp_stack *stack, __u32 n)
{
	__u32 size;

	if (n > LT_MAX_INTERP_FRAMES)
		n = LT_MAX_INTERP_FRAMES;
	stack->nr_frames = n;
	size = __builtin_offsetof(struct lt_interp_stack, frames) + n * sizeof(struct lt_interp_frame);
	if (size > sizeof(*stack))
		size = sizeof(*stack);
	stack->header.size = size;
	if (bpf_ringbuf_output(&samples, stack, size, sample_wakeup()))
		count(LT_STAT_INTERP_STACKS_DROPPED);
	return 0;
}

/* The current thread's Python frames, to the sample ring before its sample (events.h). */
static __noinline int send_interp_stack(struct task_struct *task, __u32 tid, __u64 now)
{
	struct py_frame_walk walk = {};
	struct lt_interp_stack *stack;
	__u32 zero = 0;
	__u64 tstate;

	if (!py_code_type())
		return 0; /* the loader has not located the interpreter yet */
	stack = bpf_map_lookup_elem(&interp_scratch, &zero);
	if (!stack)
		return 0;
	stack->header.type = LT_RECORD_INTERP_STACK;
	stack->ts_ns = now;
	stack->tid = tid;
	stack->flags = 0;
	walk.stack = stack;
	tstate = py_thread_state(task, tid);
	if (!tstate) {
		stack->flags = LT_INTERP_NO_THREAD;
	} else {
		if (py_layout.frame_model == LT_PY_CFRAME)
			walk.frame = read_user_u64(read_user_u64(tstate + py_layout.tstate_frame) +
						   py_layout.cframe_current_frame);
		else
			walk.frame = read_user_u64(tstate + py_layout.tstate_frame);
		bpf_loop(LT_MAX_INTERP_FRAMES + 32, py_frame_step, &walk, 0);
	}
	return send_interp_record(stack, walk.n);
}

/* ---- interpreter stacks: HotSpot (loader/runtimes/jvm/) ---- */

/* The target is a HotSpot JVM (set before load): otherwise the verifier drops this walker. */
const volatile __u32 hs_enabled = 0;
/* Its layout and code ranges, published by the loader once the JVM runs (events.h). */
struct lt_hotspot_config hs_config = {};

struct hs_thread_entry {
	__u64 thread;     /* the JavaThread*, 0: not a Java thread */
	__u64 checked_ns; /* when a miss was last checked */
};

/* Thread id -> its JavaThread (checked at every use against the JavaThread's own tid). */
struct {
	__uint(type, BPF_MAP_TYPE_LRU_HASH);
	__uint(max_entries, 4096);
	__type(key, __u32);
	__type(value, struct hs_thread_entry);
} hs_threads SEC(".maps");

#define LT_HS_MISS_RECHECK_NS 1000000000ull /* a thread attached to the VM later is found */
#define LT_HS_MAX_THREADS 4096
#define LT_HS_MAX_HOPS 32

static __always_inline __u32 hs_thread_tid(__u64 thread)
{
	__s32 tid = 0;

	bpf_probe_read_user(&tid, sizeof(tid),
			    (const void *)(read_user_u64(thread + hs_config.thread_osthread) +
					   hs_config.osthread_thread_id));
	return tid > 0 ? (__u32)tid : 0;
}

struct hs_thread_search {
	__u64 threads;
	__u32 length;
	__u32 tid;
	__u64 found;
};

static long hs_thread_step(__u32 i, struct hs_thread_search *search)
{
	__u64 thread;

	if (i >= search->length)
		return 1;
	thread = read_user_u64(search->threads + (__u64)i * 8);
	if (thread && hs_thread_tid(thread) == search->tid) {
		search->found = thread;
		return 1;
	}
	return 0;
}

/* The JavaThread of `tid` through the VM's thread list; cached, checked at each use. */
static __noinline __u64 hs_java_thread(__u32 tid, __u64 now)
{
	struct hs_thread_search search = {};
	struct hs_thread_entry entry = {}, *cached;
	__u64 list;
	__u32 length = 0;

	cached = bpf_map_lookup_elem(&hs_threads, &tid);
	if (cached) {
		if (cached->thread && hs_thread_tid(cached->thread) == tid)
			return cached->thread;
		if (!cached->thread && now - cached->checked_ns < LT_HS_MISS_RECHECK_NS)
			return 0;
	}
	list = read_user_u64(hs_config.java_thread_list);
	bpf_probe_read_user(&length, sizeof(length), (const void *)(list + hs_config.threads_list_length));
	search.threads = read_user_u64(list + hs_config.threads_list_threads);
	search.length = length < LT_HS_MAX_THREADS ? length : LT_HS_MAX_THREADS;
	search.tid = tid;
	if (list && search.threads)
		bpf_loop(LT_HS_MAX_THREADS, hs_thread_step, &search, 0);
	entry.thread = search.found;
	entry.checked_ns = now;
	bpf_map_update_elem(&hs_threads, &tid, &entry, BPF_ANY);
	return search.found;
}

/* HotSpot's code cache (its interpreter, compiled methods, stubs): "[jit]" to the loader. */
static __always_inline int eh_in_hotspot_code(__u64 pc)
{
	int h;

	if (!hs_enabled)
		return 0;
#pragma unroll
	for (h = 0; h < LT_HS_MAX_HEAPS; h++) {
		if (h < hs_config.nr_heaps && pc >= hs_config.heaps[h].low && pc < hs_config.heaps[h].high)
			return 1;
	}
	return 0;
}

/* The CodeBlob holding `pc`: its heap's segment map says how many segments back it starts. */
static __always_inline __u64 hs_blob_at(__u64 pc)
{
	__u64 low = 0, segmap = 0, shift = 0, index;
	__u8 back = 0;
	int h, hop;

#pragma unroll
	for (h = 0; h < LT_HS_MAX_HEAPS; h++) {
		if (h < hs_config.nr_heaps && pc >= hs_config.heaps[h].low && pc < hs_config.heaps[h].high) {
			low = hs_config.heaps[h].low;
			segmap = hs_config.heaps[h].segmap;
			shift = hs_config.heaps[h].log2_segment & 31;
		}
	}
	if (!low)
		return 0;
	index = (pc - low) >> shift;
#pragma unroll
	for (hop = 0; hop < LT_HS_MAX_HOPS; hop++) {
		if (bpf_probe_read_user(&back, 1, (const void *)(segmap + index)) || back == 0xff)
			return 0; /* unreadable, or a free block */
		if (back == 0)
			return low + (index << shift) + hs_config.heap_block_size;
		if (back > index)
			return 0;
		index -= back;
	}
	return 0;
}

struct hs_frame_walk {
	struct lt_interp_stack *stack;
	__u64 pc;
	__u64 sp;
	__u64 fp;
	__u32 n;
};

static __always_inline void hs_push(struct hs_frame_walk *walk, __u64 code, __u32 offset, __u32 fingerprint)
{
	struct lt_interp_stack *stack = walk->stack;

	if (walk->n >= LT_MAX_INTERP_FRAMES) {
		stack->flags |= LT_INTERP_TRUNCATED;
		return;
	}
	stack->frames[walk->n & (LT_MAX_INTERP_FRAMES - 1)].code = code;
	stack->frames[walk->n & (LT_MAX_INTERP_FRAMES - 1)].offset = offset & LT_INTERP_NO_OFFSET;
	stack->frames[walk->n & (LT_MAX_INTERP_FRAMES - 1)].fingerprint = fingerprint;
	walk->n++;
}

/* eh_in_hotspot_code verified once (a global function): the frame walk's callback stays small. */
__noinline int hs_code_contains(__u64 pc)
{
	return eh_in_hotspot_code(pc);
}

/*
 * Over a code blob without a frame size. StubRoutines' stubs (the intrinsics Java calls:
 * SHA, AES, CRC32, array copies and fills) set up rbp as a frame pointer on entry, so their
 * caller's pc is at fp + 8; in their first and last instructions (no frame yet or any more)
 * and in other frameless blobs (vtable stubs jump on) it is at sp. Taken only when it lies in
 * HotSpot's code: a stub's caller is Java code. A StubRoutines stub is a frame of its own
 * (LT_HS_STUB), named by the loader.
 */
static __noinline long hs_step_frameless(struct hs_frame_walk *walk, int frame_pointer_stub)
{
	__u64 sp = walk->sp, fp = walk->fp, ret;

	if (frame_pointer_stub)
		hs_push(walk, walk->pc, LT_HS_COMPILED | LT_HS_STUB, 0);
	if (frame_pointer_stub && fp >= sp && fp - sp < (1 << 16)) {
		ret = read_user_u64(fp + 8);
		if (hs_code_contains(ret)) {
			walk->pc = ret;
			walk->sp = fp + 16;
			walk->fp = read_user_u64(fp);
			return 0;
		}
	}
	ret = read_user_u64(sp);
	if (sp && hs_code_contains(ret)) {
		walk->pc = ret;
		walk->sp = sp + 8;
		return 0;
	}
	walk->stack->flags |= LT_INTERP_READ_FAILED;
	return 1;
}

/*
 * Out of a frame sampled in its prologue or epilogue, from its stack pointer `sp`: the
 * return address is at sp before the frame pointer is pushed and after it is popped, at
 * sp + 8 while only it is on the stack (HotSpot's x86-64 prologue: push rbp, then sub rsp).
 */
static __noinline long hs_step_unbuilt(struct hs_frame_walk *walk, __u64 sp)
{
	__u64 ret = read_user_u64(sp);

	if (hs_code_contains(ret)) {
		walk->pc = ret;
		walk->sp = sp + 8;
		return 0;
	}
	ret = read_user_u64(sp + 8);
	if (hs_code_contains(ret)) {
		walk->pc = ret;
		walk->sp = sp + 16;
		walk->fp = read_user_u64(sp);
		return 0;
	}
	walk->stack->flags |= LT_INTERP_READ_FAILED;
	return 1;
}

/*
 * One Java frame: interpreted ones keep their Method* and bcp in slots below fp; compiled
 * ones (an nmethod in the code cache) are unwound by their frame size; other code-cache
 * blobs (adapters, runtime stubs) are stepped over the same way, unnamed, or by
 * hs_step_frameless when they have none (StubRoutines' stubs keep a frame there). The walk
 * ends at the call stub (the VM called into Java there) or at code that is not Java's.
 */
static long hs_frame_step(__u32 i, struct hs_frame_walk *walk)
{
	__u64 pc = walk->pc, fp = walk->fp, blob, method, const_method, bcp, codes, name;
	__s32 frame_size = 0;
	char kind[8] = {};

	if (!walk->stack)
		return 1;
	if (pc && pc == hs_config.call_stub_return) {
		walk->stack->flags |= LT_INTERP_AT_ENTRY; /* every Java frame of the thread walked */
		return 1;
	}
	if (!pc || walk->n >= LT_MAX_INTERP_FRAMES)
		return 1;
	if (pc >= hs_config.interpreter_begin && pc < hs_config.interpreter_end) {
		method = read_user_u64(fp + (__s64)hs_config.frame_method * 8);
		bcp = read_user_u64(fp + (__s64)hs_config.frame_bcp * 8);
		const_method = read_user_u64(method + hs_config.method_const);
		codes = const_method + hs_config.const_method_size;
		hs_push(walk, method, bcp >= codes && bcp - codes < 0x10000 ? (__u32)(bcp - codes) : LT_INTERP_NO_OFFSET,
			(__u32)const_method);
		walk->sp = read_user_u64(fp + (__s64)hs_config.frame_sender_sp * 8);
		walk->pc = read_user_u64(fp + 8);
		walk->fp = read_user_u64(fp);
		return 0;
	}
	blob = hs_blob_at(pc);
	if (!blob)
		return 1;
	bpf_probe_read_user(&frame_size, sizeof(frame_size), (const void *)(blob + hs_config.blob_frame_size));
	name = read_user_u64(blob + hs_config.blob_name);
	bpf_probe_read_user(kind, sizeof(kind), (const void *)name);
	if (frame_size == 0)
		return hs_step_frameless(walk, kind[0] == 'S' && kind[4] == 'R'); /* "StubRoutines (2)" */
	if (frame_size < 0 || frame_size > (1 << 20)) {
		walk->stack->flags |= LT_INTERP_READ_FAILED;
		return 1;
	}
	/* "nmethod", or "native nmethod" (a native method's compiled wrapper) */
	if ((kind[0] == 'n' && kind[1] == 'm' && kind[2] == 'e' && kind[7] == 0) ||
	    (kind[0] == 'n' && kind[1] == 'a' && kind[6] == ' ' && kind[7] == 'n')) {
		__u32 compile_id = 0;

		if (hs_config.nmethod_compile_id && pc - blob <= LT_HS_PC_OFFSET &&
		    !bpf_probe_read_user(&compile_id, sizeof(compile_id),
					 (const void *)(blob + hs_config.nmethod_compile_id))) {
			hs_push(walk, blob, LT_HS_COMPILED | (__u32)(pc - blob), compile_id);
		} else {
			method = read_user_u64(blob + hs_config.nmethod_method);
			hs_push(walk, method, LT_INTERP_NO_OFFSET, (__u32)read_user_u64(method + hs_config.method_const));
		}
	}
	walk->sp += (__u64)frame_size * 8;
	walk->pc = read_user_u64(walk->sp - 8);
	walk->fp = read_user_u64(walk->sp - 16);
	/* A compiled method is called from Java code or the call stub: anything else means the
	 * sampled pc was in its prologue or epilogue, its frame not (or no longer) built. */
	if (i == 0 && !hs_code_contains(walk->pc))
		return hs_step_unbuilt(walk, walk->sp - (__u64)frame_size * 8);
	return 0;
}

/*
 * Where the Java walk of a sample starts. A thread whose state says it runs Java code may be
 * in a VM leaf call (SharedRuntime::drem -> fmod, d2l, ...): Java code calls those without a
 * state transition and without setting the frame anchor, so its pc is outside HotSpot's code.
 * Then the native walk of the sample finds the first Java frame (where it enters the code
 * cache) and the Java walk starts there, sent before the sample as always (send_sample).
 */
struct hs_start {
	__u64 pc;
	__u64 sp;
	__u64 fp;
	__u64 ts_ns; /* the sample whose Java walk waits for its native walk; 0: none waits */
	__u32 tid;
	__u32 flags; /* LT_INTERP_* of the record */
};

struct {
	__uint(type, BPF_MAP_TYPE_PERCPU_ARRAY);
	__uint(max_entries, 1);
	__type(key, __u32);
	__type(value, struct hs_start);
} hs_starts SEC(".maps");

/* Walks the Java frames from `start` and sends them, the record of sample (tid, now). */
static __noinline int hs_send_stack(struct hs_start *start, __u32 tid, __u64 now)
{
	struct hs_frame_walk walk = {};
	struct lt_interp_stack *stack;
	__u32 zero = 0;

	stack = bpf_map_lookup_elem(&interp_scratch, &zero);
	if (!stack)
		return 0;
	stack->header.type = LT_RECORD_INTERP_STACK;
	stack->ts_ns = now;
	stack->tid = tid;
	stack->flags = (__u16)start->flags;
	walk.stack = stack;
	walk.pc = start->pc;
	walk.sp = start->sp;
	walk.fp = start->fp;
	start->ts_ns = 0;
	bpf_loop(LT_MAX_INTERP_FRAMES + 32, hs_frame_step, &walk, 0);
	return send_interp_record(stack, walk.n);
}

/*
 * The current thread's Java frames, to the sample ring before its sample (events.h): from
 * the registers while it runs Java code, else from its last Java frame anchor (set while
 * it is in the VM or in native code). In a VM leaf call, from where the sample's native
 * walk enters HotSpot's code (struct hs_start): sent by send_sample after that walk.
 */
static __noinline int send_hotspot_stack(struct task_struct *task, __u32 tid, __u64 now)
{
	struct hs_start *start;
	struct pt_regs *regs;
	__u32 zero = 0, state = 0;
	__u64 thread, anchor;

	if (!*(volatile __u64 *)&hs_config.ready)
		return 0; /* the loader has not read the JVM's layout yet */
	start = bpf_map_lookup_elem(&hs_starts, &zero);
	if (!start)
		return 0;
	start->pc = start->sp = start->fp = 0;
	start->ts_ns = 0;
	start->flags = 0;
	thread = hs_java_thread(tid, now);
	if (!thread) {
		start->flags = LT_INTERP_NO_THREAD;
	} else {
		bpf_probe_read_user(&state, sizeof(state), (const void *)(thread + hs_config.thread_state));
		if (state == hs_config.in_java) {
			regs = (struct pt_regs *)bpf_task_pt_regs(task);
			if (regs) {
				start->pc = BPF_CORE_READ(regs, ip);
				start->sp = BPF_CORE_READ(regs, sp);
				start->fp = BPF_CORE_READ(regs, bp);
			}
			/* the sample's walk from .eh_frame rows comes next (take_sample, send_sample) */
			if (eh_unwind && !dwarf_stack_bytes && start->pc && !eh_in_hotspot_code(start->pc)) {
				start->pc = 0;
				start->ts_ns = now;
				start->tid = tid;
				return 0;
			}
		} else {
			anchor = thread + hs_config.thread_anchor;
			start->sp = read_user_u64(anchor + hs_config.anchor_sp);
			start->pc = read_user_u64(anchor + hs_config.anchor_pc);
			start->fp = read_user_u64(anchor + hs_config.anchor_fp);
			if (start->sp && !start->pc)
				start->pc = read_user_u64(start->sp - 8);
		}
	}
	return hs_send_stack(start, tid, now);
}

/*
 * The first Java frame of a VM leaf call when no walk from rows found it (none published
 * yet early in a session, or the walk failed): the return address at sp of a leaf without a
 * frame (libm's fmod, tail-called by SharedRuntime::drem), else one along the frame-pointer
 * chain libjvm keeps. A guess, taken only where it lies in HotSpot's code.
 */
static __always_inline void hs_guess_start(struct hs_start *start, __u64 sp, __u64 bp)
{
	__u64 ret = read_user_u64(sp);
	int hop;

	if (eh_in_hotspot_code(ret)) {
		start->pc = ret;
		start->sp = sp + 8;
		start->fp = bp;
		return;
	}
#pragma unroll
	for (hop = 0; hop < 4; hop++) {
		if (bp <= sp || bp - sp > (1 << 20))
			return;
		ret = read_user_u64(bp + 8);
		sp = bp + 16;
		bp = read_user_u64(bp);
		if (eh_in_hotspot_code(ret)) {
			start->pc = ret;
			start->sp = sp;
			start->fp = bp;
			return;
		}
	}
}

/* The Java walk of sample (tid, now) waiting for its native walk (struct hs_start), or 0. */
static __always_inline struct hs_start *hs_waiting_start(__u32 tid, __u64 now)
{
	struct hs_start *start;
	__u32 zero = 0;

	if (!hs_enabled)
		return 0;
	start = bpf_map_lookup_elem(&hs_starts, &zero);
	return start && start->ts_ns == now && start->tid == tid ? start : 0;
}

/* ---- interpreter stacks: V8 (loader/runtimes/node/) ---- */

/* V8's layout in the target (events.h); enabled 0: not a Node, or its metadata did not fit. */
const volatile struct lt_v8_layout v8_layout = {};

#define LT_V8_MAX_WALK 128 /* frames followed along the frame-pointer chain, native ones included */
#define LT_V8_SLOTS 7      /* fp-40 .. fp+8: the slots a JavaScript frame is read by */
#define LT_V8_ENTRY_FRAME 1
#define LT_V8_CONSTRUCT_ENTRY_FRAME 2

/* The count of frames lives in the record (a map value), not here: read back as an unknown
 * number at each step, so the verifier need not tell one step's state from the next. */
struct v8_frame_walk {
	struct lt_interp_stack *stack;
	__u64 fp;
	__u64 sp;
};

/* The instance type of the heap object `tagged` (low bit 1), or 0. */
static __always_inline __u16 v8_type_of(__u64 tagged)
{
	__u64 map;
	__u16 type = 0;

	if ((tagged & 3) != 1)
		return 0;
	map = read_user_u64(tagged - 1);
	if ((map & 3) != 1)
		return 0;
	bpf_probe_read_user(&type, sizeof(type), (const void *)(map - 1 + v8_layout.map_instance_type));
	return type;
}

static __always_inline __u64 v8_slot(__u64 *slots, __s16 fp_offset)
{
	/* slots[0] is fp-40 */
	return slots[((__u32)(fp_offset + 40) >> 3) & 7];
}

/* One frame of the chain: a bpf_loop callback. A JavaScript frame holds a context (a heap
 * object) where typed frames hold their marker (type << 1), and its JSFunction next to it. */
static long v8_frame_step(__u32 i, struct v8_frame_walk *walk)
{
	struct lt_interp_stack *stack = walk->stack;
	__u64 slots[8] = {}, function, sfi, next, offset = LT_INTERP_NO_OFFSET, array, word;
	__u32 fingerprint = 0, n;
	__u16 type;

	if (!stack || !walk->fp || (walk->fp & 7) || walk->fp < walk->sp)
		return 1;
	if (bpf_probe_read_user(slots, LT_V8_SLOTS * 8, (const void *)(walk->fp - 40)))
		return 1; /* the chain left the stack: a native frame without a frame pointer */
	next = slots[5];
	n = stack->nr_frames;
	word = v8_slot(slots, v8_layout.fp_context);
	if ((word & 1) == 0) {
		/* a typed frame: an entry frame ends a run of JavaScript frames called from C++ */
		if ((word >> 1) == LT_V8_ENTRY_FRAME || (word >> 1) == LT_V8_CONSTRUCT_ENTRY_FRAME)
			if (n > 0)
				stack->frames[(n - 1) & (LT_MAX_INTERP_FRAMES - 1)].offset |= LT_INTERP_ENTRY;
		goto up;
	}
	function = v8_slot(slots, v8_layout.fp_function);
	type = v8_type_of(function);
	if (!type || type < v8_layout.type_function_first || type > v8_layout.type_function_last)
		goto up;
	sfi = read_user_u64(function - 1 + v8_layout.function_shared);
	if (v8_type_of(sfi) != v8_layout.type_sfi) {
		stack->flags |= LT_INTERP_BAD_CODE;
		goto up;
	}
	bpf_probe_read_user(&fingerprint, sizeof(fingerprint), (const void *)(sfi - 1 + v8_layout.sfi_fingerprint));
	/* Ignition: the frame holds its BytecodeArray and the offset in it (a Smi) */
	array = v8_slot(slots, v8_layout.fp_bytecode_array);
	word = v8_slot(slots, v8_layout.fp_bytecode_offset);
	if ((word & 1) == 0 && v8_type_of(array) == v8_layout.type_bytecode_array)
		offset = (word >> (v8_layout.smi_shift & 63)) & LT_INTERP_NO_OFFSET;
	if (n >= LT_MAX_INTERP_FRAMES) {
		stack->flags |= LT_INTERP_TRUNCATED;
		return 1;
	}
	stack->frames[n & (LT_MAX_INTERP_FRAMES - 1)].code = sfi;
	stack->frames[n & (LT_MAX_INTERP_FRAMES - 1)].offset = (__u32)offset;
	stack->frames[n & (LT_MAX_INTERP_FRAMES - 1)].fingerprint = fingerprint;
	stack->nr_frames = n + 1;
up:
	if (next <= walk->fp)
		return 1; /* frames grow down: the caller's frame pointer is above */
	walk->fp = next;
	return 0;
}

#define LT_V8_SCAN_WORDS 512 /* 4 KiB of stack above sp looked through for a saved frame pointer */

/* The stack words a scan looks through, read at once: one read of 4 KiB costs about what a
 * few reads of 8 bytes do, and most words are judged by the stack alone. */
struct v8_scan_words {
	__u64 word[LT_V8_SCAN_WORDS];
};

struct {
	__uint(type, BPF_MAP_TYPE_PERCPU_ARRAY);
	__uint(max_entries, 1);
	__type(key, __u32);
	__type(value, struct v8_scan_words);
} v8_scan_scratch SEC(".maps");

struct v8_frame_scan {
	struct v8_scan_words *words;
	__u64 sp;
	__u64 words_read; /* of words, from sp on */
	__u64 found;
};

/*
 * The word at `address` from the scan's copy; 0 outside it. Not read from the target: those
 * reads (~30 a scan on the Node http server, at words that only look like frame pointers) took
 * ~1 us each and three quarters of a sample's cost, and the share of scans that find a frame
 * was the same without them (~27%).
 */
static __always_inline __u64 v8_scan_read(struct v8_frame_scan *scan, __u64 address)
{
	__u64 index = (address - scan->sp) >> 3;

	if (scan->words && address >= scan->sp && !(address & 7) && index < scan->words_read)
		return scan->words->word[index & (LT_V8_SCAN_WORDS - 1)];
	return 0;
}

/*
 * Whether `fp` is a JavaScript frame's frame pointer: its caller's frame pointer above it, a
 * context and a JSFunction next to it. The stack's own words rule out nearly every candidate:
 * the heap is read only for the function's type.
 */
static __always_inline int v8_scan_js_frame(struct v8_frame_scan *scan, __u64 fp)
{
	__u64 caller, function;
	__u16 type;

	if (fp & 7)
		return 0;
	caller = v8_scan_read(scan, fp);
	if (caller <= fp || caller - fp > (1 << 20) || (caller & 7))
		return 0;
	if (!(v8_scan_read(scan, fp + v8_layout.fp_context) & 1))
		return 0;
	function = v8_scan_read(scan, fp + v8_layout.fp_function);
	if ((function & 3) != 1)
		return 0;
	type = v8_type_of(function);
	return type && type >= v8_layout.type_function_first && type <= v8_layout.type_function_last;
}

/*
 * A switch-out in a C library function that uses rbp as a scratch register (glibc's futex
 * wait under Atomics.wait) leaves no chain to follow from the registers: the first word above
 * sp that a callee saved as rbp and that points to a JavaScript frame (or to the frame of
 * V8's C++ call out of one) resumes it.
 */
static long v8_scan_step(__u32 i, struct v8_frame_scan *scan)
{
	__u64 at = scan->sp + 8 * (__u64)i, word;

	if (!scan->words || i >= scan->words_read)
		return 1;
	word = scan->words->word[i & (LT_V8_SCAN_WORDS - 1)];
	if ((word & 7) || word <= at || word - at > (1 << 20))
		return 0;
	if (v8_scan_js_frame(scan, word) || v8_scan_js_frame(scan, v8_scan_read(scan, word))) {
		scan->found = word;
		return 1;
	}
	return 0;
}

/* The scan's words: 4 KiB above sp, less where the stack ends sooner (a read past its end
 * fails whole). */
static __always_inline void v8_scan_copy(struct v8_frame_scan *scan)
{
	const void *sp = (const void *)scan->sp;

	if (bpf_probe_read_user(scan->words, LT_V8_SCAN_WORDS * 8, sp) == 0)
		scan->words_read = LT_V8_SCAN_WORDS;
	else if (bpf_probe_read_user(scan->words, LT_V8_SCAN_WORDS * 4, sp) == 0)
		scan->words_read = LT_V8_SCAN_WORDS / 2;
	else if (bpf_probe_read_user(scan->words, LT_V8_SCAN_WORDS * 2, sp) == 0)
		scan->words_read = LT_V8_SCAN_WORDS / 4;
	else if (bpf_probe_read_user(scan->words, LT_V8_SCAN_WORDS, sp) == 0)
		scan->words_read = LT_V8_SCAN_WORDS / 8;
}

/* The current thread's JavaScript frames, to the sample ring before its sample (events.h). */
static __noinline int send_v8_stack(struct task_struct *task, __u32 tid, __u64 now)
{
	struct v8_frame_walk walk = {};
	struct lt_interp_stack *stack;
	struct pt_regs *regs;
	__u32 zero = 0;

	stack = bpf_map_lookup_elem(&interp_scratch, &zero);
	if (!stack || !task)
		return 0;
	regs = (struct pt_regs *)bpf_task_pt_regs(task);
	if (!regs)
		return 0;
	stack->header.type = LT_RECORD_INTERP_STACK;
	stack->ts_ns = now;
	stack->tid = tid;
	stack->flags = 0;
	stack->nr_frames = 0;
	walk.stack = stack;
	walk.fp = BPF_CORE_READ(regs, bp);
	walk.sp = BPF_CORE_READ(regs, sp);
	bpf_loop(LT_V8_MAX_WALK, v8_frame_step, &walk, 0);
	if (!stack->nr_frames) {
		struct v8_frame_scan scan = { .sp = walk.sp, .words = bpf_map_lookup_elem(&v8_scan_scratch, &zero) };

		if (scan.words)
			v8_scan_copy(&scan);
		bpf_loop(LT_V8_SCAN_WORDS, v8_scan_step, &scan, 0);
		if (scan.found) {
			walk.fp = scan.found;
			bpf_loop(LT_V8_MAX_WALK, v8_frame_step, &walk, 0);
		}
	}
	if (stack->nr_frames == 0)
		stack->flags |= LT_INTERP_NO_THREAD;
	return send_interp_record(stack, stack->nr_frames);
}

/* min(size, LT_MAX_STACK_COPY), in the register the verifier sees used afterwards. */
static __always_inline __u64 clamp_copy(__u64 size)
{
	asm volatile("if %[s] <= %[max] goto +1\n\t%[s] = %[max]" : [s] "+r"(size) : [max] "i"(LT_MAX_STACK_COPY));
	return size;
}

/* As much as the stack mapping holds above sp, up to 16 KiB: a read that crosses the top
 * of the stack fails, so try shrinking sizes. */
static __always_inline void copy_shrinking(struct lt_stack_copy *copy, __u64 sp)
{
	if (bpf_probe_read_user(copy->bytes, LT_MAX_STACK_COPY, (const void *)sp) == 0)
		copy->size = LT_MAX_STACK_COPY;
	else if (bpf_probe_read_user(copy->bytes, 12288, (const void *)sp) == 0)
		copy->size = 12288;
	else if (bpf_probe_read_user(copy->bytes, 8192, (const void *)sp) == 0)
		copy->size = 8192;
	else if (bpf_probe_read_user(copy->bytes, 6144, (const void *)sp) == 0)
		copy->size = 6144;
	else if (bpf_probe_read_user(copy->bytes, 4096, (const void *)sp) == 0)
		copy->size = 4096;
	else if (bpf_probe_read_user(copy->bytes, 3072, (const void *)sp) == 0)
		copy->size = 3072;
	else if (bpf_probe_read_user(copy->bytes, 2048, (const void *)sp) == 0)
		copy->size = 2048;
	else if (bpf_probe_read_user(copy->bytes, 1024, (const void *)sp) == 0)
		copy->size = 1024;
}

/*
 * A thread caught inside the uprobes' own page (its xol area) is in no module: its registers
 * say where the kernel put it, not where its code is, and a walk from there ends at once. At
 * the uretprobe trampoline (the page's first slot: its int3, or its uretprobe syscall after
 * three pushes) it is returning from the innermost pending uretprobe: that return's address
 * and stack are its frame. In another slot it single-steps a probed instruction copied there:
 * the probed address is its frame. `page`: the xol area's address, 0 if none.
 */
static __always_inline void leaf_out_of_xol(struct task_struct *task, __u64 page, __u64 *pc, __u64 *sp)
{
	struct return_instance *ri;
	__u64 slot, xol;

	if (!page || *pc < page || *pc - page >= 4096)
		return;
	if (*pc - page < 128) {
		ri = BPF_CORE_READ(task, utask, return_instances);
		if (!ri)
			return;
		slot = BPF_CORE_READ(ri, stack);
		if (slot + 8 < *sp || slot > *sp + 16)
			return;
		*pc = BPF_CORE_READ(ri, orig_ret_vaddr);
		*sp = slot + 8;
		return;
	}
	xol = BPF_CORE_READ(task, utask, xol_vaddr);
	if (xol && *pc >= xol && *pc - xol < 128)
		*pc = BPF_CORE_READ(task, utask, vaddr);
}

struct pending_fill {
	struct return_instance *ri;
	struct lt_stack_copy *copy;
};

/* One pending uretprobe return of the kernel's list into the copy's shadow frames. */
static long pending_fill_step(__u32 i, struct pending_fill *f)
{
	struct return_instance *ri = f->ri; /* a local: CO-RE relocates the kernel's fields only */
	__u32 n = f->copy->nr_shadow;

	if (!ri || n >= LT_MAX_SHADOW)
		return 1;
	f->copy->shadow[n].slot = BPF_CORE_READ(ri, stack);
	f->copy->shadow[n].ret = BPF_CORE_READ(ri, orig_ret_vaddr);
	f->copy->nr_shadow = n + 1;
	f->ri = BPF_CORE_READ(ri, next);
	return 0;
}

/*
 * Copies the user registers and the top of the user stack of `task` (which is current) and,
 * for a sample, sends it. With --dwarf-unwind (`walk_failed` 0) it is kept as the thread's
 * latest copy, and the return addresses uretprobes replaced come from the loader's shadow
 * stack; for a sample whose BPF walk met a library without rows yet (`walk_failed`), from the
 * kernel's own list of pending returns, as that walk takes them.
 */
static __always_inline void copy_user_stack(struct task_struct *task, __u32 tid, __u64 now, __u16 kind,
					    __u32 state, int send, int walk_failed)
{
	struct lt_stack_copy *copy;
	struct pt_regs *regs;
	__u32 zero = 0;
	__u64 sp, top = 0, size;

	copy = bpf_map_lookup_elem(&stack_scratch, &zero);
	if (!copy)
		return;
	regs = (struct pt_regs *)bpf_task_pt_regs(task);
	if (!regs)
		return;
	copy->header.type = LT_RECORD_SAMPLE_COPY;
	copy->ts_ns = now;
	copy->tid = tid;
	copy->kind = kind;
	copy->state = state;
	copy->regs[0] = BPF_CORE_READ(regs, ax);
	copy->regs[1] = BPF_CORE_READ(regs, dx);
	copy->regs[2] = BPF_CORE_READ(regs, cx);
	copy->regs[3] = BPF_CORE_READ(regs, bx);
	copy->regs[4] = BPF_CORE_READ(regs, si);
	copy->regs[5] = BPF_CORE_READ(regs, di);
	copy->regs[6] = BPF_CORE_READ(regs, bp);
	copy->regs[7] = BPF_CORE_READ(regs, sp);
	copy->regs[8] = BPF_CORE_READ(regs, r8);
	copy->regs[9] = BPF_CORE_READ(regs, r9);
	copy->regs[10] = BPF_CORE_READ(regs, r10);
	copy->regs[11] = BPF_CORE_READ(regs, r11);
	copy->regs[12] = BPF_CORE_READ(regs, r12);
	copy->regs[13] = BPF_CORE_READ(regs, r13);
	copy->regs[14] = BPF_CORE_READ(regs, r14);
	copy->regs[15] = BPF_CORE_READ(regs, r15);
	copy->regs[16] = BPF_CORE_READ(regs, ip);
	copy->valid_mask = (1u << LT_UNWIND_REGS) - 1;
	leaf_out_of_xol(task, BPF_CORE_READ(task, mm, uprobes_state.xol_area, vaddr), &copy->regs[16], &copy->regs[7]);
	sp = copy->regs[7];
	if (walk_failed) {
		struct pending_fill fill = { .ri = BPF_CORE_READ(task, utask, return_instances), .copy = copy };

		copy->nr_shadow = 0;
		bpf_loop(LT_MAX_SHADOW, pending_fill_step, &fill, 0);
	} else {
		copy->nr_shadow = shadow_capture(tid, sp, copy->shadow);
	}
	copy->size = 0;
	/* The main thread's frames end where _start began (mm->start_stack, its argc): copy only
	 * what is in use. Above it lie argv, the environment and the random gap of up to 8 KiB the
	 * kernel leaves at exec (arch_align_stack), where a page may never have been touched: a
	 * copy up to env_end failed on it in some runs and fell back to one short of main. */
	if (tid == target_tgid)
		top = BPF_CORE_READ(task, mm, start_stack) + 64;
	if (top > sp && top - sp < LT_MAX_STACK_COPY) {
		size = clamp_copy((top - sp + 7) & ~7ull);
		if (bpf_probe_read_user(copy->bytes, size, (const void *)sp) == 0)
			copy->size = size;
	}
	if (copy->size == 0)
		copy_shrinking(copy, sp);
	if (!walk_failed)
		bpf_map_update_elem(&stack_copies, &tid, copy, BPF_ANY);
	if (send) {
		size = clamp_copy(copy->size);
		copy->header.size = __builtin_offsetof(struct lt_stack_copy, bytes) + size;
		if (bpf_ringbuf_output(&samples, copy, __builtin_offsetof(struct lt_stack_copy, bytes) + size,
				       sample_wakeup()))
			count(LT_STAT_SAMPLES_DROPPED);
	}
}

/* ---- user stacks from .eh_frame rows (events.h: lt_unwind_row) ---- */

/* The default view of the target's runtime shows its interpreter's frames in place of the
 * native ones from the interpreter's code on (not --native-frames): a sample that got
 * interpreter frames walks its native stack only that far (LT_WALK_AT_INTERPRETER). */
const volatile __u32 eh_view_cut = 0;
/* rec->walk_end before a walk whose sample's Java walk starts where this one enters
 * HotSpot's code (struct hs_start): the default view stops there, at any depth. */
#define EH_WALK_TO_JAVA 0x100
/* Entries of unwind_modules in use; written by the loader, rows first. */
__u32 eh_modules;
/* Bumped by the loader before and after it rewrites unwind_modules: row cache entries of
 * another generation are stale (a module unmapped, another mapped in its place). */
__u32 eh_generation;

struct {
	__uint(type, BPF_MAP_TYPE_ARRAY);
	__uint(max_entries, LT_MAX_UNWIND_MODULES);
	__type(key, __u32);
	__type(value, struct lt_unwind_module);
} unwind_modules SEC(".maps");

/* Every module's rows, one after the other (lt_unwind_module.first_row); sized by the loader. */
struct {
	__uint(type, BPF_MAP_TYPE_ARRAY);
	__uint(max_entries, 1);
	__type(key, __u32);
	__type(value, struct lt_unwind_row);
} unwind_rows SEC(".maps");

struct eh_walk {
	__u64 pc;
	__u64 sp;
	__u64 bp;
	__u32 n;
	__u32 nr_shadow;
	__u32 view_cut;	  /* rec->walk_end before the walk: stop at the interpreter's code, and
			     for LT_WALK_AT_INTERPRETER after LT_VIEW_NATIVE_LEAF frames */
	struct lt_sample_record *rec;
	struct hs_start *java; /* where the walk first enters HotSpot's code goes here */
	__u64 trampoline; /* the uretprobe trampoline's address, 0 if none */
	struct return_instance *pending_returns;
	__u64 first_unknown; /* the first pc outside every published module, 0 if none */
	__u32 generation;    /* eh_generation when the walk began */
};

/*
 * The row found for an address, cached per CPU: a loop thread waits and is sampled at the
 * same few return addresses again and again, and each search costs two binary searches
 * through bpf_loop (~0.5 us a frame; ~0.3 us with the cache). Rows are never rewritten once
 * published (the loader appends them), so an entry holds while its generation does. Walks do
 * not nest on a CPU today (sched_switch runs with interrupts off, the cpu-clock sample in a
 * hardirq); should one interrupt another, neither gets a torn entry: a writer clears pc first
 * and publishes it last only if no other writer did meanwhile, a reader checks pc again after
 * copying.
 */
#define EH_ROW_CACHE_SLOTS 1024
struct eh_cached_row {
	__u64 pc; /* the looked-up address; 0: empty or being written */
	__u32 generation;
	__u32 module_flags;
	struct lt_unwind_row row; /* cfa_rule LT_CFA_NONE: no row covers pc */
};

struct {
	__uint(type, BPF_MAP_TYPE_PERCPU_ARRAY);
	__uint(max_entries, EH_ROW_CACHE_SLOTS);
	__type(key, __u32);
	__type(value, struct eh_cached_row);
} eh_row_cache SEC(".maps");

static __always_inline struct eh_cached_row *eh_row_cache_slot(__u64 pc)
{
	__u32 slot = (__u32)((pc * 0x9e3779b97f4a7c15ull) >> 54) & (EH_ROW_CACHE_SLOTS - 1);

	return bpf_map_lookup_elem(&eh_row_cache, &slot);
}

/*
 * The searches are bpf_loop callbacks: one step verified once, where an unrolled binary
 * search would make the verifier walk every path through it.
 */
struct eh_search {
	__u64 target;
	__u32 lo; /* row search: indexes in unwind_rows */
	__u32 hi;
	__u32 found; /* module search: index + 1, 0 if none */
};

/* One step of the search for the module mapping `target` in the sorted list. */
static long eh_module_step(__u32 i, struct eh_search *q)
{
	__u32 mid = (q->lo + q->hi) / 2;
	struct lt_unwind_module *m;

	if (q->lo >= q->hi)
		return 1;
	m = bpf_map_lookup_elem(&unwind_modules, &mid);
	if (!m)
		return 1;
	if (q->target < m->start) {
		q->hi = mid;
	} else if (q->target >= m->end) {
		q->lo = mid + 1;
	} else {
		q->found = mid + 1;
		return 1;
	}
	return 0;
}

/* One step of the search for the last row in [lo, hi) starting at or before q->target. */
static long eh_row_step(__u32 i, struct eh_search *q)
{
	__u32 mid = q->lo + (q->hi - q->lo) / 2;
	struct lt_unwind_row *r;

	if (q->lo >= q->hi)
		return 1;
	r = bpf_map_lookup_elem(&unwind_rows, &mid);
	if (!r)
		return 1;
	if (r->start <= q->target)
		q->lo = mid + 1;
	else
		q->hi = mid;
	return 0;
}

static __always_inline struct lt_unwind_module *eh_module_of(__u64 address)
{
	struct eh_search q = { .target = address, .hi = *(volatile __u32 *)&eh_modules };
	__u32 index;

	if (q.hi > LT_MAX_UNWIND_MODULES)
		q.hi = LT_MAX_UNWIND_MODULES;
	bpf_loop(10, eh_module_step, &q, 0);
	if (!q.found)
		return 0;
	index = q.found - 1;
	return bpf_map_lookup_elem(&unwind_modules, &index);
}

static __always_inline struct lt_unwind_row *eh_row_of(struct lt_unwind_module *m, __u64 vaddr)
{
	struct eh_search q = { .target = vaddr, .lo = m->first_row, .hi = m->first_row + m->rows };
	__u32 first = m->first_row;

	if (vaddr > 0xffffffffull)
		return 0;
	bpf_loop(32, eh_row_step, &q, 0);
	if (q.lo <= first)
		return 0;
	q.lo--;
	return bpf_map_lookup_elem(&unwind_rows, &q.lo);
}

/*
 * The row for `lookup` and its module's flags in `out`, from the cache or searched (and
 * cached); 0 if no published module maps it. A global function: verified once, not again on
 * every path of the walk that reaches it (a static one made sessions attach 0.25 s slower).
 */
__noinline int eh_find_row(__u64 lookup, __u32 generation, struct eh_cached_row *out)
{
	struct eh_cached_row *cached = eh_row_cache_slot(lookup);
	struct lt_unwind_module *m;
	struct lt_unwind_row *row;

	if (!out)
		return 0;
	if (cached && cached->pc == lookup && cached->generation == generation) {
		*out = *cached;
		/* not rewritten while read */
		if (*(volatile __u64 *)&cached->pc == lookup)
			return 1;
	}
	m = eh_module_of(lookup);
	if (!m)
		return 0;
	out->module_flags = m->flags;
	row = eh_row_of(m, lookup - m->bias);
	if (row) {
		out->row = *row;
	} else {
		__builtin_memset(&out->row, 0, sizeof(out->row));
		out->row.cfa_rule = LT_CFA_NONE;
	}
	if (cached) {
		*(volatile __u64 *)&cached->pc = 0;
		cached->generation = generation;
		cached->module_flags = out->module_flags;
		cached->row = out->row;
		/* another write in between left fields of both: the slot stays empty */
		if (__sync_val_compare_and_swap(&cached->pc, 0, lookup) != 0)
			*(volatile __u64 *)&cached->pc = 0;
	}
	return 1;
}

struct eh_pending {
	__u64 slot;
	__u64 ret;
	struct return_instance *ri;
};

/* One pending uretprobe return of the kernel's list: the one that replaced `slot`? */
static long eh_pending_step(__u32 i, struct eh_pending *p)
{
	struct return_instance *ri = p->ri; /* a local: CO-RE relocates the kernel's fields only */

	if (!ri)
		return 1;
	if (BPF_CORE_READ(ri, stack) == p->slot) {
		p->ret = BPF_CORE_READ(ri, orig_ret_vaddr);
		return 1;
	}
	p->ri = BPF_CORE_READ(ri, next);
	return 0;
}

/*
 * A return address read from `slot`. Where a uretprobe replaced it with the trampoline, the
 * one it replaced: from the shadow stack when the loader keeps one, else from the kernel's
 * own list of pending returns (uprobe_task.return_instances, matched by the slot), as the
 * kernel's own frame-pointer walk does since 6.11.
 */
static __always_inline int eh_return_address(struct eh_walk *w, __u64 slot, __u64 *ret)
{
	struct eh_pending p = { .slot = slot, .ri = w->pending_returns };
	__u32 i;

	if (bpf_probe_read_user(&p.ret, sizeof(p.ret), (const void *)slot))
		return -1;
	*ret = p.ret;
	if (!w->trampoline || p.ret != w->trampoline)
		return 0;
	for (i = 0; i < LT_MAX_SHADOW; i++) {
		if (i >= w->nr_shadow)
			break;
		if (w->rec->shadow[i].slot == slot) {
			*ret = w->rec->shadow[i].ret;
			return 0;
		}
	}
	bpf_loop(32, eh_pending_step, &p, 0);
	*ret = p.ret;
	return 0;
}

/*
 * Ends the walk with `end`: a bpf_loop callback's "stop". The reason goes to the record, not
 * the walk's state on the stack: the verifier checks the loop's steps until its state repeats
 * exactly, so a reason kept there would make it check them again for each.
 */
static __always_inline long eh_stop(struct eh_walk *w, __u32 end)
{
	w->rec->walk_end = end;
	return 1;
}

/*
 * The caller of a frame that keeps the frame-pointer convention (push rbp; mov rbp, rsp):
 * code no row covers, such as JIT code and V8's builtins inside node. A chain that is not
 * there ends the walk with `end`. Back in code with rows, rbp is the caller's register as
 * the rows expect: the convention saves it where the rows would restore it from.
 */
static __always_inline long eh_fp_step(struct eh_walk *w, __u32 end)
{
	__u64 ret;

	if (w->bp <= w->sp || w->bp - w->sp > (8 << 20))
		return eh_stop(w, end);
	if (eh_return_address(w, w->bp + 8, &ret))
		return eh_stop(w, LT_WALK_READ_FAULT);
	w->sp = w->bp + 16;
	w->bp = read_user_u64(w->bp);
	w->pc = ret;
	count(LT_STAT_FP_FRAMES);
	return 0;
}

/* One frame: record pc, then find the caller's pc, sp and bp. A bpf_loop callback. */
static long eh_step(__u32 i, struct eh_walk *w)
{
	struct eh_cached_row found = {};
	struct lt_unwind_row row;
	__u32 n = w->n, module_flags;
	__u64 lookup, cfa, ret;

	if (n >= LT_MAX_SAMPLE_FRAMES)
		return eh_stop(w, w->pc ? LT_WALK_DEPTH : LT_WALK_ENDED);
	if (!w->pc)
		return eh_stop(w, LT_WALK_ENDED);
	w->rec->ips[n] = w->pc;
	w->n = n + 1;
	/* the default view shows no more native frames than this */
	if (w->view_cut == LT_WALK_AT_INTERPRETER && n + 1 >= LT_VIEW_NATIVE_LEAF)
		return eh_stop(w, LT_WALK_AT_INTERPRETER);
	lookup = n ? w->pc - 1 : w->pc;
	if (!eh_find_row(lookup, w->generation, &found)) {
		if (eh_in_hotspot_code(lookup)) {
			if (w->java && !w->java->pc) {
				w->java->pc = w->pc;
				w->java->sp = w->sp;
				w->java->fp = w->bp;
			}
			if (w->view_cut)
				return eh_stop(w, LT_WALK_AT_INTERPRETER);
		}
		if (!w->first_unknown)
			w->first_unknown = lookup;
		/* JIT or anonymous code: by frame pointer, as the kernel walks */
		return eh_fp_step(w, LT_WALK_NO_FP);
	}
	row = found.row;
	module_flags = found.module_flags;
	if (w->view_cut && (module_flags & LT_MODULE_INTERPRETER))
		return eh_stop(w, LT_WALK_AT_INTERPRETER);
	/* code of the module its rows do not cover (node's V8 builtins): by frame pointer too */
	if (row.cfa_rule == LT_CFA_NONE)
		return eh_fp_step(w, LT_WALK_NO_CFI);
	if (row.flags & LT_ROW_OUTERMOST)
		return eh_stop(w, LT_WALK_ENDED);
	if (row.cfa_rule == LT_CFA_UNSUPPORTED)
		return eh_stop(w, LT_WALK_UNSUPPORTED);
	cfa = (row.cfa_rule == LT_CFA_RBP ? w->bp : w->sp) + (__s64)row.cfa_offset;
	if (row.cfa_rule == LT_CFA_PLT && (w->pc & 15) >= (__u64)(row.flags >> 4))
		cfa += 8;
	if (cfa <= w->sp)
		return eh_stop(w, LT_WALK_UNSUPPORTED);
	if (eh_return_address(w, cfa - 8, &ret))
		return eh_stop(w, LT_WALK_READ_FAULT);
	if (row.flags & LT_ROW_RBP_SAVED)
		w->bp = read_user_u64(cfa + (__s64)row.rbp_offset);
	w->sp = cfa;
	w->pc = ret;
	return 0;
}

/*
 * Walks the user stack of `regs` into rec->ips; the number of bytes written. rec->walk_end:
 * LT_WALK_AT_INTERPRETER to walk only as far as the runtime's default view shows native
 * frames, EH_WALK_TO_JAVA to HotSpot's code (read from memory, so the verifier does not walk
 * the rest twice), then how it ended. Where it first entered HotSpot's code: in hs_starts.
 */
static __noinline long eh_walk_stack(struct task_struct *task, struct pt_regs *regs,
				   struct lt_sample_record *rec, __u64 *first_unknown)
{
	__u32 zero = 0;
	struct eh_walk w = {
		.pc = BPF_CORE_READ(regs, ip),
		.sp = BPF_CORE_READ(regs, sp),
		.bp = BPF_CORE_READ(regs, bp),
		.nr_shadow = rec->nr_shadow,
		.rec = rec,
		.trampoline = BPF_CORE_READ(task, mm, uprobes_state.xol_area, vaddr),
		.pending_returns = BPF_CORE_READ(task, utask, return_instances),
		.view_cut = rec->walk_end,
		.java = hs_enabled ? bpf_map_lookup_elem(&hs_starts, &zero) : 0,
		.generation = *(volatile __u32 *)&eh_generation,
	};

	rec->walk_end = LT_WALK_ENDED;
	leaf_out_of_xol(task, w.trampoline, &w.pc, &w.sp);
	/* one step more than frames: the last one says why the walk ended (eh_stop) */
	bpf_loop(LT_MAX_SAMPLE_FRAMES + 1, eh_step, &w, 0);
	*first_unknown = w.first_unknown;
	return (long)w.n * 8;
}

static long eh_vma_is_file(struct task_struct *task, struct vm_area_struct *vma, __u32 *is_file)
{
	*is_file = BPF_CORE_READ(vma, vm_file) != 0;
	return 0;
}

/*
 * Whether a walk that stopped outside every module met a library the loader has not published
 * rows for yet (mapped by dlopen since it last looked): a file's mapping, where JIT code is
 * anonymous. Its rows come at the loader's next look; this sample goes as a stack copy that
 * user space walks then (LT_STAT_WALK_COPIED).
 */
static __always_inline int eh_met_new_library(struct task_struct *task, __u32 end, __u64 pc)
{
	__u32 is_file = 0;

	if (end != LT_WALK_NO_FP || !pc)
		return 0;
	return bpf_find_vma(task, pc, eh_vma_is_file, &is_file, 0) == 0 && is_file;
}

/* Whether the interpreter's frames of this sample (tid, now) went out, at least one. */
static __always_inline __u32 interp_frames_sent(__u32 tid, __u64 now)
{
	struct lt_interp_stack *stack;
	__u32 zero = 0;

	if (!eh_view_cut)
		return 0;
	stack = bpf_map_lookup_elem(&interp_scratch, &zero);
	return stack && stack->tid == tid && stack->ts_ns == now && stack->nr_frames > 0;
}

/* A frame-pointer stack sample of `task` (current), for a sampled call tree. */
static __always_inline void send_sample(void *ctx, struct task_struct *task, __u32 tid, __u16 kind, __u32 state,
					__u64 now)
{
	struct lt_sample_record *rec;
	struct hs_start *java;
	struct pt_regs *regs;
	__u32 zero = 0;
	long n;

	rec = bpf_map_lookup_elem(&sample_scratch, &zero);
	if (!rec)
		return;
	regs = (struct pt_regs *)bpf_task_pt_regs(task);
	rec->header.type = LT_RECORD_SAMPLE;
	rec->ts_ns = now;
	rec->tid = tid;
	rec->kind = kind;
	rec->state = state;
	rec->nr_shadow = regs ? shadow_capture(tid, BPF_CORE_READ(regs, sp), rec->shadow) : 0;
	/* how far to walk, to eh_walk_stack through memory */
	rec->walk_end = interp_frames_sent(tid, now)			  ? LT_WALK_AT_INTERPRETER
			: eh_view_cut && hs_waiting_start(tid, now) ? EH_WALK_TO_JAVA
								    : LT_WALK_KERNEL;
	if (eh_unwind && regs) {
		__u64 first_unknown = 0;
		__u32 end = LT_WALK_ENDED;
		/* No rows out yet (the session's first drain publishes them): every library is one
		 * without rows, and the kernel's frame-pointer walk would stop in the first frame
		 * without a frame pointer. Copied and walked in user space instead, as below. */
		int copy = !*(volatile __u32 *)&eh_modules;

		if (!copy) {
			n = eh_walk_stack(task, regs, rec, &first_unknown);
			end = rec->walk_end;
			copy = eh_met_new_library(task, end, first_unknown);
		}
		/* The Java frames of a VM leaf call, before their sample. A walk that neither
		 * reached HotSpot's code nor ended at the thread's outermost frame missed them. */
		java = hs_waiting_start(tid, now);
		if (java) {
			if (!java->pc && (copy || end != LT_WALK_ENDED)) {
				hs_guess_start(java, BPF_CORE_READ(regs, sp), BPF_CORE_READ(regs, bp));
				if (!java->pc)
					java->flags |= LT_INTERP_READ_FAILED;
			}
			hs_send_stack(java, tid, now);
		}
		if (copy) {
			count(LT_STAT_WALK_COPIED);
			copy_user_stack(task, tid, now, kind, state, 1, 1);
			return;
		}
		/* the early ends, by reason (events.h LT_STAT_WALK_*) */
		if (end >= LT_WALK_AT_INTERPRETER && end <= LT_WALK_NO_FP)
			count(LT_STAT_WALK_BASE + end);
	} else {
		rec->walk_end = LT_WALK_KERNEL;
		n = bpf_get_stack(ctx, rec->ips, sizeof(rec->ips), BPF_F_USER_STACK);
	}
	if (n < 0) {
		count(LT_STAT_STACK_FAILED);
		n = 0;
	}
	if (n > (long)sizeof(rec->ips))
		n = sizeof(rec->ips);
	rec->nr_ips = n / 8;
	rec->header.size = __builtin_offsetof(struct lt_sample_record, ips) + n;
	if (bpf_ringbuf_output(&samples, rec, __builtin_offsetof(struct lt_sample_record, ips) + n,
			       sample_wakeup()))
		count(LT_STAT_SAMPLES_DROPPED);
}

/* A sample of a watched thread: a stack copy with --dwarf-unwind, else frame pointers. */
static __always_inline void take_sample(void *ctx, struct task_struct *task, __u32 tid, __u16 kind, __u32 state,
					__u64 now)
{
	if (samples_after_exec && !*(volatile __u32 *)&exec_done)
		return;
	if (py_layout.frame_model && (dwarf_stack_bytes || sample_records))
		send_interp_stack(task, tid, now);
	else if (hs_enabled && (dwarf_stack_bytes || sample_records))
		send_hotspot_stack(task, tid, now);
	else if (v8_layout.enabled && (dwarf_stack_bytes || sample_records))
		send_v8_stack(task, tid, now);
	if (dwarf_stack_bytes)
		copy_user_stack(task, tid, now, kind, state, sample_records, 0);
	else if (sample_records)
		send_sample(ctx, task, tid, kind, state, now);
}

static __always_inline struct lt_thread_state *state_of(__u32 tid)
{
	struct lt_thread_state *st = bpf_map_lookup_elem(&thread_states, &tid);

	if (!st) {
		struct lt_thread_state fresh = {
			.state = LT_STATE_RUNNING,
			.kstack_id = -1,
			.ustack_id = -1,
			.sample_kstack_id = -1,
			.sample_ustack_id = -1,
		};

		bpf_map_update_elem(&thread_states, &tid, &fresh, BPF_NOEXIST);
		st = bpf_map_lookup_elem(&thread_states, &tid);
	}
	return st;
}

/*
 * Threads a runtime asked the loader to sample beside the watched ones (a JVM's Java threads:
 * its work is not on the process's first thread); only their cpu-clock samples are taken.
 */
#define LT_MAX_RUNTIME_SAMPLED 256 /* the loader's kMaxRuntimeSampled */
struct {
	__uint(type, BPF_MAP_TYPE_HASH);
	__uint(max_entries, LT_MAX_RUNTIME_SAMPLED);
	__type(key, __u32);
	__type(value, __u8);
} runtime_sampled SEC(".maps");

/* The threads whose switches are recorded: the main thread, or all with --threads all. */
static __always_inline int watched(__u32 tid)
{
	return thread_filter == LT_THREADS_ALL || (tid && tid == looper_tid());
}

static __always_inline void emit_switch(__u64 now, __u32 tid, __u32 kind, __u32 state, __s32 kstack, __s32 ustack)
{
	__u64 index;
	struct lt_record *rec = claim_record(&index);

	if (!rec)
		return;
	rec->ts_ns = now;
	rec->tid = tid;
	rec->type = LT_RECORD_SWITCH;
	rec->probe_id = 0;
	rec->sw.kind = kind;
	rec->sw.state = state;
	rec->sw.kstack_id = kstack;
	rec->sw.ustack_id = ustack;
	publish_record(rec, index);
}

/*
 * A switch-out of a thread whose last traced edge was a switch-out: the kernel ran it again
 * without a sched_switch event naming it (bpftrace sees the same, a few in 10,000 switch-ins
 * here). Without its switch-in the stretch off CPU would seem to last until now. It is made
 * up, before the switch-out's record, at now less the CPU time the thread ran since its last
 * switch-out (the kernel brought sum_exec_runtime up to date at both switch-outs): exact but
 * for the two clocks' drift, so never before that switch-out. The loop thread's stretch is
 * counted by loop_cpu_switch already, once its CPU time is tracked.
 */
static __always_inline void emit_untraced_switch_in(struct task_struct *task, __u32 tid, struct lt_thread_state *st,
						     __u64 now)
{
	__u64 ran = task->se.sum_exec_runtime - st->cpu_ns_at_out;
	__u64 in_ns = now > ran && now - ran > st->since_ns ? now - ran : st->since_ns;

	if (!(loop_cpu_exact && loop_cpu_base && tid == looper_tid()))
		count(LT_STAT_CPU_SWITCH_UNTRACED);
	emit_switch(in_ns, tid, LT_SWITCH_IN, 0, -1, -1);
}

/*
 * A switch-out of the loop thread with no message open (none begun, or in its poll wait):
 * no report shows what it waits for then, so it needs no stack.
 */
static __always_inline int loop_idle(__u32 tid)
{
	if (switch_stacks_idle || tid != looper_tid() || loop_dispatch_depth)
		return 0;
	return !messages_poll_bounded || loop_in_poll;
}

/* A preemption (state 0: still runnable) of the loop thread early in a message (LT_STACK_YOUNG). */
static __always_inline int loop_preempted_early(__u32 tid, __u32 state, __u64 now)
{
	return preempt_stacks_after_ns && state == 0 && tid == looper_tid() &&
	       now - loop_message_begin_ns < preempt_stacks_after_ns;
}

/* Early waits keep only their syscall: set by the loader when a snapshot can unwind such a
 * wait later (no uretprobe, or the shadow stack kept for them; events.h). */
const volatile __u32 waits_by_syscall = 0;

/* A wait (not a preemption) of the loop thread early in a message (LT_STACK_IN_SYSCALL). */
static __always_inline int loop_waits_early(__u32 tid, __u32 state, __u64 now)
{
	return waits_by_syscall && preempt_stacks_after_ns && state != 0 && tid == looper_tid() &&
	       now - loop_message_begin_ns < preempt_stacks_after_ns;
}

/*
 * Early waits' user stacks deferred (LT_STACK_DEFERRED): set by the loader when it can unwind
 * a waiting loop thread from outside as BPF would have (its runtime's frames read from the
 * process, or none).
 */
const volatile __u32 early_wait_stacks_deferred = 0;

/*
 * ... and now: the loader answers a wait that outlived the early age within a fraction of a
 * millisecond, except while it reads a file it meets for the first time (symbols, unwind
 * rows: up to a few hundred ms), when the wait may be over before it looks. It clears this
 * meanwhile, and early waits take their stack at the switch-out as other stacked ones do.
 */
__u32 early_wait_defer_now;

/* One timer: only the loop thread has early waits, and it waits in one at a time. */
struct early_wait_timer {
	struct bpf_timer timer;
	__u64 ts_ns;    /* the wait's switch-out */
	__u64 switches; /* the thread's switch count after it */
	__u32 tid;
	__u32 ready;    /* timer initialized, its callback set */
};

struct {
	__uint(type, BPF_MAP_TYPE_ARRAY);
	__uint(max_entries, 1);
	__type(key, __u32);
	__type(value, struct early_wait_timer);
} early_wait_timers SEC(".maps");

/*
 * preempt_stacks_after_ns after an early wait began: if the thread still waits there (no
 * switch since), the loader is woken to unwind it from outside (LT_RECORD_WAIT_OUTLIVED). A
 * timer's callback runs in a softirq, in no particular task: it cannot walk the stack itself.
 */
static int early_wait_outlived(void *map, __u32 *key, struct early_wait_timer *w)
{
	/* The loop thread may be writing the next wait on another CPU (defer_early_wait_stack):
	 * its switch count is read before and after the rest, a seqlock's check. */
	__u64 switches = *(volatile __u64 *)&w->switches;
	__u64 ts_ns;
	__u32 tid;
	struct lt_thread_state *st;
	struct lt_wait_record rec = {
		.header = { .type = LT_RECORD_WAIT_OUTLIVED, .size = sizeof(rec) },
	};

	asm volatile("" ::: "memory");
	ts_ns = *(volatile __u64 *)&w->ts_ns;
	tid = *(volatile __u32 *)&w->tid;
	asm volatile("" ::: "memory");
	if (!switches || switches != *(volatile __u64 *)&w->switches)
		return 0; /* a newer wait's, whose own expiry comes */
	st = bpf_map_lookup_elem(&thread_states, &tid);
	if (!st || st->switches != switches || st->state == LT_STATE_RUNNING)
		return 0;
	rec.tid = tid;
	rec.ts_ns = ts_ns;
	rec.switches = switches;
	if (bpf_ringbuf_output(&events, &rec, sizeof(rec), BPF_RB_FORCE_WAKEUP))
		count(LT_STAT_RINGBUF_FULL);
	return 0;
}

/* Arms the timer for the early wait the loop thread just began (its state already updated). */
static __always_inline void defer_early_wait_stack(__u32 tid, __u64 now, __u64 switches)
{
	__u32 zero = 0;
	struct early_wait_timer *w = bpf_map_lookup_elem(&early_wait_timers, &zero);

	if (!w)
		return;
	if (!w->ready) {
		/* -EBUSY: initialized already (by a run that did not get to set `ready`) */
		bpf_timer_init(&w->timer, &early_wait_timers, 1 /* CLOCK_MONOTONIC, as bpf_ktime_get_ns */);
		if (bpf_timer_set_callback(&w->timer, early_wait_outlived))
			return;
		w->ready = 1;
	}
	/* switches last, 0 meanwhile: a callback reading in between sees a change (x86 keeps
	 * stores in order; the barriers keep clang) */
	*(volatile __u64 *)&w->switches = 0;
	asm volatile("" ::: "memory");
	*(volatile __u64 *)&w->ts_ns = now;
	*(volatile __u32 *)&w->tid = tid;
	asm volatile("" ::: "memory");
	*(volatile __u64 *)&w->switches = switches;
	bpf_timer_start(&w->timer, preempt_stacks_after_ns, 0);
}

/* The system call `regs` wait in, as LT_STACK_IN_SYSCALL, or LT_STACK_OUTSIDE_SYSCALL. */
static __always_inline __s32 wait_syscall_of(struct pt_regs *regs)
{
	__s64 nr = regs ? (__s64)BPF_CORE_READ(regs, orig_ax) : -1;

	if (nr < 0 || nr > LT_MAX_SYSCALL_NR)
		return LT_STACK_OUTSIDE_SYSCALL;
	return LT_STACK_IN_SYSCALL(nr);
}

/*
 * Another thread (not a watched one) going into a wait (sleep, lock, I/O; not preempted):
 * only a stall snapshot shows its stacks, and it reads a thread still waiting then (the
 * kernel's stack from /proc, the user stack from the registers kept here, over its stack
 * memory, unchanged while it waits). A preempted thread may run on: its stacks are taken.
 */
static __always_inline int other_thread_waits(__u32 tid, __u32 state)
{
	return state != 0 && !watched(tid);
}

static __always_inline int sched_switch_run(unsigned long long *ctx, bool preempt, struct task_struct *prev,
					    struct task_struct *next, unsigned int prev_state)
{
	/* Filter by tgid first: most switches on the machine are not the target's. */
	int prev_in = prev->tgid == target_tgid;
	int next_in = next->tgid == target_tgid;
	__u64 now;

	if (!prev_in && !next_in)
		return 0;
	now = bpf_ktime_get_ns();
	if (prev_in) {
		__u32 tid = prev->pid;
		struct lt_thread_state *st = state_of(tid);
		int idle = loop_idle(tid);
		int early = !idle && loop_preempted_early(tid, prev_state, now);
		int waits = !idle && !early && other_thread_waits(tid, prev_state);
		int early_wait = !idle && !early && !waits && loop_waits_early(tid, prev_state, now);
		int stacks = !idle && !early && !waits && !early_wait;
		__s32 kstack = idle ? LT_STACK_IDLE : early ? LT_STACK_YOUNG : LT_STACK_AT_SNAPSHOT, ustack = kstack;
		struct pt_regs *regs = (waits || early_wait) ? (struct pt_regs *)bpf_task_pt_regs(prev) : 0;

		if (stacks) {
			/* prev is current here: its stacks are the ones it blocked with */
			kstack = bpf_get_stackid(ctx, &stack_traces, 0);
			ustack = bpf_get_stackid(ctx, &stack_traces, BPF_F_USER_STACK);
			if (kstack < 0 && ustack < 0)
				count(LT_STAT_STACK_FAILED);
			count(LT_STAT_SWITCH_STACKED);
		} else if (early_wait) {
			kstack = wait_syscall_of(regs);
			count(LT_STAT_SWITCH_YOUNG_WAIT);
		} else {
			count(idle ? LT_STAT_SWITCH_IDLE : early ? LT_STAT_SWITCH_YOUNG : LT_STAT_SWITCH_WAIT);
		}
		if (st && watched(tid) && !idle && st->state != LT_STATE_RUNNING && st->cpu_ns_at_out)
			emit_untraced_switch_in(prev, tid, st, now);
		loop_cpu_switch(prev, tid, 0, now);
		if (st) {
			st->cpu_ns_at_out = prev->se.sum_exec_runtime | 1;
			st->since_ns = now;
			st->state = prev_state;
			st->kstack_id = kstack;
			st->ustack_id = ustack;
			st->switches++;
			if (waits || early_wait) {
				st->wait_pc = regs ? BPF_CORE_READ(regs, ip) : 0;
				st->wait_sp = regs ? BPF_CORE_READ(regs, sp) : 0;
				st->wait_bp = regs ? BPF_CORE_READ(regs, bp) : 0;
			}
		}
		/* the sample first: user space gets it before the switch record (events.h). An idle
		 * switch-out needs no record either: no report shows the stretch it begins. */
		if (watched(tid) && !idle) {
			/* Deferred first, so that no more is live across the walk below than before
			 * (the verifier explores it once per distinct state: a JVM's walker nears
			 * its limit). */
			if (early_wait && early_wait_stacks_deferred && *(volatile __u32 *)&early_wait_defer_now && st) {
				defer_early_wait_stack(tid, now, st->switches);
				ustack = LT_STACK_DEFERRED;
			} else if ((stacks || early_wait) && !(prev->flags & LT_PF_EXITING)) {
				if (early_wait && early_wait_stacks_deferred)
					count(LT_STAT_EARLY_WAIT_STACKED);
				/* an exiting thread's last switch-outs: its user stack is gone */
				take_sample(ctx, prev, tid, LT_SAMPLE_SWITCH, prev_state, now);
			}
			emit_switch(now, tid, LT_SWITCH_OUT, prev_state, kstack, ustack);
		}
	}
	if (next_in) {
		__u32 tid = next->pid;
		struct lt_thread_state *st = state_of(tid);

		loop_cpu_switch(next, tid, 1, now);
		if (st) {
			st->since_ns = now;
			st->state = LT_STATE_RUNNING;
		}
		/* back from an idle wait (still in the poll, no message open): its switch-out had no record */
		if (watched(tid) && !loop_idle(tid))
			emit_switch(now, tid, LT_SWITCH_IN, 0, -1, -1);
	}
	return 0;
}

SEC("tp_btf/sched_switch")
int BPF_PROG(lt_sched_switch, bool preempt, struct task_struct *prev, struct task_struct *next,
	     unsigned int prev_state)
{
	return LT_TIMED(LT_PROG_SCHED_SWITCH, sched_switch_run(ctx, preempt, prev, next, prev_state));
}

/*
 * sched_waking runs in the waker's context; sched_wakeup may run on the wakee's CPU from an
 * IPI (remote wakeups), where "current" is whatever ran there, often the idle task.
 */
static __always_inline int sched_waking_run(unsigned long long *ctx, struct task_struct *p)
{
	struct task_struct *waker;
	struct lt_record *rec;
	__u64 index;

	if (p->tgid != target_tgid || !watched(p->pid))
		return 0;
	/* the idle loop woken for its next message: that wait has no record (lt_sched_switch) */
	if (loop_idle(p->pid))
		return 0;
	rec = claim_record(&index);
	if (!rec)
		return 0;
	waker = bpf_get_current_task_btf();
	rec->ts_ns = bpf_ktime_get_ns();
	rec->tid = p->pid;
	rec->type = LT_RECORD_WAKEUP;
	rec->probe_id = 0;
	rec->wakeup.waker_tid = waker->pid;
	rec->wakeup.waker_tgid = waker->tgid;
	bpf_get_current_comm(rec->wakeup.waker_comm, sizeof(rec->wakeup.waker_comm));
	publish_record(rec, index);
	return 0;
}

SEC("tp_btf/sched_waking")
int BPF_PROG(lt_sched_waking, struct task_struct *p)
{
	return LT_TIMED(LT_PROG_SCHED_WAKING, sched_waking_run(ctx, p));
}

#define LT_SIGQUIT 3

static __always_inline int signal_generate_run(unsigned long long *ctx, int sig, struct kernel_siginfo *info,
					       struct task_struct *task, int group, int result)
{
	struct task_struct *sender;
	struct lt_record *rec;
	__u64 index;

	if (sig != LT_SIGQUIT || task->tgid != target_tgid)
		return 0;
	rec = claim_record(&index);
	if (!rec)
		return 0;
	sender = bpf_get_current_task_btf();
	rec->ts_ns = bpf_ktime_get_ns();
	rec->tid = task->pid;
	rec->type = LT_RECORD_SIGNAL;
	rec->probe_id = 0;
	rec->signal.sig = sig;
	rec->signal.result = result;
	rec->signal.sender_tgid = sender->tgid;
	rec->signal.sender_tid = sender->pid;
	bpf_get_current_comm(rec->signal.sender_comm, sizeof(rec->signal.sender_comm));
	publish_record(rec, index);
	/* an ANR confirmation is urgent: wake the reader */
	{
		struct lt_nudge_record nudge = {
			.header = { .type = LT_RECORD_NUDGE, .size = sizeof(nudge) },
			.record_head = index,
		};

		bpf_ringbuf_output(&events, &nudge, sizeof(nudge), BPF_RB_FORCE_WAKEUP);
	}
	return 0;
}

SEC("tp_btf/signal_generate")
int BPF_PROG(lt_signal_generate, int sig, struct kernel_siginfo *info, struct task_struct *task,
	     int group, int result)
{
	return LT_TIMED(LT_PROG_SIGNAL, signal_generate_run(ctx, sig, info, task, group, result));
}

/*
 * cpu-clock samples of the main thread: its stack while it runs, for sampled call trees
 * and for the stall snapshots of busy threads (their stack ids, at most every 20 ms).
 */
static __always_inline int cpu_sample_run(struct bpf_perf_event_data *ctx)
{
	__u64 pid_tgid = bpf_get_current_pid_tgid();
	__u32 tid = (__u32)pid_tgid;
	struct lt_thread_state *st;
	__u64 now;

	if ((pid_tgid >> 32) != target_tgid)
		return 0;
	st = state_of(tid);
	if (!st)
		return 0;
	now = bpf_ktime_get_ns();
	if (now - st->sample_ns >= 20000000) {
		st->sample_kstack_id = bpf_get_stackid(ctx, &stack_traces, 0);
		st->sample_ustack_id = bpf_get_stackid(ctx, &stack_traces, BPF_F_USER_STACK);
		st->sample_ns = now;
	}
	if (!watched(tid) && !bpf_map_lookup_elem(&runtime_sampled, &tid))
		return 0;
	if (loop_idle(tid)) {
		count(LT_STAT_SAMPLE_IDLE); /* between messages: no tree wants it */
		return 0;
	}
	take_sample(ctx, bpf_get_current_task_btf(), tid, LT_SAMPLE_CPU, 0, now);
	return 0;
}

SEC("perf_event")
int lt_cpu_sample(struct bpf_perf_event_data *ctx)
{
	return LT_TIMED(LT_PROG_CPU_SAMPLE, cpu_sample_run(ctx));
}

/* The target's exec (looptrace run): the start of a cold startup. */
static __always_inline int process_exec_run(unsigned long long *ctx, struct task_struct *p, pid_t old_pid,
					    struct linux_binprm *bprm)
{
	struct lt_record *rec;
	__u64 index;

	if (p->tgid != target_tgid)
		return 0;
	exec_done = 1;
	rec = claim_record(&index);
	if (!rec)
		return 0;
	rec->ts_ns = bpf_ktime_get_ns();
	rec->tid = p->pid;
	rec->type = LT_RECORD_EXEC;
	rec->probe_id = 0;
	rec->exec.pid = p->tgid;
	bpf_get_current_comm(rec->exec.comm, sizeof(rec->exec.comm));
	publish_record(rec, index);
	return 0;
}

SEC("tp_btf/sched_process_exec")
int BPF_PROG(lt_process_exec, struct task_struct *p, pid_t old_pid, struct linux_binprm *bprm)
{
	return LT_TIMED(LT_PROG_EXEC, process_exec_run(ctx, p, old_pid, bprm));
}

/*
 * Attached by the loader for a moment to a function of its own, to measure what a uprobe
 * hit costs on this machine (the trap, the kernel's dispatch and a BPF program that does
 * nothing): the report's cost figures multiply the target's hits by it.
 */
SEC("uprobe")
int lt_trap_calibration(struct pt_regs *ctx)
{
	return 0;
}
