# Built-in profile for the bundled sample target (tests/sample_app).
# Its hooks start with a 5-byte nop, which the kernel emulates cheaply.
profile sample
description looptrace-sample-app: looper, Choreographer, input, barriers, lifecycle, method id hooks
include sample-common
probe method.enter     uprobe exe sample_method_enter          id=arg1
probe method.exit      uprobe exe sample_method_exit           id=arg1
