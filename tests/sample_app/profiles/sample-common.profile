# Lines the sample target's profiles share (sample, sample-cyg): looper, idle handlers,
# Choreographer, input, barriers, lifecycle. Included by them (`include sample-common.profile`,
# a path relative to the including file).
profile sample-common
description looptrace-sample-app hooks shared by sample and sample-cyg (for include)
probe dispatch.begin   uprobe exe sample_looper_dispatch_begin id=arg1 name=arg2:str
probe dispatch.end     uprobe exe sample_looper_dispatch_end   id=arg1
probe poll.begin       uprobe exe sample_looper_poll_begin     timeout_ms=arg1:int
probe poll.end         uprobe exe sample_looper_poll_end
probe idle.begin       uprobe exe sample_looper_idle_begin     id=arg1 name=arg2:str
probe idle.end         uprobe exe sample_looper_idle_end       id=arg1
probe frame.begin      uprobe exe sample_choreographer_frame_begin frame_id=arg1 vsync_ns=arg2
probe frame.end        uprobe exe sample_choreographer_frame_end   frame_id=arg1
probe phase.begin      uprobe exe sample_choreographer_phase_begin phase=arg1
probe phase.end        uprobe exe sample_choreographer_phase_end   phase=arg1
probe vsync            uprobe exe sample_vsync                     vsync_ns=arg1
probe input.receive    uprobe exe sample_input_receive             seq=arg1
probe input.finish     uprobe exe sample_input_finish              seq=arg1
probe barrier.post     uprobe exe sample_barrier_post              token=arg1
probe barrier.remove   uprobe exe sample_barrier_remove            token=arg1
probe message.enqueue  uprobe exe sample_message_enqueue           when_ns=arg1 async=arg2
probe app.create.begin uprobe exe sample_app_create_begin
probe app.create.end   uprobe exe sample_app_create_end
probe activity.launch  uprobe exe sample_activity_launch           name=arg1:str
probe activity.focus   uprobe exe sample_activity_focus            name=arg1:str
probe fully.drawn      uprobe exe sample_fully_drawn
