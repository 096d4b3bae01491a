// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
/* Baseline for overhead benchmarks: a probe program that does nothing. */
#include "vmlinux.h"
#include <bpf/bpf_helpers.h>

char LICENSE[] SEC("license") = "Dual BSD/GPL";

SEC("uprobe")
int lt_empty_uprobe(void *ctx)
{
	return 0;
}
