# Android's native Looper: android::Looper in libutils (AOSP system/core/libutils/Looper.cpp),
# as Debian's android-libutils ships it (libutils.so.0) and devices run it
# (/system/lib64/libutils.so). Messages are poll-bounded by the looper thread's epoll_wait:
# pollOnce -> pollInner calls epoll_wait, then runs native MessageHandlers and fd callbacks
# (LooperCallback::handleEvent) before it returns, and a device's Java messages run after
# pollOnce returns (MessageQueue.next() calls nativePollOnce before each one), so all of it
# lies between one epoll_wait and the next: one message per loop iteration. Handlers and fd
# callbacks the executable defines are nested messages named by their function (the glob
# skips thunks; `what` is the fd), as are addFd() callbacks given as plain functions (through
# SimpleLooperCallback); add lines like these for a library's handlers. android::Looper::pollOnce marks
# the runtime (requires): epoll_wait alone would fit any loop (that is the epoll profile).
profile android-looper
description Android native Looper (libutils): iterations between epoll_wait calls; native handlers nested, named
messages poll-bounded
requires libutils.so android::Looper::pollOnce
probe poll.begin uprobe    libc.so epoll_wait timeout_ms=arg4:int
probe poll.end   uretprobe libc.so epoll_wait
optional probe dispatch.begin uprobe    exe "*::handleMessage(android::Message const&)" name=func
optional probe dispatch.end   uretprobe exe "*::handleMessage(android::Message const&)"
optional probe dispatch.begin uprobe    exe "*::handleEvent(int, int, void[*])"          name=func what=arg2
optional probe dispatch.end   uretprobe exe "*::handleEvent(int, int, void[*])"
optional probe dispatch.begin uprobe    libutils.so android::SimpleLooperCallback::handleEvent   name=func what=arg2
optional probe dispatch.end   uretprobe libutils.so android::SimpleLooperCallback::handleEvent
