  // ------------------------------------------------------------------ ANR & stalls

  var STATES = {R: 'running', S: 'sleeping', D: 'uninterruptible (disk) sleep', T: 'stopped', t: 'tracing stop',
    Z: 'zombie', X: 'dead', I: 'idle', P: 'parked', W: 'waking'};

  function threadName(st, tid) {
    var t = (st.threads || []).filter(function (x) { return num(x.tid) === num(tid); })[0];
    return t ? str(t.name, '?') : '?';
  }

  // The thread holding the mutex the stalled thread waits on, if any.
  function lockHolder(st) {
    var me = (st.threads || [])[0];
    if (!me || !num(me.futex_owner_tid)) return null;
    return {tid: num(me.futex_owner_tid), name: threadName(st, me.futex_owner_tid), futex: me.futex_address};
  }

  function offCpuBar(st) {
    var cost = num(st.cost_ns) || 1;
    var bar = h('div', {class: 'stackbar'});
    var parts = [{reason: 'on-cpu', total_ns: num(st.on_cpu_ns)}].concat(st.off_cpu_by_reason || []);
    parts.forEach(function (p) {
      if (!num(p.total_ns)) return;
      bar.appendChild(h('span', {class: 'r-' + String(p.reason).replace(/[^a-z-]/g, '-'), style: 'width:' + (100 * num(p.total_ns) / cost).toFixed(2) + '%',
        tip: {title: p.reason, lines: [dur(p.total_ns) + ' (' + pct(num(p.total_ns), cost) + ')', p.count ? p.count + ' intervals' : '']}}));
    });
    return h('div', null, bar, h('div', {class: 'legend'}, parts.map(function (p) {
      return h('span', null, h('span', {class: 'sw r-' + String(p.reason).replace(/[^a-z-]/g, '-')}),
        p.reason + ' ' + dur(p.total_ns) + ' (' + pct(num(p.total_ns), cost) + ')');
    })));
  }

  function stackBlock(title, frames) {
    if (!frames || !frames.length) return null;
    return h('div', null, h('div', {class: 'note'}, title), h('pre', {class: 'stack'}, frames.map(String).join('\n')));
  }

  function threadsTable(st) {
    var threads = st.threads || [];
    if (!threads.length) return h('div', {class: 'note'}, 'The snapshot has no thread states (thread tracking off, or the process exited).');
    var table = h('table', {class: 'data threads'},
      h('thead', null, h('tr', null, ['tid', 'name', 'state', 'for', 'wait channel', 'waiting on', 'stacks'].map(function (c) { return h('th', null, c); }))));
    var body = h('tbody');
    threads.forEach(function (t) {
      var since = num(t.state_since_ns) ? dur(num(st.snapshot_ns) - num(t.state_since_ns)) : '?';
      var waiting = num(t.futex_address) ?
        ['futex ' + hex(t.futex_address), num(t.futex_owner_tid) ?
          h('span', {class: 'holder'}, ' held by tid ' + t.futex_owner_tid + ' "' + threadName(st, t.futex_owner_tid) + '"') : null] : '-';
      body.appendChild(h('tr', {'data-tid': t.tid},
        h('td', {class: 'num'}, String(t.tid)),
        h('td', null, str(t.name, '?')),
        h('td', null, str(t.state) + ' ' + (STATES[t.state] || '')),
        h('td', {class: 'num'}, since),
        h('td', {class: 'mono'}, str(t.wchan, '-')),
        h('td', null, waiting),
        h('td', null, (t.kernel_stack || []).length || (t.user_stack || []).length ?
          h('details', null, h('summary', null, (t.user_stack || []).length + ' user / ' + (t.kernel_stack || []).length + ' kernel frames'),
            stackBlock('user', t.user_stack), stackBlock('kernel', t.kernel_stack)) : '-')));
    });
    table.appendChild(body);
    return table;
  }

  function stallCard(st, i) {
    var anr = st.type === 'anr';
    var waited = num(st.snapshot_ns) - num(st.begin_ns);
    var holder = lockHolder(st);
    var cycle = (st.deadlock_cycle || []).map(function (tid) { return 'tid ' + tid + ' "' + threadName(st, tid) + '"'; });
    return h('details', {class: 'item ' + (anr ? 'anr' : 'lag'), id: 'stall-' + i, open: anr || i < 2 ? 'open' : null},
      h('summary', null, badge(anr ? 'ANR' : 'LAG', anr ? 'bad' : 'warn'), ' ', h('b', null, msgName(st)),
        h('span', {class: 'cost'}, dur(st.cost_ns)), ' on ' + threadLabel(num(st.tid)) + ', stuck: ' + str(st.stuck_reason, '?'),
        st.finished ? null : badge('never finished', 'bad')),
      h('div', {class: 'body'},
        h('div', {class: 'cause'}, 'Cause: message "' + msgName(st) + '"' + (st.msg_id !== null && st.msg_id !== undefined ? ' (id ' + st.msg_id + ')' : '') +
          ' running for ' + dur(waited) + ' on thread ' + st.tid + ' (threshold ' + dur(st.threshold_ns) + '): ' + str(st.stuck_reason, '?')),
        cycle.length ? h('div', {class: 'cause holder'}, 'Deadlock: ' + cycle.concat(cycle.length ? [cycle[0]] : []).join(' -> ') + ' (each waits on a mutex the next holds)') : null,
        holder ? h('div', {class: 'cause'}, 'Waiting on futex ' + hex(holder.futex) + ', a mutex ',
          h('span', {class: 'holder lock-holder', 'data-tid': holder.tid}, 'held by tid ' + holder.tid + ' "' + holder.name + '"')) : null,
        kv([
          ['snapshot', rel(st.snapshot_ns) + ' (' + dur(st.snapshot_delay_ns) + ' after the threshold)'],
          ['message', rel(st.begin_ns) + ' .. ' + (st.finished ? rel(st.end_ns) : 'still running at the end') + ', cost ' + dur(st.cost_ns)],
          st.frame ? ['frame in progress', st.frame] : null,
          st.scene ? ['scene', st.scene] : null,
          ['process CPU', num(st.process_cpu_percent) >= 0 ? num(st.process_cpu_percent).toFixed(1) + '%' : 'unknown'],
          ['memory', st.vm_rss_kb ? 'RSS ' + (num(st.vm_rss_kb) / 1024).toFixed(1) + ' MiB' : '-'],
          ['priority / nice', st.processPriority + ' / ' + st.processNice]
        ]),
        h('h3', null, 'Where the time went'),
        offCpuBar(st),
        (st.off_cpu || []).length ? dataTable({
          rows: st.off_cpu, sortCol: -1,
          columns: [
            {label: 'from message start', num: true, value: function (r) { return num(r.begin_ns) - num(st.begin_ns); }, fmt: dur},
            {label: 'off-CPU', num: true, value: function (r) { return num(r.end_ns) - num(r.begin_ns); }, fmt: function (v, r) { return dur(v) + (r.open ? ' (still)' : ''); }},
            {label: 'reason', value: function (r) { return str(r.reason); }},
            {label: 'woken by', value: function (r) { return num(r.waker_tid) ? 'tid ' + r.waker_tid + ' "' + str(r.waker_comm) + '"' : '-'; }},
            {label: 'kernel stack', sort: false, value: function (r) { return r; }, fmt: function (r) {
              return (r.kernel_stack || []).length ? h('details', null, h('summary', null, str(r.kernel_stack[0])), h('pre', {class: 'stack'}, r.kernel_stack.join('\n'))) : '-';
            }}
          ]
        }) : h('div', {class: 'note'}, 'No off-CPU interval was recorded (thread tracking off, or the thread ran throughout).'),
        callTrees(st, 'No open method slice at the snapshot (no method roles, or no method running).'),
        h('h3', null, 'Threads at the snapshot'),
        threadsTable(st),
        rawRecord(st)));
  }

  function stallsSection() {
    var out = [];
    M.stalls.forEach(function (st, i) { out.push(stallCard(st, i)); });
    M.signals.forEach(function (sg) {
      out.push(h('details', {class: 'item anr', open: 'open'},
        h('summary', null, badge(sg.type === 'self_sigquit' ? 'SIGQUIT (self)' : 'SIGNAL ANR', 'bad'), ' at ' + rel(sg.ts_ns)),
        h('div', {class: 'body'}, kv([
          ['sender', 'pid ' + sg.sender_pid + ' tid ' + sg.sender_tid + ' "' + str(sg.sender_comm) + '"'],
          ['delivered', sg.delivered ? 'yes' : 'no'],
          ['main thread', sg.stalled ? 'running "' + str(sg.name) + '" (id ' + str(sg.msg_id, '-') + ') for ' + dur(sg.running_ns) : 'not in a message'],
          sg.scene ? ['scene', sg.scene] : null
        ]), rawRecord(sg))));
    });
    M.spanLags.forEach(function (l) {
      out.push(h('details', {class: 'item lag', open: 'open'},
        h('summary', null, badge(l.type === 'idle_lag' ? 'IDLE HANDLER' : 'INPUT', 'warn'), ' ', h('b', null, str(l.name, '?')),
          h('span', {class: 'cost'}, dur(l.cost_ns)), ' at ' + rel(l.begin_ns)),
        h('div', {class: 'body'}, callTrees(l, 'No call tree.'), rawRecord(l))));
    });
    M.barriers.forEach(function (b) {
      out.push(h('details', {class: 'item lag', open: 'open'},
        h('summary', null, badge('BARRIER LEAK', 'warn'), ' token ' + b.token, h('span', {class: 'cost'}, dur(b.duration_ns)), ' from ' + rel(b.begin_ns)),
        h('div', {class: 'body'}, kv([
          ['thread', threadLabel(num(b.tid))],
          ['removed', b.removed ? 'yes, at ' + rel(b.end_ns) : 'never'],
          ['synchronous messages posted meanwhile', String(b.sync_messages_enqueued)]
        ]), rawRecord(b))));
    });
    if (!out.length) {
      var hint = 'No message ran past --lag-threshold (2 s) or --anr-threshold (5 s), no SIGQUIT was seen, and no idle handler, input event or sync barrier lagged.';
      if (counter('thread_tracking_off')) hint += ' Thread tracking was off: snapshots would have no thread states or off-CPU reasons.';
      return missing('No ANR or stall.', hint);
    }
    return out;
  }

  // ------------------------------------------------------------------ data quality

  function qualitySection() {
    var out = [];
    var known = M.meta.counters || [];
    var names = known.map(function (c) { return c.name; });
    Object.keys(M.stats).sort().forEach(function (k) {  // counters newer than this page
      if (names.indexOf(k) < 0) known = known.concat([{name: k, severity: '?', description: ''}]);
    });
    if (!M.of('stats').length) {
      out.push(missing('This report has no stats record: loss counters are unknown.'));
    }
    var nonzero = known.filter(function (c) { return num(M.stats[c.name]) > 0; });
    out.push(h('p', null, nonzero.length ? nonzero.length + ' counter(s) non-zero (in bold).' : 'Complete: no loss or degradation counted.'));
    out.push(dataTable({
      rows: known, sortCol: -1, filter: true, filterPlaceholder: 'filter counters',
      rowAttrs: function (c) { return {class: (num(M.stats[c.name]) > 0 ? 'nonzero ' : '') + 'sev-' + c.severity}; },
      columns: [
        {label: 'counter', value: function (c) { return c.name; }, fmt: function (v) { return h('code', null, v); }},
        {label: 'value', num: true, value: function (c) { return num(M.stats[c.name]); }, fmt: function (v) { return v.toLocaleString('en-US'); }},
        {label: 'severity', value: function (c) { return c.severity; }},
        {label: 'meaning', value: function (c) { return c.description; }}
      ]
    }));
    out.push(h('h3', null, 'What this session could not see'));
    var list = h('ul');
    function add(t) { list.appendChild(h('li', null, t)); }
    var roles = M.coverage.roles || [];
    if (M.coverage.messages === false) add('Messages: the profile maps no dispatch.begin / dispatch.end.');
    if (M.coverage.frames === false) add('Frames: the profile maps no frame.begin / frame.end.');
    if (roles.length && roles.indexOf('method.enter') < 0) add('Call trees: the profile maps no method.enter / method.exit.');
    if (roles.length && roles.indexOf('activity.focus') < 0 && roles.indexOf('app.create.begin') < 0) add('Startup and scenes: the profile maps no lifecycle roles.');
    if (counter('thread_tracking_off')) add('Off-CPU reasons and thread stacks: thread tracking was off.');
    if (counter('messages_running_at_start')) add(counter('messages_running_at_start') + ' message(s) were already running when tracing began and could not be timed.');
    if (counter('unfinished_messages')) add(counter('unfinished_messages') + ' message(s) were still running at the end (drawn dashed on the timeline).');
    if (counter('method_beats_overwritten')) add('Method beats of ' + counter('method_beats_overwritten') + ' slow-message beat(s) were overwritten before they were read (raise --beat-buffer).');
    if (counter('ringbuf_full')) add(counter('ringbuf_full') + ' records were dropped in BPF because the ring buffer was full (raise --ringbuf-size).');
    add('Idle time is drawn as the gaps between messages: poll waits are not separate records.');
    add('CPU time of a message is known only where the kernel reported it; off-CPU reasons exist only for messages with an ANR/LAG report.');
    if (!M.records.length) add('Nothing at all: the report has no records.');
    out.push(list);
    return out;
  }

  // ------------------------------------------------------------------ other records

  function otherSection(types) {
    return types.map(function (t) {
      var recs = M.byType[t];
      return h('details', {class: 'item'},
        h('summary', null, h('b', null, t), ' ' + count(recs.length, 'record')),
        h('div', {class: 'body'},
          h('div', {class: 'note'}, 'This page does not know this record type yet; its call trees and fields are shown as they are.'),
          recs.slice(0, 50).map(function (r) {
            return h('div', null, callTrees(r), rawRecord(r));
          }),
          recs.length > 50 ? h('div', {class: 'note'}, (recs.length - 50) + ' more not shown.') : null));
    });
  }

  // ------------------------------------------------------------------ main

  function now() {
    return window.performance && performance.now ? performance.now() : Date.now();
  }

  function main() {
    var started = now();
    var root = document.getElementById('report');
    try {
      M = loadModel();
    } catch (e) {
      clear(root).appendChild(renderError('the report data', e));
      document.body.setAttribute('data-rendered', 'errors');
      return;
    }
    initTooltip();
    clear(root);
    if (M.of('matrix_input').length) {
      matrixMain(root);
      hydrate(root);
      root.setAttribute('aria-busy', 'false');
      document.body.setAttribute('data-render-ms', String(Math.round(now() - started)));
      document.body.setAttribute('data-rendered', renderErrors ? 'errors' : 'ok');
      return;
    }
    var unknown = Object.keys(M.byType).filter(function (t) { return KNOWN_TYPES.indexOf(t) < 0; }).sort();
    // Sections with data only; those without are named once, each with its reason, in one
    // list before the data quality (a server's report has no frames, startup or jank).
    var sections = [], absent = [];
    function add(id, title, build) {
      var sec = section(id, title, build);
      var body = Array.prototype.slice.call(sec.children, 1);
      if (!body.length || !body.every(function (e) { return e.classList.contains('missing'); })) {
        sections.push(sec);
        return;
      }
      var why = body.map(function (e) {
        var parts = Array.prototype.map.call(e.childNodes, function (c) { return c.textContent.trim(); });
        return parts.filter(function (t) { return t; }).join(' ');
      }).join(' ');
      absent.push(h('li', {id: id, 'data-section': id}, h('b', null, title), ': ' + why));
    }
    add('timeline', 'Timeline', timelineSection);
    add('frames', 'Frames', framesSection);
    add('messages', 'Messages', messagesSection);
    add('slow', 'Slow messages (EvilMethod) with call trees', slowSection);
    add('jank', 'Janky frames', jankSection);
    add('startup', 'Startup', startupSection);
    add('stalls', 'ANR, LAG and other stalls', stallsSection);
    if (absent.length) {
      var list = h('ul', {class: 'absent-list'});
      append(list, absent);
      sections.push(h('section', {class: 'report-section', id: 'absent'}, h('h2', null, 'Not in this report'), list));
    }
    sections.push(section('quality', 'Data quality', qualitySection));
    if (unknown.length) sections.push(section('other', 'Other records', function () { return otherSection(unknown); }));
    append(root, [header(), nav(sections.map(function (s) { return s.id; })), summaryCards(), banners()]);
    if (!M.records.length) {
      root.appendChild(missing('The report is empty: it has no records at all.', 'Was the recording empty or unreadable?'));
    }
    append(root, sections);
    root.appendChild(h('footer', null, 'Generated by looptrace from ' + count(M.records.length, 'record') +
      ' (the same records as -f json). Self-contained: no network access.'));
    hydrate(root);
    root.setAttribute('aria-busy', 'false');
    document.body.setAttribute('data-render-ms', String(Math.round(now() - started)));
    document.body.setAttribute('data-rendered', renderErrors ? 'errors' : 'ok');
  }

  window.addEventListener('error', function (e) {
    var root = document.getElementById('report');
    renderErrors++;
    document.body.setAttribute('data-rendered', 'errors');
    if (root) root.appendChild(h('div', {class: 'render-error'}, 'script error: ' + (e && e.message ? e.message : String(e))));
  });

  main();
})();
