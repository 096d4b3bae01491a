# The bundled sample target (tests/sample_app), with its method id hooks; a test profile,
# passed as --profile tests/sample_app/profiles/sample.profile (never built in).
# Its hooks start with a 5-byte nop, which the kernel emulates cheaply.
profile sample
description looptrace-sample-app: looper, Choreographer, input, barriers, lifecycle, method id hooks
include sample-common.profile
probe method.enter     uprobe exe sample_method_enter          id=arg1
probe method.exit      uprobe exe sample_method_exit           id=arg1
