// looptrace HTML report: draws the records of `looptrace -f json` (embedded in the page as
// JSON lines, id "looptrace-data") plus a few page-only summaries (id "looptrace-meta").
//
// Dependency-free on purpose: the page must open anywhere, offline, from one file.
// Rules kept throughout:
//   - data never becomes markup: text goes through textContent / createTextNode and
//     attributes through setAttribute (no innerHTML), so names holding markup stay text;
//   - unknown record types and fields are shown, not dropped (the JSON schema grows);
//   - every call tree is drawn from the same pre-order array {depth, name, cost_ns, ...},
//     whatever field holds it ("tree", "sampled_tree", ...);
//   - an empty section says what is missing instead of drawing an empty chart.
// The file is ASCII only and must not contain a closing script tag (the build checks).
// The page's script is the files of report/assets/js/ concatenated in name order: the
// function scope opened below closes at the end of the last one.
(function () {
  'use strict';

  var SVG_NS = 'http://www.w3.org/2000/svg';

  // ------------------------------------------------------------------ DOM helpers

  function append(parent, children) {
    for (var i = 0; i < children.length; i++) {
      var c = children[i];
      if (c === null || c === undefined || c === false) continue;
      if (Array.isArray(c)) append(parent, c);
      else if (typeof c === 'object' && c.nodeType) parent.appendChild(c);
      else parent.appendChild(document.createTextNode(String(c)));
    }
    return parent;
  }

  function setAttrs(node, attrs) {
    if (!attrs) return node;
    Object.keys(attrs).forEach(function (k) {
      var v = attrs[k];
      if (v === null || v === undefined || v === false) return;
      if (k === 'tip') node.__tip = v;
      else if (k === 'item') node.__item = v;
      else if (k.slice(0, 2) === 'on' && typeof v === 'function') node.addEventListener(k.slice(2), v);
      else node.setAttribute(k, String(v));
    });
    return node;
  }

  // h('div', {class: 'x'}, 'text', child, [more]) -> an HTML element.
  function h(tag, attrs) {
    var node = setAttrs(document.createElement(tag), attrs);
    return append(node, Array.prototype.slice.call(arguments, 2));
  }

  // s('rect', {...}) -> an SVG element.
  function s(tag, attrs) {
    var node = setAttrs(document.createElementNS(SVG_NS, tag), attrs);
    return append(node, Array.prototype.slice.call(arguments, 2));
  }

  function clear(node) {
    while (node.firstChild) node.removeChild(node.firstChild);
    return node;
  }

  // ------------------------------------------------------------------ formatting

  function num(v) {
    var n = Number(v);
    return isFinite(n) ? n : 0;
  }

  // As the text report's FormatDuration: "0.123 ms", "12.34 ms", "1.234 s".
  function dur(ns) {
    if (ns === null || ns === undefined || !isFinite(Number(ns))) return '?';
    ns = Number(ns);
    var sign = ns < 0 ? '-' : '';
    ns = Math.abs(ns);
    if (ns < 1e6) return sign + (ns / 1e6).toFixed(3) + ' ms';
    if (ns < 1e9) return sign + (ns / 1e6).toFixed(2) + ' ms';
    return sign + (ns / 1e9).toFixed(3) + ' s';
  }

  function pct(part, whole) {
    if (!whole) return '-';
    return (100 * part / whole).toFixed(1) + '%';
  }

  function count(n, one, many) {
    n = num(n);
    return n.toLocaleString('en-US') + ' ' + (n === 1 ? one : (many || one + 's'));
  }

  function hex(v) {
    var n = num(v);
    return n ? '0x' + n.toString(16) : '0';
  }

  function str(v, fallback) {
    if (v === null || v === undefined || v === '') return fallback === undefined ? '' : fallback;
    return String(v);
  }

  // ------------------------------------------------------------------ the data

  var KNOWN_TYPES = [
    'session', 'message', 'unfinished_message', 'message_summary', 'message_name_summary',
    'frame', 'fps', 'fps_scene', 'evil_method', 'anr', 'lag', 'signal_anr', 'self_sigquit',
    'idle_lag', 'input_lag', 'startup', 'startup_evil_method', 'barrier_leak', 'stats',
    'matrix_input', 'matrix_issue', 'matrix_group', 'matrix_fps_scene', 'matrix_startup', 'matrix_data_quality'
  ];

  function readBlock(id) {
    var node = document.getElementById(id);
    return node ? node.textContent : '';
  }

  function loadModel() {
    var records = [];
    var badLines = 0;
    readBlock('looptrace-data').split('\n').forEach(function (line) {
      if (!line.trim()) return;
      try {
        var r = JSON.parse(line);
        if (r && typeof r === 'object' && !Array.isArray(r)) records.push(r);
        else badLines++;
      } catch (e) {
        badLines++;
      }
    });
    var meta = {};
    try {
      meta = JSON.parse(readBlock('looptrace-meta') || '{}') || {};
    } catch (e) {
      meta = {};
    }
    var byType = {};
    var threadNames = {};  // tid -> name, from the records that carry one next to their tid
    records.forEach(function (r) {
      var t = typeof r.type === 'string' ? r.type : '(no type)';
      (byType[t] = byType[t] || []).push(r);
      if (typeof r.thread_name === 'string' && typeof r.tid === 'number') threadNames[r.tid] = r.thread_name;
    });
    function of(type) { return byType[type] || []; }

    var m = {records: records, badLines: badLines, meta: meta, byType: byType, of: of, threadNames: threadNames};
    m.session = of('session')[0] || null;
    m.messages = of('message').slice().sort(byBegin);
    m.unfinished = of('unfinished_message').slice().sort(byBegin);
    m.frames = of('frame').slice().sort(function (a, b) {
      return num(a.vsync_ns) - num(b.vsync_ns) || num(a.begin_ns) - num(b.begin_ns);
    });
    m.stalls = of('anr').concat(of('lag')).sort(function (a, b) {
      return num(a.snapshot_ns) - num(b.snapshot_ns);
    });
    m.signals = of('signal_anr').concat(of('self_sigquit')).sort(function (a, b) {
      return num(a.ts_ns) - num(b.ts_ns);
    });
    m.spanLags = of('idle_lag').concat(of('input_lag')).sort(byBegin);
    m.barriers = of('barrier_leak').slice().sort(byBegin);
    m.startups = of('startup');
    m.stats = (of('stats')[0] || {}).counters || {};
    m.coverage = meta.coverage || {};
    m.timelineMeta = meta.timeline || {};

    // Session bounds: from the session record, else from whatever has a time.
    var lo = Infinity, hi = -Infinity;
    records.forEach(function (r) {
      ['begin_ns', 'vsync_ns', 'ts_ns', 'snapshot_ns'].forEach(function (k) {
        if (typeof r[k] === 'number' && r[k] > 0) lo = Math.min(lo, r[k]);
      });
      ['end_ns', 'ts_ns', 'snapshot_ns'].forEach(function (k) {
        if (typeof r[k] === 'number' && r[k] > 0) hi = Math.max(hi, r[k]);
      });
    });
    m.t0 = m.session && num(m.session.begin_ns) ? num(m.session.begin_ns) : (isFinite(lo) ? lo : 0);
    m.t1 = m.session && num(m.session.end_ns) ? num(m.session.end_ns) : (isFinite(hi) ? hi : m.t0 + 1);
    if (m.t1 <= m.t0) m.t1 = m.t0 + 1;
    m.mainTid = m.session ? num(m.session.pid) : 0;

    // Threads: the main thread first, then by tid.
    var tids = {};
    m.messages.concat(m.unfinished, m.frames).forEach(function (r) { tids[num(r.tid)] = true; });
    (m.timelineMeta.message_buckets || []).concat(m.timelineMeta.frame_buckets || []).forEach(function (b) {
      tids[num(b[0])] = true;
    });
    m.tids = Object.keys(tids).map(Number).sort(function (a, b) {
      return (a === m.mainTid ? -1 : 0) - (b === m.mainTid ? -1 : 0) || a - b;
    });

    // A stall report per message (tid + begin), for off-CPU reasons on hover.
    m.stallByMessage = {};
    m.stalls.forEach(function (st) {
      var key = st.tid + ':' + st.begin_ns;
      if (!m.stallByMessage[key] || st.type === 'anr') m.stallByMessage[key] = st;
    });
    m.messagesByTid = {};
    m.messages.forEach(function (r) { (m.messagesByTid[num(r.tid)] = m.messagesByTid[num(r.tid)] || []).push(r); });
    m.evilByMessage = {};
    of('evil_method').forEach(function (e, i) { m.evilByMessage[e.tid + ':' + e.begin_ns] = i; });
    return m;
  }

  function byBegin(a, b) {
    return num(a.begin_ns) - num(b.begin_ns) || num(a.tid) - num(b.tid);
  }

  var M = null;  // the model, set in main()

  function rel(ts) {
    var d = num(ts) - M.t0;
    return (d < 0 ? '-' : '+') + (Math.abs(d) / 1e9).toFixed(6) + ' s';
  }

  function msgName(r) {
    if (r.name !== null && r.name !== undefined && r.name !== '') return String(r.name);
    if (r.msg_id !== null && r.msg_id !== undefined) return 'message #' + r.msg_id;
    return '(unnamed)';
  }

  function threadLabel(tid) {
    var name = Object.prototype.hasOwnProperty.call(M.threadNames, tid) ? ' "' + M.threadNames[tid] + '"' : '';
    return 'tid ' + tid + name + (tid === M.mainTid ? ' (main)' : '');
  }

  // Message cost classes (legend in the timeline): a frame interval, 100 ms, Matrix's 700 ms.
  function costClass(ns) {
    ns = num(ns);
    if (ns < 16e6) return 'c-ok';
    if (ns < 100e6) return 'c-warn';
    if (ns < 700e6) return 'c-slow';
    return 'c-bad';
  }

  // Android's jank classes for a frame.
  function frameClass(f) {
    if (f.frozen) return 'c-frozen';
    if (f.slow) return 'c-bad';
    if (f.deadline_missed) return 'c-slow';
    return 'c-ok';
  }

  function frameClassName(f) {
    if (f.frozen) return 'frozen';
    if (f.slow) return 'slow';
    if (f.deadline_missed) return 'deadline missed';
    return 'on time';
  }

  var PHASES = ['INPUT', 'ANIMATION', 'INSETS_ANIMATION', 'TRAVERSAL', 'COMMIT'];

  function isJanky(f) {
    return !!(f.deadline_missed || f.slow || f.frozen);
  }

  function counter(name) {
    return num(M.stats[name]);
  }

  // ------------------------------------------------------------------ tooltip

  var tooltip = null;

  function initTooltip() {
    tooltip = h('div', {id: 'lt-tooltip', role: 'tooltip'});
    document.body.appendChild(tooltip);
    document.addEventListener('mousemove', function (e) {
      var node = e.target;
      while (node && node !== document && !node.__tip) node = node.parentNode;
      if (!node || node === document || !node.__tip) {
        tooltip.style.display = 'none';
        return;
      }
      var tip = typeof node.__tip === 'function' ? node.__tip() : node.__tip;
      if (typeof tip === 'string') tip = {title: tip, lines: []};
      clear(tooltip);
      tooltip.appendChild(h('div', {class: 't-title'}, tip.title || ''));
      (tip.lines || []).forEach(function (l) { tooltip.appendChild(h('div', null, l)); });
      tooltip.style.display = 'block';
      var x = e.clientX + 14, y = e.clientY + 14;
      var w = tooltip.offsetWidth, ht = tooltip.offsetHeight;
      if (x + w > window.innerWidth - 8) x = Math.max(8, e.clientX - w - 14);
      if (y + ht > window.innerHeight - 8) y = Math.max(8, e.clientY - ht - 14);
      tooltip.style.left = x + 'px';
      tooltip.style.top = y + 'px';
    });
  }

  // ------------------------------------------------------------------ shared pieces

  function section(id, title, build) {
    var sec = h('section', {class: 'report-section', id: id}, h('h2', null, title));
    try {
      append(sec, [build()]);
    } catch (e) {
      sec.appendChild(renderError(title, e));
    }
    return sec;
  }

  var renderErrors = 0;

  function renderError(what, e) {
    renderErrors++;
    if (window.console) console.error(e);
    return h('div', {class: 'render-error'},
      'could not draw ' + what + ': ' + (e && e.message ? e.message : String(e)) +
      (e && e.stack ? '\n' + e.stack : ''));
  }

  function missing(text, hint) {
    return h('div', {class: 'missing'}, text, hint ? h('div', {class: 'note'}, hint) : null);
  }

  function badge(text, cls) {
    return h('span', {class: 'badge' + (cls ? ' ' + cls : '')}, text);
  }

  function kv(pairs) {
    var box = h('div', {class: 'kv'});
    pairs.forEach(function (p) {
      if (!p) return;
      box.appendChild(h('div', null, p[0]));
      box.appendChild(h('div', null, p[1]));
    });
    return box;
  }

  // Every field of a record, formatted when first opened.
  function rawRecord(r) {
    var d = h('details', null, h('summary', {class: 'muted'}, 'all fields (JSON)'));
    d.addEventListener('toggle', function () {
      if (d.open && d.children.length === 1) d.appendChild(h('pre', {class: 'raw'}, JSON.stringify(r, null, 2)));
    });
    return d;
  }

  // Content built only once its card is open: a long session can have hundreds of call
  // trees. hydrate() runs after the page is built (see main).
  function lazy(build) {
    var holder = h('div', {class: 'lazy'});
    holder.__build = build;
    return holder;
  }

  function hydrateOne(holder) {
    var build = holder.__build;
    if (!build) return;
    holder.__build = null;
    try {
      append(holder, [build()]);
    } catch (e) {
      holder.appendChild(renderError('a call tree', e));
    }
  }

  function hydrate(root) {
    Array.prototype.forEach.call(root.querySelectorAll('div.lazy'), function (holder) {
      var card = holder.parentNode ? holder.parentNode.closest('details') : null;
      if (!card || card.open) hydrateOne(holder);
      else card.addEventListener('toggle', function () { if (card.open) hydrateOne(holder); });
    });
  }

  // A sortable (and optionally filterable) table. columns: {label, value(row), fmt(v,row),
  // num, sort}. Rows are kept complete; only the view is sorted or filtered.
  function dataTable(opts) {
    var columns = opts.columns;
    var sortCol = opts.sortCol === undefined ? -1 : opts.sortCol;
    var desc = opts.desc !== false;
    var filterText = '';
    var table = h('table', {class: 'data' + (opts.cls ? ' ' + opts.cls : '')});
    var head = h('tr');
    var tbody = h('tbody');
    columns.forEach(function (c, i) {
      var th = h('th', {class: (c.num ? 'num ' : '') + (c.sort !== false ? 'sortable' : '')}, c.label);
      if (c.title) th.setAttribute('title', c.title);
      if (c.sort !== false) {
        th.addEventListener('click', function () {
          if (sortCol === i) desc = !desc;
          else {
            sortCol = i;
            desc = !!c.num;
          }
          fill();
        });
      }
      head.appendChild(th);
    });
    table.appendChild(h('thead', null, head));
    table.appendChild(tbody);

    function fill() {
      var rows = opts.rows;
      if (filterText) {
        rows = rows.filter(function (r) {
          return columns.some(function (c) {
            return String(c.value(r)).toLowerCase().indexOf(filterText) >= 0;
          });
        });
      }
      if (sortCol >= 0) {
        var col = columns[sortCol];
        rows = rows.slice().sort(function (a, b) {
          var va = col.value(a), vb = col.value(b);
          var d = col.num ? num(va) - num(vb) : String(va).localeCompare(String(vb));
          return desc ? -d : d;
        });
      }
      Array.prototype.forEach.call(head.children, function (th, i) {
        th.classList.toggle('sorted-desc', i === sortCol && desc);
        th.classList.toggle('sorted-asc', i === sortCol && !desc);
      });
      clear(tbody);
      var limit = opts.limit || rows.length;
      rows.slice(0, limit).forEach(function (r) {
        var tr = h('tr', opts.rowAttrs ? opts.rowAttrs(r) : null);
        columns.forEach(function (c) {
          var v = c.value(r);
          tr.appendChild(h('td', {class: c.num ? 'num' : null}, c.fmt ? c.fmt(v, r) : str(v)));
        });
        tbody.appendChild(tr);
      });
      if (rows.length > limit) {
        tbody.appendChild(h('tr', null, h('td', {colspan: columns.length, class: 'muted'},
          (rows.length - limit) + ' more rows (sort or filter to see them)')));
      }
    }
    fill();
    var wrap = h('div', null);
    if (opts.filter) {
      wrap.appendChild(h('input', {
        class: 'filter', type: 'search', placeholder: opts.filterPlaceholder || 'filter',
        oninput: function (e) {
          filterText = e.target.value.toLowerCase();
          fill();
        }
      }));
    }
    wrap.appendChild(opts.scroll ? h('div', {class: 'table-wrap'}, table) : table);
    return wrap;
  }

