  // ------------------------------------------------------------------ Matrix issues (fleet)
  // `looptrace report ISSUES...`: what phones running Matrix reported, grouped. The page
  // draws the matrix_* records only.

  var CATEGORY_TITLES = {
    slow_method: 'Slow methods (Trace_EvilMethod NORMAL) by stackKey',
    anr: 'ANRs (ANR, SIGNAL_ANR) by stackKey or main-thread frame',
    lag: 'Lags (LAG, LAG_IDLE_HANDLER, LAG_TOUCH) by main-thread frame',
    startup_stack: 'Slow startups\u2019 stacks (Trace_EvilMethod STARTUP)',
    thread_priority: 'Main-thread priority and timer-slack changes',
    other: 'Other Trace_EvilMethod issues'
  };
  var DROP_LEVELS = ['DROPPED_BEST', 'DROPPED_NORMAL', 'DROPPED_MIDDLE', 'DROPPED_HIGH', 'DROPPED_FROZEN'];

  function ms(v) { return v === null || v === undefined ? '-' : dur(num(v) * 1e6); }
  function tally(list) {
    return (list || []).map(function (t) { return str(t.value) + ' (' + t.count + ')'; }).join(', ');
  }

  function groupCard(g) {
    var c = g.cost || {};
    var tree = (g.merged_tree || []).length && num(g.issues) > 1 ? g.merged_tree : g.representative_tree;
    var frames = g.representative_thread_stack || [];
    return h('details', {class: 'item'},
      h('summary', null, badge(String(g.issues), num(g.issues) > 1 ? 'warn' : null), ' ', h('b', null, str(g.name, '(unnamed)')),
        g.key ? h('code', null, ' ' + g.key) : null,
        num(c.count) ? ' p50 ' + ms(c.p50_ms) + ', p99 ' + ms(c.p99_ms) + ', max ' + ms(c.max_ms) : ''),
      h('div', {class: 'body'},
        kv([['details', tally(g.details) || '-'], ['scenes', tally(g.scenes) || '-'],
          ['app versions', tally(g.app_versions) || '-'], ['devices', tally(g.devices) || '-'],
          ['processes', tally(g.processes) || '-'], ['costliest', str(g.representative_source, '-')]]),
        (tree || []).length ? lazy(function () {
          return callTree(tree === g.merged_tree ? 'Merged tree (every issue\u2019s, costs summed)' : 'Call tree', tree, 'message');
        }) : null,
        frames.length ? stackBlock('main thread (the costliest issue)', frames) : null));
  }

  function fleetSection() {
    var input = M.of('matrix_input')[0] || {};
    var out = [kv([['inputs', (input.inputs || []).join(', ')], ['issues', String(input.issues)],
      ['duplicates (counted once)', String(input.duplicates)],
      ['by kind', Object.keys(input.by_category || {}).map(function (k) { return k + ' ' + input.by_category[k]; }).join(', ')]])];
    var groups = M.of('matrix_group');
    Object.keys(CATEGORY_TITLES).forEach(function (cat) {
      var of = groups.filter(function (g) { return g.category === cat; });
      if (!of.length) return;
      out.push(h('h3', null, CATEGORY_TITLES[cat], badge(count(of.length, 'signature'))));
      out.push(dataTable({
        rows: of, sortCol: 1, limit: 50, filter: of.length > 10,
        columns: [
          {label: 'signature', value: function (g) { return str(g.name, '(unnamed)'); }},
          {label: 'issues', num: true, value: function (g) { return num(g.issues); }},
          {label: 'p50', num: true, value: function (g) { return num((g.cost || {}).p50_ms); }, fmt: ms},
          {label: 'p99', num: true, value: function (g) { return num((g.cost || {}).p99_ms); }, fmt: ms},
          {label: 'max', num: true, value: function (g) { return num((g.cost || {}).max_ms); }, fmt: ms},
          {label: 'top scene', value: function (g) { return g.scenes && g.scenes[0] ? str(g.scenes[0].value) : '-'; }},
          {label: 'top device', value: function (g) { return g.devices && g.devices[0] ? str(g.devices[0].value) : '-'; }}
        ]
      }));
      of.slice(0, 20).forEach(function (g) { out.push(groupCard(g)); });
    });
    var scenes = M.of('matrix_fps_scene');
    if (scenes.length) {
      out.push(h('h3', null, 'FPS by scene (Trace_FPS)'));
      out.push(dataTable({
        rows: scenes, sortCol: 2, limit: 50,
        columns: [
          {label: 'scene', value: function (s) { return str(s.scene, '(no scene)'); }},
          {label: 'reports', num: true, value: function (s) { return num(s.reports); }},
          {label: 'frames', num: true, value: function (s) { return num(s.frames); }},
          {label: 'fps', num: true, value: function (s) { return num(s.fps); }, fmt: function (v) { return v.toFixed(1); }},
          {label: 'worst report', num: true, value: function (s) { return num(s.worst_fps); }, fmt: function (v) { return v.toFixed(1); }},
          {label: 'frames by drop level', sort: false, value: function (s) { return s; }, fmt: function (s) {
            var total = Math.max(1, num(s.frames));
            var bar = h('div', {class: 'stackbar'});
            DROP_LEVELS.forEach(function (l, i) {
              var n = num((s.dropLevel || {})[l]);
              if (n) bar.appendChild(h('span', {class: 'drop-' + i, style: 'width:' + (100 * n / total).toFixed(2) + '%',
                title: l.slice(8) + ': ' + n + ' frames'}));
            });
            return h('div', null, bar, h('div', {class: 'note'},
              DROP_LEVELS.map(function (l) { return l.slice(8) + ' ' + num((s.dropLevel || {})[l]); }).join(' \u00b7 ')));
          }},
          {label: 'worst devices', value: function (s) {
            return (s.worst_devices || []).map(function (d) { return str(d.device) + ' ' + num(d.fps).toFixed(1); }).join(', ');
          }}
        ]
      }));
    }
    var st = M.of('matrix_startup')[0];
    if (st) {
      var rows = [['cold', st.cold], ['warm', st.warm], ['application_create (cold)', st.application_create],
        ['first_activity_create (cold)', st.first_activity_create]].filter(function (r) { return r[1] && num(r[1].count); });
      out.push(h('h3', null, 'Startup (Trace_StartUp)'));
      out.push(dataTable({
        rows: rows,
        columns: [
          {label: 'what', value: function (r) { return r[0]; }},
          {label: 'starts', num: true, value: function (r) { return num(r[1].count); }},
          {label: 'p50', num: true, value: function (r) { return num(r[1].p50_ms); }, fmt: ms},
          {label: 'p90', num: true, value: function (r) { return num(r[1].p90_ms); }, fmt: ms},
          {label: 'p99', num: true, value: function (r) { return num(r[1].p99_ms); }, fmt: ms},
          {label: 'max', num: true, value: function (r) { return num(r[1].max_ms); }, fmt: ms}
        ]
      }));
    }
    if (!groups.length && !scenes.length && !st) out.push(missing('No issue was read.', 'See the data quality below.'));
    return out;
  }

  function matrixIssuesSection() {
    var issues = M.of('matrix_issue');
    var input = M.of('matrix_input')[0] || {};
    var out = [];
    if (num(input.not_listed)) out.push(h('div', {class: 'note'}, input.not_listed + ' more issues are grouped above but not listed (--keep-issues).'));
    issues.slice(0, 200).forEach(function (r) {
      out.push(h('details', {class: 'item'},
        h('summary', null, badge(str(r.detail || r.tag)), ' ', str(r.scene, ''), r.cost !== undefined ? ' ' + ms(r.cost) : '',
          ' ', h('span', {class: 'muted'}, str(r.source))),
        h('div', {class: 'body'},
          r.stackKey ? kv([['stackKey', str(r.stackKey) + ' = ' + str(r.stack_key_name, '?')]]) : null,
          callTrees(r),
          (r.thread_stack || []).length ? stackBlock('main thread (threadStack)', r.thread_stack) : null,
          rawRecord(r))));
    });
    return out;
  }

  function matrixQualitySection() {
    var dq = M.of('matrix_data_quality')[0] || {};
    var warnings = dq.warnings || [];
    if (!warnings.length) return h('div', {class: 'note'}, 'Every issue was read whole.');
    return dataTable({
      rows: warnings,
      rowAttrs: function () { return {class: 'nonzero'}; },
      columns: [
        {label: 'warning', value: function (w) { return w.name; }, fmt: function (v) { return h('code', null, v); }},
        {label: 'count', num: true, value: function (w) { return num(w.count); }},
        {label: 'meaning', value: function (w) { return str(w.description); }},
        {label: 'first', value: function (w) { return str(w.first); }}
      ]
    });
  }

  function matrixMain(root) {
    append(root, [h('h1', null, 'looptrace report: Matrix issues')]);
    root.appendChild(section('fleet', 'Fleet', fleetSection));
    root.appendChild(section('issues', 'Issues one by one', matrixIssuesSection));
    root.appendChild(section('quality', 'Data quality', matrixQualitySection));
    root.appendChild(h('footer', null, 'Generated by looptrace from ' + count(M.records.length, 'record') +
      ' (the same records as -f json). Self-contained: no network access.'));
  }

