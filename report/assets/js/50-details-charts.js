  function offCpuLines(r) {
    var lines = [];
    var cost = num(r.cost_ns), cpu = num(r.cpu_ns);
    if (cpu) lines.push('CPU ' + dur(cpu) + ' (' + pct(cpu, cost) + '), off-CPU ' + dur(Math.max(0, cost - cpu)));
    else lines.push('CPU time unknown');
    var st = M.stallByMessage[r.tid + ':' + r.begin_ns];
    if (st && (st.off_cpu_by_reason || []).length) {
      lines.push('off-CPU: ' + st.off_cpu_by_reason.map(function (x) { return x.reason + ' ' + dur(x.total_ns); }).join(', '));
    }
    return lines;
  }

  function messageTip(r) {
    var lines = [dur(r.cost_ns) + (r.type === 'unfinished_message' ? ' (still running at the end)' : ''),
      rel(r.begin_ns) + ' on ' + threadLabel(num(r.tid)) + (r.msg_id !== null && r.msg_id !== undefined ? ', id ' + r.msg_id : '') +
      (num(r.depth) ? ', nested depth ' + r.depth : '')];
    return {title: msgName(r), lines: lines.concat(offCpuLines(r))};
  }

  function messageDetails(r) {
    var st = M.stallByMessage[r.tid + ':' + r.begin_ns];
    var evil = M.evilByMessage[r.tid + ':' + r.begin_ns];
    return h('div', null, h('b', null, msgName(r)),
      h('dl', null,
        h('dt', null, 'cost'), h('dd', null, dur(r.cost_ns)),
        h('dt', null, 'began'), h('dd', null, rel(r.begin_ns)),
        h('dt', null, 'thread'), h('dd', null, threadLabel(num(r.tid))),
        h('dt', null, 'id'), h('dd', null, str(r.msg_id, '-')),
        h('dt', null, 'CPU'), h('dd', null, offCpuLines(r).join('; '))),
      evil !== undefined ? h('a', {href: '#evil-' + evil}, 'call tree (slow message) ') : null,
      st ? h('a', {href: '#stall-' + M.stalls.indexOf(st)}, st.type.toUpperCase() + ' report') : null);
  }

  function frameTip(f) {
    var lines = [frameClassName(f) + ': total ' + dur(f.total_ns) + ' (doFrame ' + dur(f.cost_ns) + ')',
      'dropped ' + num(f.dropped_frames) + ' (Matrix ' + num(f.matrix_dropped).toFixed(2) + ', ' + str(f.bucket) + ')',
      rel(f.vsync_ns) + (f.scene ? ' in ' + f.scene : '')];
    if (num(f.skipped_frames)) lines.push(f.skipped_frames + ' vsyncs skipped before it');
    if (num(f.delay_by_messages_ns)) lines.push('messages held the thread ' + dur(f.delay_by_messages_ns) + ' before it');
    (f.phases || []).forEach(function (p) { lines.push(str(p.name, 'phase ' + p.phase) + ' ' + dur(p.cost_ns)); });
    return {title: 'frame ' + f.frame_id, lines: lines};
  }

  // Messages on the frame's thread that ran between its vsync and its doFrame.
  function messagesInFront(f) {
    var a = num(f.intended_vsync_ns), b = num(f.begin_ns);
    var list = M.messagesByTid[num(f.tid)] || [];
    // First message beginning at or after the vsync, then back over the few that may
    // have begun before it and still run (top-level messages do not overlap).
    var lo = 0, hi = list.length;
    while (lo < hi) {
      var mid = (lo + hi) >> 1;
      if (num(list[mid].begin_ns) < a) lo = mid + 1;
      else hi = mid;
    }
    var out = [];
    for (var i = Math.max(0, lo - 4); i < list.length && num(list[i].begin_ns) < b; i++) {
      var r = list[i];
      if (num(r.begin_ns) <= num(f.begin_ns) && num(r.end_ns) >= num(f.end_ns)) continue;  // its own doFrame
      if (num(r.end_ns) > a) out.push(r);
    }
    return out;
  }

  function frameDetails(f) {
    var front = messagesInFront(f);
    return h('div', null, h('b', null, 'frame ' + f.frame_id + ' '), badge(frameClassName(f), isJanky(f) ? 'bad' : 'ok'),
      h('dl', null,
        h('dt', null, 'total (end - vsync)'), h('dd', null, dur(f.total_ns)),
        h('dt', null, 'doFrame'), h('dd', null, dur(f.cost_ns)),
        h('dt', null, 'vsync'), h('dd', null, rel(f.vsync_ns) + ' (interval ' + dur(f.interval_ns) + ', ' + num(f.refresh_hz).toFixed(1) + ' Hz)'),
        h('dt', null, 'dropped'), h('dd', null, num(f.dropped_frames) + ' (Android), ' + num(f.matrix_dropped).toFixed(2) + ' ' + str(f.bucket) + ' (Matrix)'),
        h('dt', null, 'phases'), h('dd', null, (f.phases || []).map(function (p) { return str(p.name) + ' ' + dur(p.cost_ns); }).join(', ') || '-'),
        h('dt', null, 'in front of it'), h('dd', null, front.length ?
          front.map(function (r) { return msgName(r) + ' (' + dur(r.cost_ns) + ')'; }).join(', ') : 'no other message')),
      isJanky(f) ? h('a', {href: '#frame-' + f.tid + '-' + f.frame_id}, 'in the janky frames list') : null);
  }

  function stallTip(st) {
    var lines = [st.type.toUpperCase() + ' snapshot at ' + rel(st.snapshot_ns) + ' (threshold ' + dur(st.threshold_ns) + ')',
      'stuck: ' + str(st.stuck_reason, '?'), 'cost ' + dur(st.cost_ns) + (st.finished ? '' : ' (never finished)')];
    var holder = lockHolder(st);
    if (holder) lines.push('waiting on a lock held by tid ' + holder.tid + ' "' + holder.name + '"');
    return {title: msgName(st), lines: lines};
  }

  // ------------------------------------------------------------------ charts

  function chart(title, body, wide) {
    return h('div', {class: 'chart' + (wide ? ' wide' : '')}, h('h3', null, title), body);
  }

  // Horizontal bars: [{label, value, cls, tip}].
  function hbars(bars, valueText) {
    var W = 600, ROWH = 22, LABEL = 170;
    var max = 0;
    bars.forEach(function (b) { max = Math.max(max, num(b.value)); });
    var svg = s('svg', {viewBox: '0 0 ' + W + ' ' + (bars.length * ROWH + 4), role: 'img'});
    bars.forEach(function (b, i) {
      var w = max ? (W - LABEL - 110) * num(b.value) / max : 0;
      svg.appendChild(s('text', {x: 4, y: i * ROWH + 15}, b.label));
      svg.appendChild(s('rect', {class: 'hbar ' + (b.cls || 'c-info'), x: LABEL, y: i * ROWH + 4, width: Math.max(w, num(b.value) ? 1 : 0),
        height: ROWH - 8, tip: b.tip || {title: b.label, lines: [valueText(b)]}}));
      svg.appendChild(s('text', {x: LABEL + w + 6, y: i * ROWH + 15}, valueText(b)));
    });
    return svg;
  }

  function logTicks(lo, hi) {
    var out = [];
    [0.01, 0.02, 0.05, 0.1, 0.2, 0.5, 1, 2, 5, 10, 20, 50, 100, 200, 500, 1000, 2000, 5000, 10000, 20000, 50000].forEach(function (ms) {
      if (ms * 1e6 >= lo && ms * 1e6 <= hi) out.push(ms * 1e6);
    });
    return out;
  }

  // Frame time (end - vsync) per frame on a log scale, with the refresh interval (the
  // deadline) as a dashed line.
  function frameTimeChart(frames) {
    var W = 1000, H = 240, L = 56, R = 10, T = 10, B = 26;
    var plotW = W - L - R, plotH = H - T - B;
    var maxT = 0, minT = Infinity;
    frames.forEach(function (f) {
      maxT = Math.max(maxT, num(f.total_ns), num(f.interval_ns));
      if (num(f.total_ns) > 0) minT = Math.min(minT, num(f.total_ns));
    });
    var lo = Math.max(1e4, Math.min(minT, 1e6) / 1.5), hi = maxT * 1.3;
    var ly = function (v) {
      v = Math.max(lo, Math.min(hi, v));
      return T + plotH - plotH * (Math.log(v) - Math.log(lo)) / (Math.log(hi) - Math.log(lo));
    };
    var svg = s('svg', {viewBox: '0 0 ' + W + ' ' + H, role: 'img', 'aria-label': 'frame time per frame', class: 'frame-time'});
    var axis = s('g', {class: 'axis'});
    logTicks(lo, hi).forEach(function (t) {
      axis.appendChild(s('line', {class: 'grid', x1: L, x2: W - R, y1: ly(t), y2: ly(t)}));
      axis.appendChild(s('text', {x: 4, y: ly(t) + 4}, dur(t).replace('.000', '').replace('.00 ', ' ')));
    });
    svg.appendChild(axis);
    // One bar per frame while they fit; else the longest frame per column.
    var cols = Math.min(frames.length, Math.floor(plotW));
    var per = frames.length / cols;
    var bw = plotW / cols;
    for (var c = 0; c < cols; c++) {
      var from = Math.floor(c * per), to = Math.max(from + 1, Math.floor((c + 1) * per));
      var worst = frames[from];
      for (var i = from; i < to; i++) if (num(frames[i].total_ns) > num(worst.total_ns)) worst = frames[i];
      (function (f, n) {
        var top = ly(num(f.total_ns));
        svg.appendChild(s('rect', {class: 'frame-bar ' + frameClass(f), x: (L + c * bw).toFixed(2), y: top.toFixed(2),
          width: Math.max(0.6, bw - (bw > 3 ? 1 : 0)).toFixed(2), height: Math.max(1, T + plotH - top).toFixed(2),
          'data-frame-id': f.frame_id,
          tip: function () {
            var t = frameTip(f);
            if (n > 1) t.lines.unshift('longest of ' + n + ' frames in this column');
            return t;
          }}));
      })(worst, to - from);
    }
    // The deadline: the refresh interval at each frame.
    var d = '';
    var prev = null;
    for (c = 0; c < cols; c++) {
      var f = frames[Math.floor(c * per)];
      var yy = ly(num(f.interval_ns)).toFixed(1);
      if (yy !== prev) d += (d ? 'L' + (L + c * bw).toFixed(1) + ',' + prev : '') + (d ? 'L' : 'M') + (L + c * bw).toFixed(1) + ',' + yy;
      prev = yy;
    }
    d += 'L' + (W - R) + ',' + prev;
    svg.appendChild(s('path', {class: 'deadline', d: d, tip: {title: 'deadline: one refresh interval', lines: frames.length ? [dur(frames[0].interval_ns)] : []}}));
    if (hi > 700e6) {
      svg.appendChild(s('line', {class: 'deadline', x1: L, x2: W - R, y1: ly(700e6), y2: ly(700e6)}));
      svg.appendChild(s('text', {x: W - R - 90, y: ly(700e6) - 4}, 'frozen (700 ms)'));
    }
    svg.appendChild(s('text', {x: L, y: H - 6, class: 'muted'}, frames.length + ' frames in time order' + (per > 1 ? ' (longest per column)' : '')));
    return svg;
  }

  var BUCKETS = ['BEST', 'NORMAL', 'MIDDLE', 'HIGH', 'FROZEN'];
  var BUCKET_CLASS = {BEST: 'c-ok', NORMAL: 'c-warn', MIDDLE: 'c-slow', HIGH: 'c-bad', FROZEN: 'c-frozen'};
  var BUCKET_RULE = {BEST: '< 3 dropped', NORMAL: '>= 3', MIDDLE: '>= 9', HIGH: '>= 24', FROZEN: '>= 42'};

  function fpsChart(windows) {
    var W = 1000, H = 220, L = 40, R = 10, T = 10, B = 26;
    var plotW = W - L - R, plotH = H - T - B;
    var maxFps = 60;
    windows.forEach(function (w) { maxFps = Math.max(maxFps, num(w.refresh_hz), num(w.fps), num(w.delivered_fps)); });
    var x = function (t) { return L + plotW * (t - M.t0) / (M.t1 - M.t0); };
    var y = function (v) { return T + plotH - plotH * v / maxFps; };
    var svg = s('svg', {viewBox: '0 0 ' + W + ' ' + H, role: 'img', 'aria-label': 'fps over time'});
    var axis = s('g', {class: 'axis'});
    [0, maxFps / 4, maxFps / 2, maxFps * 3 / 4, maxFps].forEach(function (v) {
      axis.appendChild(s('line', {class: 'grid', x1: L, x2: W - R, y1: y(v), y2: y(v)}));
      axis.appendChild(s('text', {x: 4, y: y(v) + 4}, v.toFixed(0)));
    });
    var span = M.t1 - M.t0, step = Math.pow(10, Math.floor(Math.log10(span / 5)));
    if (span / step > 12) step *= 5;
    else if (span / step > 6) step *= 2;
    for (var t = 0; t <= span; t += step) {
      axis.appendChild(s('text', {x: x(M.t0 + t) - 8, y: H - B + 14}, step >= 1e9 ? (t / 1e9).toFixed(0) + ' s' : (t / 1e9).toFixed(1) + ' s'));
    }
    svg.appendChild(axis);
    var scenes = [];
    windows.forEach(function (w) { if (scenes.indexOf(w.scene) < 0) scenes.push(w.scene); });
    scenes.forEach(function (scene, si) {
      var color = 'hsl(' + (210 + si * 67) % 360 + ',65%,45%)';
      var ws = windows.filter(function (w) { return w.scene === scene; });
      ['delivered_fps', 'fps'].forEach(function (key) {
        var d = ws.map(function (w, i) { return (i ? 'L' : 'M') + x((num(w.begin_ns) + num(w.end_ns)) / 2).toFixed(1) + ',' + y(num(w[key])).toFixed(1); }).join('');
        svg.appendChild(s('path', {class: 'series' + (key === 'fps' ? ' matrix' : ''), d: d, stroke: color}));
        ws.forEach(function (w) {
          svg.appendChild(s('circle', {class: 'point', cx: x((num(w.begin_ns) + num(w.end_ns)) / 2), cy: y(num(w[key])), r: 3.5, fill: color,
            tip: {title: str(scene, '(no scene)') + ': ' + (key === 'fps' ? 'Matrix fps' : 'delivered fps') + ' ' + num(w[key]).toFixed(1),
              lines: [rel(w.begin_ns) + ' .. ' + rel(w.end_ns), w.frames + ' frames, ' + w.janky + ' janky', 'Matrix fps ' + num(w.fps).toFixed(1) + ', delivered ' + num(w.delivered_fps).toFixed(1)]}}));
        });
      });
      svg.appendChild(s('text', {x: L + 6 + si * 260, y: T + 12, fill: color}, str(scene, '(no scene)')));
    });
    return h('div', null, svg, h('div', {class: 'note'}, 'Solid: delivered fps (counts the vsyncs other messages cost); dashed: Matrix fps. One point per Matrix window.'));
  }

