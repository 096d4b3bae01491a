# GLib main loop: one dispatch = one g_main_context_dispatch() call (all ready sources).
profile glib
description GLib main loop: g_main_context_dispatch in libglib-2.0 (uprobe + uretprobe)
probe dispatch.begin uprobe    libglib-2.0.so g_main_context_dispatch
probe dispatch.end   uretprobe libglib-2.0.so g_main_context_dispatch
