profile x
probe vsync	uprobe exe s vsync_ns=arg6:ptr

# end