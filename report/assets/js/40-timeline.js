  // ------------------------------------------------------------------ timeline

  var MAX_BARS = 4000;  // bars drawn one by one per lane and view; the rest are aggregated

  function timelineSection() {
    var hasEvents = M.stalls.length || M.signals.length || M.spanLags.length || M.barriers.length ||
      milestones().length;
    var tm = M.timelineMeta;
    if (!M.messages.length && !M.unfinished.length && !M.frames.length && !hasEvents &&
        !(tm.message_buckets || []).length && !(tm.frame_buckets || []).length) {
      return missing('Nothing to draw on the timeline: the session has no messages, frames, stalls or milestones.',
        whyNoMessages());
    }
    return new Timeline().root;
  }

  function milestones() {
    var out = [];
    M.startups.forEach(function (st) {
      (st.milestones || []).forEach(function (ms) { if (num(ms.ts_ns)) out.push(ms); });
    });
    return out.sort(function (a, b) { return num(a.ts_ns) - num(b.ts_ns); });
  }

  function Timeline() {
    var self = this;
    var GUTTER = 150, ROW = 16, AXIS = 26;
    var v0 = M.t0, v1 = M.t1;
    var width = 1200;
    var selected = null;

    // Per-thread item lists, sorted by begin.
    var msgsByTid = {}, framesByTid = {}, msgBuckets = {}, frameBuckets = {};
    M.messages.forEach(function (r) { (msgsByTid[r.tid] = msgsByTid[r.tid] || []).push(r); });
    M.unfinished.forEach(function (r) { (msgsByTid[r.tid] = msgsByTid[r.tid] || []).push(r); });
    Object.keys(msgsByTid).forEach(function (t) { msgsByTid[t].sort(byBegin); });
    M.frames.forEach(function (r) { (framesByTid[r.tid] = framesByTid[r.tid] || []).push(r); });
    var bucketNs = num(M.timelineMeta.bucket_ns) || 1;
    (M.timelineMeta.message_buckets || []).forEach(function (b) { (msgBuckets[b[0]] = msgBuckets[b[0]] || []).push(b); });
    (M.timelineMeta.frame_buckets || []).forEach(function (b) { (frameBuckets[b[0]] = frameBuckets[b[0]] || []).push(b); });

    var lanes = [];
    M.tids.forEach(function (tid) {
      var msgs = msgsByTid[tid] || [];
      if (msgs.length || msgBuckets[tid]) {
        var depth = 0;
        msgs.forEach(function (r) { depth = Math.max(depth, num(r.depth)); });
        var rows = Math.min(depth, 3) + 1;
        lanes.push({type: 'msg', tid: tid, rows: rows, h: rows * (ROW + 2) + 10,
          label: threadLabel(tid), sub: 'messages'});
      }
      if ((framesByTid[tid] || []).length || frameBuckets[tid]) {
        lanes.push({type: 'frame', tid: tid, h: ROW + 20, label: threadLabel(tid), sub: 'frames + phases'});
      }
    });
    var marks = milestones();
    if (M.stalls.length || M.signals.length || M.spanLags.length || M.barriers.length || marks.length) {
      lanes.push({type: 'events', h: 50, label: 'stalls & startup', sub: 'ANR/LAG, SIGQUIT, lags, milestones'});
    }
    var height = AXIS;
    lanes.forEach(function (l) { l.y = height; height += l.h; });
    height += 4;

    var svg = s('svg', {class: 'timeline', height: height, width: width, role: 'img', 'aria-label': 'timeline'});
    var box = h('div', {class: 'timeline-box', tabindex: '0',
      title: ''}, svg);
    var rangeLabel = h('span', {class: 'muted'});
    var details = h('div', {class: 'details-panel'}, h('span', {class: 'muted'}, 'Click a bar for details; hover for a summary.'));
    var legend = h('div', {class: 'legend'},
      h('span', null, h('span', {class: 'sw c-ok'}), 'message < 16 ms'),
      h('span', null, h('span', {class: 'sw c-warn'}), '16-100 ms'),
      h('span', null, h('span', {class: 'sw c-slow'}), '100-700 ms'),
      h('span', null, h('span', {class: 'sw c-bad'}), '>= 700 ms'),
      h('span', null, h('span', {class: 'sw gap'}), 'between messages (idle / poll)'),
      h('span', null, h('span', {class: 'sw agg'}), 'pale: merged at this zoom'),
      h('span', null, 'frames: '), h('span', null, h('span', {class: 'sw c-ok'}), 'on time'),
      h('span', null, h('span', {class: 'sw c-slow'}), 'deadline missed'),
      h('span', null, h('span', {class: 'sw c-bad'}), 'slow'),
      h('span', null, h('span', {class: 'sw c-frozen'}), 'frozen'),
      PHASES.map(function (p, i) { return h('span', null, h('span', {class: 'sw ph' + i}), p); }),
      h('span', null, h('span', {class: 'sw anr'}), 'ANR'),
      h('span', null, h('span', {class: 'sw lag'}), 'LAG'),
      h('span', null, h('span', {class: 'sw milestone'}), 'milestone'));

    function zoomBy(factor, atX) {
      var plotW = width - GUTTER;
      var frac = atX === undefined ? 0.5 : Math.min(1, Math.max(0, (atX - GUTTER) / plotW));
      var at = v0 + (v1 - v0) * frac;
      setView(at - (at - v0) * factor, at + (v1 - at) * factor);
    }
    function panBy(dt) { setView(v0 + dt, v1 + dt); }
    function setView(a, b) {
      var span = M.t1 - M.t0;
      var minSpan = 10000;  // 10 us
      if (b - a < minSpan) {
        var mid = (a + b) / 2;
        a = mid - minSpan / 2;
        b = mid + minSpan / 2;
      }
      if (b - a > span * 1.2) {
        a = M.t0 - span * 0.1;
        b = M.t1 + span * 0.1;
      }
      var lo = M.t0 - span * 0.1, hi = M.t1 + span * 0.1;
      if (a < lo) { b += lo - a; a = lo; }
      if (b > hi) { a -= b - hi; b = hi; }
      v0 = a;
      v1 = b;
      schedule();
    }
    // One redraw per frame; the timer covers pages that get no animation frames (a
    // background tab, a headless browser dumping the DOM).
    var pending = false;
    function schedule() {
      if (pending) return;
      pending = true;
      var run = function () {
        if (!pending) return;
        pending = false;
        draw();
      };
      window.requestAnimationFrame(run);
      window.setTimeout(run, 100);
    }

    var tools = h('div', {class: 'timeline-tools'},
      h('button', {type: 'button', onclick: function () { zoomBy(0.5); }, title: 'zoom in (W)'}, 'Zoom in'),
      h('button', {type: 'button', onclick: function () { zoomBy(2); }, title: 'zoom out (S)'}, 'Zoom out'),
      h('button', {type: 'button', onclick: function () { setView(M.t0, M.t1); }, title: 'whole session (0)'}, 'Fit session'),
      rangeLabel,
      h('span', {class: 'note'}, 'Ctrl+wheel or W/S zoom, drag or A/D pan, Shift+drag zooms to a range, double-click fits a bar.'));

    // ---- drawing
    function x(ts) { return GUTTER + (ts - v0) / (v1 - v0) * (width - GUTTER); }

    function niceStep(raw) {
      var p = Math.pow(10, Math.floor(Math.log10(raw)));
      var f = raw / p;
      return (f <= 1 ? 1 : f <= 2 ? 2 : f <= 5 ? 5 : 10) * p;
    }

    function tickLabel(t, step) {
      var d = t - M.t0;
      if (step >= 1e9) return (d / 1e9).toFixed(0) + ' s';
      if (step >= 1e8) return (d / 1e9).toFixed(1) + ' s';
      if (step >= 1e7) return (d / 1e9).toFixed(2) + ' s';
      if (step >= 1e6) return (d / 1e6).toFixed(0) + ' ms';
      if (step >= 1e5) return (d / 1e6).toFixed(1) + ' ms';
      if (step >= 1e4) return (d / 1e6).toFixed(2) + ' ms';
      return (d / 1e3).toFixed(0) + ' us';
    }

    function draw() {
      width = Math.max(600, box.clientWidth || 1200);
      svg.setAttribute('width', width);
      clear(svg);
      var plotW = width - GUTTER;
      var defs = s('defs', null, s('clipPath', {id: 'lt-clip'},
        s('rect', {x: GUTTER, y: 0, width: plotW, height: height})));
      svg.appendChild(defs);
      // Axis and grid.
      var axis = s('g', {class: 'axis'});
      var step = niceStep((v1 - v0) / Math.max(2, plotW / 110));
      for (var t = Math.ceil((v0 - M.t0) / step) * step + M.t0; t <= v1; t += step) {
        var tx = x(t);
        axis.appendChild(s('line', {class: 'grid', x1: tx, x2: tx, y1: AXIS - 6, y2: height}));
        if (tx < width - 40) axis.appendChild(s('text', {x: tx + 3, y: AXIS - 10}, tickLabel(t, step)));
      }
      svg.appendChild(axis);
      // Lanes.
      lanes.forEach(function (lane) {
        svg.appendChild(s('rect', {class: 'lane-bg', x: 0, y: lane.y, width: GUTTER, height: lane.h}));
        svg.appendChild(s('text', {class: 'lane-label', x: 8, y: lane.y + 14}, lane.label));
        svg.appendChild(s('text', {class: 'lane-sub', x: 8, y: lane.y + 27}, lane.sub));
        svg.appendChild(s('line', {class: 'lane-sep', x1: 0, x2: width, y1: lane.y + lane.h, y2: lane.y + lane.h}));
        var g = s('g', {'clip-path': 'url(#lt-clip)', class: 'lane lane-' + lane.type});
        if (lane.type === 'msg') drawMessages(g, lane);
        else if (lane.type === 'frame') drawFrames(g, lane);
        else drawEvents(g, lane);
        svg.appendChild(g);
      });
      // Milestones across every lane.
      var mg = s('g', {'clip-path': 'url(#lt-clip)'});
      marks.forEach(function (ms) {
        var mx = x(num(ms.ts_ns));
        if (mx < GUTTER || mx > width) return;
        mg.appendChild(s('line', {class: 'milestone', x1: mx, x2: mx, y1: AXIS - 4, y2: height,
          tip: {title: ms.name + (ms.warm ? ' (warm)' : ''), lines: [rel(ms.ts_ns), str(ms.activity)]}}));
      });
      svg.appendChild(mg);
      if (brush) {
        var bx0 = Math.min(brush.a, brush.b), bx1 = Math.max(brush.a, brush.b);
        svg.appendChild(s('rect', {class: 'brush', x: bx0, y: 0, width: bx1 - bx0, height: height}));
      }
      rangeLabel.textContent = 'view ' + rel(v0) + ' .. ' + rel(v1) + ' (' + dur(v1 - v0) + ')';
    }

    function visible(list, beginKey) {
      return list.filter(function (r) { return num(r.end_ns) >= v0 && num(r[beginKey]) <= v1; });
    }

    // Bars one by one while few enough; else the widest one by one and the rest merged
    // into one grey bar per 2 px column and row.
    function drawBars(g, items, opts) {
      var one = items, merged = [];
      if (items.length > MAX_BARS) {
        var wide = [], narrow = [];
        items.forEach(function (r) { (x(opts.end(r)) - x(opts.begin(r)) >= 1.5 ? wide : narrow).push(r); });
        wide.sort(function (a, b) { return (opts.end(b) - opts.begin(b)) - (opts.end(a) - opts.begin(a)); });
        one = wide.slice(0, MAX_BARS);
        merged = narrow.concat(wide.slice(MAX_BARS));
      }
      var cols = {};
      merged.forEach(function (r) {
        var key = opts.row(r) + ':' + Math.floor(x(opts.begin(r)) / 2);
        var c = cols[key] || (cols[key] = {row: opts.row(r), x: Math.floor(x(opts.begin(r)) / 2) * 2, end: 0, n: 0, max: 0, worst: r});
        c.n++;
        c.end = Math.max(c.end, x(opts.end(r)));
        if (opts.end(r) - opts.begin(r) > c.max) {
          c.max = opts.end(r) - opts.begin(r);
          c.worst = r;
        }
      });
      Object.keys(cols).forEach(function (k) {
        var c = cols[k];
        g.appendChild(s('rect', {class: opts.aggClass + ' ' + opts.colour(c.worst), x: c.x, y: opts.y(c.row), width: Math.max(2, c.end - c.x),
          height: opts.h, tip: {title: c.n + ' ' + opts.what + ' merged at this zoom', lines: ['longest ' + dur(c.max), 'zoom in to see them one by one']}}));
      });
      one.forEach(function (r) { opts.drawOne(g, r); });
      return one.length;
    }

    function drawMessages(g, lane) {
      var msgs = visible(msgsByTid[lane.tid] || [], 'begin_ns');
      var rowY = function (row) { return lane.y + 5 + row * (ROW + 2); };
      // Gaps between top-level messages: idle or polling (no message running).
      var top = msgs.filter(function (r) { return !num(r.depth); });
      var gaps = [];
      for (var i = 1; i < top.length; i++) {
        var a = num(top[i - 1].end_ns), b = num(top[i].begin_ns);
        if (x(b) - x(a) >= 2) gaps.push([a, b]);
      }
      if (gaps.length > 3000) gaps = gaps.sort(function (p, q) { return (q[1] - q[0]) - (p[1] - p[0]); }).slice(0, 3000);
      gaps.forEach(function (gp) {
        g.appendChild(s('rect', {class: 'gap', x: x(gp[0]), y: rowY(0), width: x(gp[1]) - x(gp[0]), height: ROW,
          tip: {title: 'no message running: idle or polling', lines: [dur(gp[1] - gp[0]), rel(gp[0]) + ' .. ' + rel(gp[1])]}}));
      });
      // Summarised messages of a long session.
      (msgBuckets[lane.tid] || []).forEach(function (b) {
        var a = M.t0 + num(b[1]) * bucketNs, e = a + bucketNs;
        if (e < v0 || a > v1) return;
        g.appendChild(s('rect', {class: 'msg-agg summarised ' + costClass(b[4]), x: x(a), y: rowY(0), width: Math.max(1, x(e) - x(a)), height: ROW,
          tip: {title: num(b[2]) + ' short messages (not embedded one by one)', lines: ['total ' + dur(b[3]), 'longest ' + dur(b[4])]}}));
      });
      drawBars(g, msgs, {
        begin: function (r) { return num(r.begin_ns); },
        end: function (r) { return num(r.end_ns); },
        row: function (r) { return Math.min(num(r.depth), lane.rows - 1); },
        y: rowY, h: ROW, aggClass: 'msg-agg', what: 'messages',
        colour: function (r) { return costClass(r.cost_ns); },
        drawOne: function (gg, r) {
          var bx = x(num(r.begin_ns)), w = Math.max(1, x(num(r.end_ns)) - bx);
          var unfinished = r.type === 'unfinished_message';
          var rect = s('rect', {
            class: 'msg ' + costClass(r.cost_ns) + (unfinished ? ' unfinished' : '') + (selected === r ? ' selected' : ''),
            x: bx.toFixed(2), y: rowY(Math.min(num(r.depth), lane.rows - 1)), width: w.toFixed(2), height: ROW,
            'data-tid': r.tid, 'data-msg-id': r.msg_id === null || r.msg_id === undefined ? null : r.msg_id,
            tip: function () { return messageTip(r); }, item: {kind: 'message', r: r}
          });
          gg.appendChild(rect);
          if (w > 40) {
            var chars = Math.floor((w - 6) / 6.2);
            var name = msgName(r);
            gg.appendChild(s('text', {x: (bx + 3).toFixed(2), y: rowY(Math.min(num(r.depth), lane.rows - 1)) + ROW - 4,
              class: 'bar-label'}, name.length > chars ? name.slice(0, Math.max(1, chars - 1)) + '\u2026' : name));
          }
        }
      });
    }

    function drawFrames(g, lane) {
      var frames = visible(framesByTid[lane.tid] || [], 'intended_vsync_ns');
      var y = lane.y + 5;
      (frameBuckets[lane.tid] || []).forEach(function (b) {
        var a = M.t0 + num(b[1]) * bucketNs, e = a + bucketNs;
        if (e < v0 || a > v1) return;
        g.appendChild(s('rect', {class: 'frame-agg summarised ' + (num(b[5]) ? 'c-slow' : 'c-ok'), x: x(a), y: y, width: Math.max(1, x(e) - x(a)), height: ROW,
          tip: {title: num(b[2]) + ' frames (not embedded one by one)', lines: ['longest ' + dur(b[4]), num(b[5]) + ' janky']}}));
      });
      drawBars(g, frames, {
        begin: function (r) { return num(r.vsync_ns); },
        end: function (r) { return num(r.end_ns); },
        row: function () { return 0; },
        y: function () { return y; }, h: ROW, aggClass: 'frame-agg', what: 'frames',
        colour: frameClass,
        drawOne: function (gg, f) {
          var iv = num(f.intended_vsync_ns), vs = num(f.vsync_ns);
          if (vs > iv && x(vs) - x(iv) >= 1) {
            gg.appendChild(s('rect', {class: 'skipped', x: x(iv), y: y, width: x(vs) - x(iv), height: ROW,
              tip: {title: 'frame ' + f.frame_id + ': vsync skipped', lines: [num(f.skipped_frames) + ' skipped vsyncs', 'the thread was busy when the vsync came']}}));
          }
          var fx = x(vs), w = Math.max(1, x(num(f.end_ns)) - fx);
          gg.appendChild(s('rect', {
            class: 'frame ' + frameClass(f) + (selected === f ? ' selected' : ''), x: fx.toFixed(2), y: y,
            width: w.toFixed(2), height: ROW, 'data-frame-id': f.frame_id, 'data-tid': f.tid,
            tip: function () { return frameTip(f); }, item: {kind: 'frame', r: f}
          }));
          if (w >= 4) {
            (f.phases || []).forEach(function (p) {
              var px = x(num(p.begin_ns)), pw = x(num(p.end_ns)) - px;
              if (pw < 0.5) return;
              gg.appendChild(s('rect', {class: 'phase ph' + (num(p.phase) % 5), x: px.toFixed(2), y: y + ROW + 2,
                width: pw.toFixed(2), height: 7,
                tip: {title: str(p.name, 'phase ' + p.phase) + ' (frame ' + f.frame_id + ')', lines: [dur(p.cost_ns)]}}));
            });
          }
        }
      });
    }

    function triangle(cx, y) {
      return 'M' + (cx - 6) + ',' + y + 'L' + (cx + 6) + ',' + y + 'L' + cx + ',' + (y + 10) + 'Z';
    }

    function drawEvents(g, lane) {
      var y = lane.y + 4;
      function span(cls, a, b, row, tip, item) {
        if (b < v0 || a > v1) return;
        g.appendChild(s('rect', {class: 'span ' + cls, x: x(a), y: y + 12 + row * 8, width: Math.max(2, x(b) - x(a)),
          height: 6, tip: tip, item: item}));
      }
      M.stalls.forEach(function (st, i) {
        var cls = st.type === 'anr' ? 'anr' : 'lag';
        var tip = function () { return stallTip(st); };
        span(cls, num(st.begin_ns), num(st.end_ns), st.type === 'anr' ? 0 : 1, tip, {kind: 'stall', r: st, index: i});
        var sx = x(num(st.snapshot_ns));
        if (sx >= GUTTER && sx <= width) {
          g.appendChild(s('path', {class: 'marker ' + cls, d: triangle(sx, y), tip: tip, item: {kind: 'stall', r: st, index: i}}));
        }
      });
      M.signals.forEach(function (sg) {
        var sx = x(num(sg.ts_ns));
        if (sx < GUTTER || sx > width) return;
        g.appendChild(s('path', {class: 'marker signal', d: triangle(sx, y),
          tip: {title: (sg.type === 'self_sigquit' ? 'SIGQUIT sent by the process itself' : 'SIGQUIT (ANR declared)'),
            lines: [rel(sg.ts_ns), 'from pid ' + sg.sender_pid + ' "' + str(sg.sender_comm) + '"',
              sg.stalled ? 'main thread running "' + str(sg.name) + '" for ' + dur(sg.running_ns) : 'main thread not in a message']}}));
      });
      M.spanLags.forEach(function (l) {
        span('lagspan', num(l.begin_ns), num(l.end_ns), 2,
          {title: l.type + ': ' + str(l.name), lines: [dur(l.cost_ns), rel(l.begin_ns)]});
      });
      M.barriers.forEach(function (b) {
        span('barrier', num(b.begin_ns), num(b.end_ns), 2,
          {title: 'sync barrier ' + b.token + ' left standing', lines: [dur(b.duration_ns), b.sync_messages_enqueued + ' sync messages starved', b.removed ? 'removed' : 'never removed']});
      });
      var freeX = -1e9;  // labels never overlap: one is skipped while the previous one runs
      marks.forEach(function (ms) {
        var mx = x(num(ms.ts_ns));
        if (mx < GUTTER || mx > width || mx < freeX) return;
        freeX = mx + 6 + ms.name.length * 5.6;
        g.appendChild(s('text', {class: 'milestone-label', x: mx + 3, y: lane.y + lane.h - 4}, ms.name));
      });
    }

    // ---- interaction
    var drag = null, brush = null;
    box.addEventListener('wheel', function (e) {
      var rect = svg.getBoundingClientRect();
      if (e.ctrlKey || e.metaKey || e.altKey) {
        e.preventDefault();
        zoomBy(Math.exp(e.deltaY * 0.002), e.clientX - rect.left);
      } else if (e.shiftKey || Math.abs(e.deltaX) > Math.abs(e.deltaY)) {
        e.preventDefault();
        var d = e.deltaX || e.deltaY;
        panBy(d / (width - GUTTER) * (v1 - v0));
      }
    }, {passive: false});
    box.addEventListener('mousedown', function (e) {
      if (e.button !== 0) return;
      var rect = svg.getBoundingClientRect();
      drag = {x: e.clientX, v0: v0, v1: v1, moved: false, brush: e.shiftKey, target: e.target};
      if (e.shiftKey) brush = {a: e.clientX - rect.left, b: e.clientX - rect.left};
      box.classList.add('dragging');
      e.preventDefault();
      box.focus();
    });
    window.addEventListener('mousemove', function (e) {
      if (!drag) return;
      var dx = e.clientX - drag.x;
      if (Math.abs(dx) > 3) drag.moved = true;
      if (drag.brush) {
        brush.b = e.clientX - svg.getBoundingClientRect().left;
        schedule();
      } else if (drag.moved) {
        var dt = -dx / (width - GUTTER) * (drag.v1 - drag.v0);
        v0 = drag.v0 + dt;
        v1 = drag.v1 + dt;
        setView(v0, v1);
      }
    });
    window.addEventListener('mouseup', function () {
      if (!drag) return;
      var d = drag;
      drag = null;
      box.classList.remove('dragging');
      if (d.brush && brush) {
        var a = Math.min(brush.a, brush.b), b = Math.max(brush.a, brush.b);
        brush = null;
        if (b - a > 3) {
          var ta = v0 + (a - GUTTER) / (width - GUTTER) * (v1 - v0);
          var tb = v0 + (b - GUTTER) / (width - GUTTER) * (v1 - v0);
          setView(ta, tb);
        } else {
          schedule();
        }
        return;
      }
      if (!d.moved) select(d.target && d.target.__item ? d.target.__item : null);
    });
    box.addEventListener('dblclick', function (e) {
      var it = e.target.__item;
      if (!it) return;
      var a = num(it.r.begin_ns), b = num(it.r.end_ns);
      if (it.kind === 'frame') a = Math.min(num(it.r.intended_vsync_ns), num(it.r.vsync_ns));
      var pad = Math.max((b - a) * 0.15, 1e5);
      setView(a - pad, b + pad);
    });
    box.addEventListener('keydown', function (e) {
      var k = e.key.toLowerCase();
      if (k === 'w') zoomBy(0.7);
      else if (k === 's') zoomBy(1 / 0.7);
      else if (k === 'a') panBy(-(v1 - v0) * 0.15);
      else if (k === 'd') panBy((v1 - v0) * 0.15);
      else if (k === '0' || k === 'escape') setView(M.t0, M.t1);
      else return;
      e.preventDefault();
    });
    window.addEventListener('resize', schedule);

    function select(item) {
      selected = item ? item.r : null;
      clear(details);
      if (!item) {
        details.appendChild(h('span', {class: 'muted'}, 'Click a bar for details; hover for a summary.'));
      } else if (item.kind === 'message') {
        details.appendChild(messageDetails(item.r));
      } else if (item.kind === 'frame') {
        details.appendChild(frameDetails(item.r));
      } else if (item.kind === 'stall') {
        var t = stallTip(item.r);
        details.appendChild(h('div', null, h('b', null, t.title), t.lines.map(function (l) { return h('div', null, l); }),
          h('a', {href: '#stall-' + item.index}, 'open the report')));
      }
      schedule();
    }

    this.root = h('div', null, tools, box, legend, details);
    // Drawn now, and again once the box is in the document (its width is known then).
    draw();
    schedule();
    self.draw = draw;
  }

