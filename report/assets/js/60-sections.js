  // ------------------------------------------------------------------ frames section

  function whyNoFrames() {
    if (M.coverage.frames === false) return 'The profile maps no frame roles (frame.begin / frame.end), so looptrace could not see frames.';
    return 'No frame was drawn during the session.';
  }

  function framesSection() {
    var scenes = M.of('fps_scene');
    var windows = M.of('fps');
    var total = num(M.timelineMeta.frames_total) || M.frames.length;
    if (!M.frames.length && !scenes.length) return missing('No frames.', whyNoFrames());
    var out = [];
    if (scenes.length) {
      out.push(dataTable({
        rows: scenes, sortCol: 1,
        columns: [
          {label: 'scene', value: function (r) { return str(r.scene, '(no scene)'); }},
          {label: 'frames', num: true, value: function (r) { return num(r.frames); }},
          {label: 'delivered fps', num: true, value: function (r) { return num(r.delivered_fps); }, fmt: function (v) { return v.toFixed(1); }, title: 'what the screen got, counting vsyncs other messages cost'},
          {label: 'Matrix fps', num: true, value: function (r) { return num(r.fps); }, fmt: function (v) { return v.toFixed(1); }},
          {label: 'refresh', num: true, value: function (r) { return num(r.refresh_hz); }, fmt: function (v) { return v.toFixed(1) + ' Hz'; }},
          {label: 'janky', num: true, value: function (r) { return num(r.janky); }},
          {label: 'slow', num: true, value: function (r) { return num(r.slow); }},
          {label: 'frozen', num: true, value: function (r) { return num(r.frozen); }},
          {label: 'dropped', num: true, value: function (r) { return num(r.dropped_frames); }},
          {label: 'held by messages', num: true, value: function (r) { return num(r.delay_by_messages_ns); }, fmt: dur}
        ]
      }));
    }
    var charts = h('div', {class: 'charts'});
    if (M.frames.length) {
      charts.appendChild(chart('Frame time per frame (end - vsync, log scale) against the deadline', frameTimeChart(M.frames), true));
    }
    // Matrix buckets: from the per-scene summaries, which cover every frame.
    var levels = {};
    BUCKETS.forEach(function (b) { levels[b] = 0; });
    if (scenes.length) {
      scenes.forEach(function (sc) {
        Object.keys(sc.dropLevel || {}).forEach(function (k) {
          var b = k.replace(/^DROPPED_/, '');
          levels[b] = (levels[b] || 0) + num(sc.dropLevel[k]);
        });
      });
    } else {
      M.frames.forEach(function (f) { levels[f.bucket] = (levels[f.bucket] || 0) + 1; });
    }
    var counted = 0;
    Object.keys(levels).forEach(function (k) { counted += levels[k]; });
    charts.appendChild(chart('Frames by Matrix drop bucket (dropped = (total - interval) / interval)',
      hbars(Object.keys(levels).map(function (b) {
        return {label: b + ' (' + (BUCKET_RULE[b] || '') + ')', value: levels[b], cls: BUCKET_CLASS[b] || 'c-info'};
      }), function (b) { return num(b.value) + '  ' + pct(num(b.value), counted); })));
    var jank = {frames: 0, janky: 0, slow: 0, frozen: 0};
    if (scenes.length) {
      scenes.forEach(function (sc) { ['frames', 'janky', 'slow', 'frozen'].forEach(function (k) { jank[k] += num(sc[k]); }); });
    } else {
      M.frames.forEach(function (f) {
        jank.frames++;
        if (f.deadline_missed) jank.janky++;
        if (f.slow) jank.slow++;
        if (f.frozen) jank.frozen++;
      });
    }
    charts.appendChild(chart('Frames by Android jank class',
      hbars([
        {label: 'on time', value: jank.frames - jank.janky, cls: 'c-ok'},
        {label: 'deadline missed', value: jank.janky, cls: 'c-slow'},
        {label: 'slow (> 16 ms at 60 Hz)', value: jank.slow, cls: 'c-bad'},
        {label: 'frozen (>= 700 ms)', value: jank.frozen, cls: 'c-frozen'}
      ], function (b) { return num(b.value) + '  ' + pct(num(b.value), jank.frames); })));
    if (windows.length) {
      charts.appendChild(chart('FPS over time per scene (Matrix windows)', fpsChart(windows), true));
    } else if (scenes.length) {
      var bars = [];
      scenes.forEach(function (sc) {
        bars.push({label: str(sc.scene, '(no scene)') + ' delivered', value: num(sc.delivered_fps), cls: 'c-ok'});
        bars.push({label: str(sc.scene, '(no scene)') + ' Matrix', value: num(sc.fps), cls: 'c-info'});
      });
      charts.appendChild(chart('FPS per scene (whole session)', h('div', null,
        hbars(bars, function (b) { return num(b.value).toFixed(1) + ' fps'; }),
        h('div', {class: 'note'}, 'No Matrix FPS window completed (10 s with more than 20 frames), so there is no FPS-over-time line; these are the per-scene values over the whole session.'))));
    }
    out.push(charts);
    if (total > M.frames.length) out.push(h('div', {class: 'note'}, (total - M.frames.length) + ' on-time frames are not embedded one by one (long session); the bucket and jank charts count them.'));
    return out;
  }

  // ------------------------------------------------------------------ messages section

  function whyNoMessages() {
    if (M.coverage.messages === false) return 'The profile maps no dispatch roles (dispatch.begin / dispatch.end), so looptrace could not see messages.';
    return 'No message was dispatched on the watched threads during the session.';
  }

  function costHistogram(tid) {
    var hist = M.meta.cost_histogram;
    var edges = hist && hist.edges_ns;
    var counts = null;
    if (edges) (hist.threads || []).forEach(function (t) { if (num(t.tid) === tid) counts = t.counts; });
    if (!edges || !counts) {
      edges = [0, 1e6, 4e6, 16e6, 64e6, 256e6, 1e9];
      counts = edges.map(function () { return 0; });
      M.messages.forEach(function (r) {
        if (num(r.tid) !== tid) return;
        var i = edges.length - 1;
        while (i > 0 && num(r.cost_ns) < edges[i]) i--;
        counts[i]++;
      });
    }
    var W = 1000, H = 210, L = 40, B = 40, T = 20;
    var plotH = H - T - B, n = edges.length, bw = (W - L - 10) / n;
    var max = 0;
    counts.forEach(function (c) { max = Math.max(max, num(c)); });
    var svg = s('svg', {viewBox: '0 0 ' + W + ' ' + H, role: 'img', 'aria-label': 'message cost histogram'});
    var total = 0;
    counts.forEach(function (c) { total += num(c); });
    function edgeLabel(v) { return v >= 1e9 ? (v / 1e9) + 's' : v >= 1e6 ? (v / 1e6) + 'ms' : (v / 1e3) + 'us'; }
    for (var i = 0; i < n; i++) {
      var c = num(counts[i]);
      var bh = max ? plotH * Math.sqrt(c / max) : 0;
      var lo = edges[i], hi = i + 1 < n ? edges[i + 1] : Infinity;
      svg.appendChild(s('rect', {class: 'hbar ' + costClass(lo), x: L + i * bw + 1, y: T + plotH - bh, width: bw - 2, height: Math.max(c ? 1 : 0, bh),
        tip: {title: (hi === Infinity ? '>= ' + dur(lo) : dur(lo) + ' .. ' + dur(hi)), lines: [c + ' messages (' + pct(c, total) + ')']}}));
      if (c) svg.appendChild(s('text', {x: L + i * bw + bw / 2 - 8, y: T + plotH - bh - 3}, String(c)));
      svg.appendChild(s('text', {class: 'lane-sub', x: L + i * bw + 2, y: H - B + 14}, edgeLabel(lo)));
    }
    svg.appendChild(s('text', {class: 'lane-sub', x: L, y: H - 6}, 'message cost (bucket lower bounds); bar height: square root of the count'));
    return svg;
  }

  function messagesSection() {
    var summaries = M.of('message_summary');
    var names = M.of('message_name_summary');
    if (!summaries.length && !M.messages.length && !M.unfinished.length) {
      return missing('No messages.', whyNoMessages());
    }
    var dur0 = M.session ? num(M.session.duration_ns) : 0;
    var out = [];
    out.push(h('h3', null, 'Per thread'));
    out.push(dataTable({
      rows: summaries, sortCol: -1,
      columns: [
        {label: 'thread', value: function (r) { return threadLabel(num(r.tid)); }},
        {label: 'count', num: true, value: function (r) { return num(r.count); }},
        {label: 'busy', num: true, value: function (r) { return num(r.busy_ns); }, fmt: function (v) { return dur(v) + ' (' + pct(v, dur0) + ')'; }},
        {label: 'p50', num: true, value: function (r) { return num(r.p50_ns); }, fmt: dur},
        {label: 'p90', num: true, value: function (r) { return num(r.p90_ns); }, fmt: dur},
        {label: 'p99', num: true, value: function (r) { return num(r.p99_ns); }, fmt: dur},
        {label: 'max', num: true, value: function (r) { return num(r.max_ns); }, fmt: dur},
        {label: 'mean', num: true, value: function (r) { return num(r.mean_ns); }, fmt: dur}
      ]
    }));
    var charts = h('div', {class: 'charts'});
    summaries.forEach(function (t) {
      charts.appendChild(chart('Cost distribution, ' + threadLabel(num(t.tid)) + ': p50 ' + dur(t.p50_ns) + ', p90 ' + dur(t.p90_ns) +
        ', p99 ' + dur(t.p99_ns) + ', max ' + dur(t.max_ns), costHistogram(num(t.tid))));
    });
    out.push(charts);
    if (M.unfinished.length) {
      out.push(h('div', {class: 'note'}, M.unfinished.length + ' message(s) still running when the session ended: ' +
        M.unfinished.map(function (r) { return msgName(r) + ' (' + dur(r.cost_ns) + ' so far)'; }).join(', ')));
    }
    out.push(h('h3', null, 'By name (every name; click a column to sort)'));
    out.push(dataTable({
      rows: names, sortCol: 2, filter: true, scroll: true, filterPlaceholder: 'filter names',
      columns: [
        {label: 'name', value: function (r) { return str(r.name, '(unnamed)'); }},
        {label: 'count', num: true, value: function (r) { return num(r.count); }},
        {label: 'total', num: true, value: function (r) { return num(r.total_ns); }, fmt: dur},
        {label: 'p50', num: true, value: function (r) { return num(r.p50_ns); }, fmt: dur},
        {label: 'p90', num: true, value: function (r) { return num(r.p90_ns); }, fmt: dur},
        {label: 'p99', num: true, value: function (r) { return num(r.p99_ns); }, fmt: dur},
        {label: 'max', num: true, value: function (r) { return num(r.max_ns); }, fmt: dur},
        {label: 'mean', num: true, value: function (r) { return num(r.mean_ns); }, fmt: dur}
      ]
    }));
    var slowest = M.messages.concat(M.unfinished).slice().sort(function (a, b) {
      return num(b.cost_ns) - num(a.cost_ns) || num(a.begin_ns) - num(b.begin_ns);
    });
    var limit = Math.max(20, num(M.meta.top_n));
    out.push(h('h3', null, 'Slowest messages'));
    out.push(dataTable({
      rows: slowest.slice(0, limit), sortCol: 2,
      columns: [
        {label: 'begin', num: true, value: function (r) { return num(r.begin_ns); }, fmt: function (v) { return rel(v); }},
        {label: 'thread', value: function (r) { return threadLabel(num(r.tid)); }},
        {label: 'cost', num: true, value: function (r) { return num(r.cost_ns); }, fmt: dur},
        {label: 'CPU', num: true, value: function (r) { return num(r.cpu_ns); }, fmt: function (v, r) { return v ? dur(v) + ' (' + pct(v, num(r.cost_ns)) + ')' : '?'; }},
        {label: 'id', num: true, value: function (r) { return r.msg_id === null || r.msg_id === undefined ? '' : r.msg_id; }},
        {label: 'name', value: function (r) { return msgName(r); }, fmt: function (v, r) {
          var evil = M.evilByMessage[r.tid + ':' + r.begin_ns];
          return evil !== undefined ? h('a', {href: '#evil-' + evil}, v) : v;
        }}
      ]
    }));
    return out;
  }

  // ------------------------------------------------------------------ slow messages

  function slowSection() {
    var evil = M.of('evil_method');
    if (!evil.length) {
      var hint = M.coverage.messages === false ? 'There are no messages.' :
        'No message reached the --evil-threshold (default 700 ms) while its method beats were recorded.';
      if ((M.coverage.roles || []).indexOf('method.enter') < 0) hint += ' The profile maps no method roles, so slow messages would have no call tree.';
      return missing('No slow messages.', hint);
    }
    return evil.map(function (e, i) {
      var cost = num(e.cost_ns), cpu = num(e.cpu_ns);
      return h('details', {class: 'item', id: 'evil-' + i, open: i < 3 ? 'open' : null},
        h('summary', null, h('b', null, msgName(e)), h('span', {class: 'cost'}, dur(cost)),
          ' on ' + threadLabel(num(e.tid)) + ', began ' + rel(e.begin_ns),
          e.matrix_compat ? badge('matrix-compat') : null,
          num(e.beats_overwritten) ? badge(e.beats_overwritten + ' beats overwritten', 'bad') : null,
          num(e.nodes_before_trim) > (e.tree || []).length ? badge('trimmed from ' + e.nodes_before_trim + ' nodes', 'warn') : null),
        h('div', {class: 'body'},
          kv([
            ['cost', dur(cost) + (num(e.stack_cost_ns) > cost ? ' (stack ' + dur(e.stack_cost_ns) + ')' : '')],
            ['CPU', cpu ? dur(cpu) + ' (' + pct(cpu, cost) + '), off-CPU ' + dur(Math.max(0, cost - cpu)) : 'unknown'],
            ['message id', str(e.msg_id, '-')],
            ['stackKey', str(e.stackKey, '-') + (e.stack_key_name ? '  ' + e.stack_key_name : '')],
            ['method ids', str(e.method_id_kind, '?')]
          ].concat((e.nested || []).map(function (n) {
            // A slow message dispatched inside this one: the same event, listed here only.
            return ['nested' + (num(n.depth) > 1 ? ' (depth ' + n.depth + ')' : ''),
                    msgName(n) + ', ' + dur(n.cost_ns) + ', began ' + rel(n.begin_ns)];
          }))),
          e.has_beats === false ? h('div', {class: 'note'}, 'The profile maps no method roles: no call tree.') : null,
          callTrees(e, 'No call tree was recorded for this message.'),
          rawRecord(e)));
    });
  }

  // ------------------------------------------------------------------ janky frames

  function jankSection() {
    // Why there are no frames is said once, by the frames section (or its line in the list of
    // what this report lacks).
    if (!M.frames.length) return missing('No janky frames: there are no frames.');
    var janky = M.frames.filter(function (f) { return isJanky(f) || treeFields(f).length; });
    if (!janky.length) return missing('No janky frame: every frame met its deadline.');
    janky.sort(function (a, b) { return num(b.total_ns) - num(a.total_ns) || num(a.vsync_ns) - num(b.vsync_ns); });
    var out = [];
    out.push(dataTable({
      rows: janky, sortCol: 3, scroll: true,
      rowAttrs: function (f) { return {id: 'frame-' + f.tid + '-' + f.frame_id}; },
      columns: [
        {label: 'frame', num: true, value: function (f) { return num(f.frame_id); }},
        {label: 'at', num: true, value: function (f) { return num(f.vsync_ns); }, fmt: function (v) { return rel(v); }},
        {label: 'scene', value: function (f) { return str(f.scene, '-'); }},
        {label: 'total', num: true, value: function (f) { return num(f.total_ns); }, fmt: dur},
        {label: 'doFrame', num: true, value: function (f) { return num(f.cost_ns); }, fmt: dur},
        {label: 'class', value: function (f) { return frameClassName(f); }},
        {label: 'dropped', num: true, value: function (f) { return num(f.dropped_frames); }},
        {label: 'Matrix', value: function (f) { return str(f.bucket); }},
        {label: 'phases', sort: false, value: function (f) { return f; }, fmt: function (f) { return phaseBar(f); }},
        {label: 'held by messages', num: true, value: function (f) { return num(f.delay_by_messages_ns); }, fmt: dur},
        {label: 'messages in front', sort: false, value: function (f) { return f; }, fmt: function (f) {
          var front = messagesInFront(f);
          if (!front.length) return '-';
          return front.slice(0, 4).map(function (r) { return msgName(r) + ' ' + dur(r.cost_ns); }).join(', ') +
            (front.length > 4 ? ' +' + (front.length - 4) : '');
        }}
      ]
    }));
    var withTrees = janky.filter(function (f) { return treeFields(f).length; });
    if (withTrees.length) {
      out.push(h('h3', null, 'Janky frames with call trees'));
      withTrees.forEach(function (f, i) {
        out.push(h('details', {class: 'item', open: i < 5 ? 'open' : null},
          h('summary', null, h('b', null, 'frame ' + f.frame_id), h('span', {class: 'cost'}, dur(f.total_ns)), ' ' + frameClassName(f) + ' at ' + rel(f.vsync_ns)),
          h('div', {class: 'body'}, frameDetails(f), callTrees(f), rawRecord(f))));
      });
    } else {
      out.push(h('div', {class: 'note'}, 'No janky frame kept a call tree (only frames at least --jank-tree-threshold, default 700 ms, with method beats do).'));
    }
    return out;
  }

  function phaseBar(f) {
    var total = num(f.cost_ns) || 1;
    var bar = h('div', {class: 'stackbar', style: 'width:160px'});
    (f.phases || []).forEach(function (p) {
      bar.appendChild(h('span', {style: 'width:' + (100 * num(p.cost_ns) / total).toFixed(1) + '%;background:var(--phase' + (num(p.phase) % 5) + ')',
        tip: {title: str(p.name), lines: [dur(p.cost_ns)]}}));
    });
    return bar;
  }

  // ------------------------------------------------------------------ startup

  function startupSection() {
    if (!M.startups.length) {
      var roles = M.coverage.roles || [];
      var lifecycle = ['app.create.begin', 'activity.launch', 'activity.focus'].some(function (r) { return roles.indexOf(r) >= 0; });
      return missing('No startup.', lifecycle ? 'No lifecycle milestone fired during the session (attach with `looptrace run` to see a cold start).' :
        'The profile maps no lifecycle roles (app.create.*, activity.launch, activity.focus, fully.drawn).');
    }
    var out = [];
    M.startups.forEach(function (st) {
      var warm = !!st.is_warm_start_up;
      var title = warm ? 'Warm start of ' + str(st.application_create_scene, '?') : 'Cold start';
      var rows = warm ? [
        ['launch -> focus', dur(st.warm_ns)],
        ['launch', st.launch_ns ? rel(st.launch_ns) : '-'],
        ['first frame', st.first_frame_ns ? rel(st.first_frame_ns) : 'never'],
        ['focus', st.focus_ns ? rel(st.focus_ns) : 'never']
      ] : [
        ['exec -> application create (Matrix cannot see)', dur(st.exec_to_app_create_ns)],
        ['application create (Matrix application_create)', dur(st.application_create_ns)],
        ['first screen (Matrix first_activity_create)', dur(st.first_screen_ns)],
        ['cold start (Matrix startup_duration)', dur(st.cold_ns) + (st.care_scene ? ' to ' + st.care_scene : '')],
        ['cold start from exec', dur(st.cold_from_exec_ns)],
        ['TTID-like (to the first frame)', dur(st.ttid_ns)],
        ['TTFD-like (to the frame after fully drawn)', dur(st.ttfd_ns)]
      ];
      out.push(h('details', {class: 'item', open: 'open'},
        h('summary', null, h('b', null, title), h('span', {class: 'cost'}, dur(warm ? st.warm_ns : st.cold_ns)),
          st.over_threshold ? badge('over the Matrix threshold', 'bad') : null,
          st.vitals_excessive ? badge('Android vitals: excessive', 'bad') : null,
          !warm && st.cold_complete === false ? badge('incomplete', 'warn') : null),
        h('div', {class: 'body'},
          (st.milestones || []).length ? milestoneStrip(st.milestones) : null,
          kv(rows),
          (st.missing || []).length ? h('div', {class: 'note'}, 'Never reached: ' + st.missing.join(', ')) : null,
          callTrees(st, st.over_threshold ? 'No call tree was recorded.' : 'No call tree: the start stayed under the threshold (--startup-threshold / --warm-startup-threshold).'),
          rawRecord(st))));
    });
    M.of('startup_evil_method').forEach(function (e) {
      out.push(h('details', {class: 'item'},
        h('summary', null, h('b', null, 'Startup call tree (Matrix STARTUP, subType ' + e.subType + ')'), h('span', {class: 'cost'}, (num(e.cost) / 1000).toFixed(3) + ' s')),
        h('div', {class: 'body'}, callTrees(e, 'No call tree.'), rawRecord(e))));
    });
    return out;
  }

  function milestoneStrip(list) {
    var W = 1000, H = 74;
    var lo = Infinity, hi = -Infinity;
    list.forEach(function (ms) { lo = Math.min(lo, num(ms.ts_ns)); hi = Math.max(hi, num(ms.ts_ns)); });
    if (hi <= lo) hi = lo + 1;
    var x = function (t) { return 20 + (W - 200) * (t - lo) / (hi - lo); };
    var svg = s('svg', {viewBox: '0 0 ' + W + ' ' + H, role: 'img', 'aria-label': 'startup milestones', class: 'milestones'});
    svg.appendChild(s('line', {class: 'grid', x1: 20, x2: W - 180, y1: 37, y2: 37}));
    list.forEach(function (ms, i) {
      var mx = x(num(ms.ts_ns));
      var up = i % 2 === 0;
      svg.appendChild(s('line', {class: 'milestone', x1: mx, x2: mx, y1: up ? 22 : 37, y2: up ? 37 : 52}));
      svg.appendChild(s('circle', {class: 'point', cx: mx, cy: 37, r: 4, fill: 'var(--info)',
        tip: {title: ms.name + (ms.warm ? ' (warm)' : ''), lines: [rel(ms.ts_ns), '+' + dur(num(ms.ts_ns) - lo) + ' after ' + list[0].name, str(ms.activity)]}}));
      svg.appendChild(s('text', {class: 'milestone-label', x: mx + 3, y: up ? 18 : 64}, ms.name + ' +' + dur(num(ms.ts_ns) - lo)));
    });
    return svg;
  }

