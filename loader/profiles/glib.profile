# GLib main loop (libglib-2.0): a message is one g_main_context_dispatch() call, which
# dispatches every source ready at the highest priority. The sources whose GSourceFuncs
# tables libglib exports (idle, timeout, child watch, unix signal, unix fd, io watch) are
# nested messages named by their callback: GSourceFuncs.dispatch (offset 16) is called as
# dispatch(source, callback, user_data), so its second argument is the callback's address,
# named from the target's symbols. Other sources (GIO's, GDK's, custom ones) are inside
# their g_main_context_dispatch message, unnamed. Debian's libglib has no USDT probes
# (built without -Ddtrace), so glib:main__before_dispatch and its source name are not there.
# No poll lines: messages are dispatches, and g_poll's first instruction is single-stepped
# (~18 us per iteration here).
profile glib
description GLib main loop: g_main_context_dispatch; idle/timeout/fd/child/signal sources nested, named by their callback
messages dispatch
requires libglib-2.0.so g_main_context_iteration
probe dispatch.begin uprobe    libglib-2.0.so g_main_context_dispatch
probe dispatch.end   uretprobe libglib-2.0.so g_main_context_dispatch
optional probe dispatch.begin uprobe    libglib-2.0.so *(g_idle_funcs+16)           name=arg2:sym closure=arg3:pycallable(8)
optional probe dispatch.end   uretprobe libglib-2.0.so *(g_idle_funcs+16)
optional probe dispatch.begin uprobe    libglib-2.0.so *(g_timeout_funcs+16)        name=arg2:sym closure=arg3:pycallable(8)
optional probe dispatch.end   uretprobe libglib-2.0.so *(g_timeout_funcs+16)
optional probe dispatch.begin uprobe    libglib-2.0.so *(g_child_watch_funcs+16)    name=arg2:sym closure=arg3:pycallable(8)
optional probe dispatch.end   uretprobe libglib-2.0.so *(g_child_watch_funcs+16)
optional probe dispatch.begin uprobe    libglib-2.0.so *(g_unix_signal_funcs+16)    name=arg2:sym closure=arg3:pycallable(8)
optional probe dispatch.end   uretprobe libglib-2.0.so *(g_unix_signal_funcs+16)
optional probe dispatch.begin uprobe    libglib-2.0.so *(g_unix_fd_source_funcs+16) name=arg2:sym closure=arg3:pycallable(8)
optional probe dispatch.end   uretprobe libglib-2.0.so *(g_unix_fd_source_funcs+16)
optional probe dispatch.begin uprobe    libglib-2.0.so *(g_io_watch_funcs+16)       name=arg2:sym closure=arg3:pycallable(8)
optional probe dispatch.end   uretprobe libglib-2.0.so *(g_io_watch_funcs+16)
