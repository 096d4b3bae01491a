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
    'idle_lag', 'input_lag', 'startup', 'startup_evil_method', 'barrier_leak', 'stats'
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
    records.forEach(function (r) {
      var t = typeof r.type === 'string' ? r.type : '(no type)';
      (byType[t] = byType[t] || []).push(r);
    });
    function of(type) { return byType[type] || []; }

    var m = {records: records, badLines: badLines, meta: meta, byType: byType, of: of};
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
    return 'tid ' + tid + (tid === M.mainTid ? ' (main)' : '');
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

  // ------------------------------------------------------------------ call trees

  // A pre-order array of {depth, name, cost_ns, ...}.
  function isTree(v) {
    return Array.isArray(v) && v.length > 0 && v.every(function (n) {
      return n && typeof n === 'object' && typeof n.depth === 'number' && typeof n.cost_ns === 'number';
    });
  }

  var TREE_TITLES = {
    tree: 'Call tree (method beats)',
    sampled_tree: 'Call tree (sampled stacks)'
  };

  // Every field of a record that holds a call tree: "tree" first, then the others by name.
  function treeFields(r) {
    return Object.keys(r).filter(function (k) { return isTree(r[k]); }).sort(function (a, b) {
      return (a === 'tree' ? -1 : 0) - (b === 'tree' ? -1 : 0) || a.localeCompare(b);
    });
  }

  // rootLabel names an unnamed top node: the message (or span) the tree belongs to.
  function parseTree(arr, rootLabel) {
    var roots = [], stack = [];
    arr.forEach(function (raw) {
      if (!raw || typeof raw !== 'object') return;
      var depth = num(raw.depth);
      while (stack.length && stack[stack.length - 1].depth >= depth) stack.pop();
      var unnamed = raw.name === null || raw.name === undefined || raw.name === '';
      var node = {
        raw: raw, depth: depth, cost: Math.max(0, num(raw.cost_ns)),
        name: !unnamed ? String(raw.name) :
          !stack.length && rootLabel ? '[' + rootLabel + ']' :
          raw.id !== undefined ? 'method #' + raw.id : '(unknown)',
        children: [], parent: null
      };
      if (stack.length) {
        node.parent = stack[stack.length - 1];
        node.parent.children.push(node);
      } else {
        roots.push(node);
      }
      stack.push(node);
    });
    function finish(n) {
      var sum = 0;
      n.children.forEach(function (c) { sum += c.cost; finish(c); });
      n.self = Math.max(0, n.cost - sum);
    }
    roots.forEach(finish);
    return roots;
  }

  function nodeFlags(raw) {
    var out = [];
    Object.keys(raw).forEach(function (k) {
      if (raw[k] === true) out.push(badge(k.replace(/_/g, ' '), k === 'unfinished' || k === 'exit_lost' ? 'warn' : ''));
    });
    return out;
  }

  function nodeTip(n, total) {
    return function () {
      var lines = [dur(n.cost) + '  (' + pct(n.cost, total) + ')', 'self ' + dur(n.self)];
      if (num(n.raw.count) > 1) lines.push('called ' + n.raw.count + ' times (merged)');
      Object.keys(n.raw).forEach(function (k) {
        if (['depth', 'name', 'cost_ns', 'count', 'percent'].indexOf(k) < 0) lines.push(k + ': ' + JSON.stringify(n.raw[k]));
      });
      return {title: n.name, lines: lines};
    };
  }

  // Warm colours by name, like flame graphs; the same name always gets the same colour.
  function nameColor(name) {
    var hsh = 0;
    for (var i = 0; i < name.length; i++) hsh = (hsh * 31 + name.charCodeAt(i)) | 0;
    var u = (hsh >>> 0) / 4294967295;
    return 'hsl(' + Math.round(8 + 42 * u) + ',' + Math.round(70 + 20 * ((hsh >>> 8) & 255) / 255) + '%,' +
      Math.round(58 + 10 * ((hsh >>> 16) & 255) / 255) + '%)';
  }

  // An icicle (flame graph growing downwards) of the same tree; click a node to zoom in,
  // click an ancestor row to zoom out.
  function flameGraph(roots) {
    var W = 1000, ROW = 18;
    var box = h('div', {class: 'flame'});
    var maxDepth = 0;
    function depthOf(n, d) {
      maxDepth = Math.max(maxDepth, d);
      n.children.forEach(function (c) { depthOf(c, d + 1); });
    }
    roots.forEach(function (r) { depthOf(r, 0); });

    function draw(focus) {
      clear(box);
      var ancestors = [];
      for (var a = focus ? focus.parent : null; a; a = a.parent) ancestors.unshift(a);
      var top = focus ? [focus] : roots;
      var total = 0;
      top.forEach(function (r) { total += r.cost; });
      if (!total) total = 1;
      var rows = ancestors.length + (focus ? maxDepth - depthIndex(focus) + 1 : maxDepth + 1);
      var svg = s('svg', {viewBox: '0 0 ' + W + ' ' + rows * ROW, class: 'icicle', role: 'img',
        'aria-label': 'flame graph'});
      ancestors.forEach(function (n, i) {
        svg.appendChild(s('rect', {class: 'node ancestor', x: 0, y: i * ROW, width: W, height: ROW - 1,
          fill: '#c9d1d9', tip: nodeTip(n, total), onclick: function () { draw(n.parent ? n : null); }}));
        svg.appendChild(label(n.name, 0, i * ROW, W));
      });
      var x0 = 0;
      function place(n, x, w, row) {
        if (w < 0.3) return;
        svg.appendChild(s('rect', {class: 'node', x: x.toFixed(2), y: row * ROW, width: Math.max(0.5, w).toFixed(2),
          height: ROW - 1, fill: nameColor(n.name), tip: nodeTip(n, total),
          onclick: function () { draw(n === focus ? (n.parent || null) : n); }}));
        if (w > 30) svg.appendChild(label(n.name, x, row * ROW, w));
        var sum = 0;
        n.children.forEach(function (c) { sum += c.cost; });
        var scale = sum > n.cost && sum > 0 ? n.cost / sum : 1;  // children never overflow
        var cx = x;
        n.children.forEach(function (c) {
          var cw = w * (c.cost * scale) / (n.cost || 1);
          place(c, cx, cw, row + 1);
          cx += cw;
        });
      }
      top.forEach(function (r) {
        var w = W * r.cost / total;
        place(r, x0, w, ancestors.length);
        x0 += w;
      });
      box.appendChild(svg);
    }
    function depthIndex(n) {
      var d = 0;
      for (var p = n.parent; p; p = p.parent) d++;
      return d;
    }
    function label(name, x, y, w) {
      var chars = Math.floor((w - 6) / 6.4);
      var t = name.length > chars ? name.slice(0, Math.max(1, chars - 1)) + '\u2026' : name;
      return s('text', {x: (x + 3).toFixed(2), y: y + ROW - 5}, t);
    }
    draw(null);
    return box;
  }

  // The expandable tree: hot nodes (>= 10% of the root) open.
  function expandableTree(roots) {
    var total = 0;
    roots.forEach(function (r) { total += r.cost; });
    var box = h('div', {class: 'tree'});
    function row(n) {
      var share = total ? n.cost / total : 0;
      return h('span', {class: 'row', tip: nodeTip(n, total)},
        h('span', {class: 'bar'}, h('span', {style: 'width:' + Math.min(100, share * 100).toFixed(1) + '%'})),
        h('span', {class: 'ms'}, dur(n.cost)),
        h('span', {class: 'pct'}, pct(n.cost, total)),
        h('span', {class: 'name'}, n.name),
        num(n.raw.count) > 1 ? h('span', {class: 'self'}, '\u00d7' + n.raw.count) : null,
        n.children.length ? h('span', {class: 'self'}, 'self ' + dur(n.self)) : null,
        nodeFlags(n.raw));
    }
    function build(n) {
      if (!n.children.length) return h('div', {class: 'leaf'}, row(n));
      var d = h('details', {open: total && n.cost / total >= 0.1 ? 'open' : null}, h('summary', null, row(n)));
      n.children.forEach(function (c) { d.appendChild(build(c)); });
      return d;
    }
    roots.forEach(function (r) { box.appendChild(build(r)); });
    return box;
  }

  function callTree(title, arr, rootLabel) {
    var roots = parseTree(arr, rootLabel);
    var nodes = arr.length;
    return h('div', {class: 'calltree'},
      h('h3', null, title, badge(count(nodes, 'node'))),
      h('div', {class: 'note'}, 'Flame graph (click a frame to zoom, click it again or an ancestor to zoom out), then the same tree expandable.'),
      flameGraph(roots),
      expandableTree(roots));
  }

  // Every call tree in a record, or a note when it has none. The unnamed top node is the
  // record's message (or span).
  function callTrees(r, noneText) {
    var fields = treeFields(r);
    if (!fields.length) return noneText ? h('div', {class: 'note'}, noneText) : null;
    var label = r.type === 'frame' ? 'frame ' + r.frame_id :
      /startup/.test(str(r.type)) ? 'startup' : 'message ' + msgName(r);
    return lazy(function () {
      return fields.map(function (k) { return callTree(TREE_TITLES[k] || 'Call tree (' + k + ')', r[k], label); });
    });
  }

  // ------------------------------------------------------------------ header

  function header() {
    var se = M.session;
    var title = se ? 'looptrace report: pid ' + se.pid + ' (' + str(se.command, '?') + ')' : 'looptrace report';
    var line = se ?
      ['profile ' + str(se.profile, '?'), 'threads ' + str(se.threads, '?'), 'session ' + dur(se.duration_ns),
        str(se.end_reason, 'ended') + (se.exit_status !== null && se.exit_status !== undefined ? ', exit status ' + se.exit_status : ''),
        se.wall_time_ns ? 'started ' + new Date(num(se.wall_time_ns) / 1e6).toISOString().replace('T', ' ').replace(/\.\d+Z$/, ' UTC') : null
      ].filter(Boolean).join('  \u00b7  ') :
      'this recording has no session record';
    return [h('h1', null, title), h('div', {class: 'session-line'}, line)];
  }

  var SECTIONS = [
    ['timeline', 'Timeline'], ['frames', 'Frames'], ['messages', 'Messages'], ['slow', 'Slow messages'],
    ['jank', 'Janky frames'], ['startup', 'Startup'], ['stalls', 'ANR & stalls'], ['quality', 'Data quality']
  ];

  function nav(extra) {
    var n = h('nav', {class: 'toc'});
    SECTIONS.concat(extra).forEach(function (sct) { n.appendChild(h('a', {href: '#' + sct[0]}, sct[1])); });
    return n;
  }

  function dataLossCounters() {
    var sev = {};
    (M.meta.counters || []).forEach(function (c) { sev[c.name] = c.severity; });
    return Object.keys(M.stats).filter(function (k) { return num(M.stats[k]) > 0 && sev[k] === 'data_loss'; });
  }

  function summaryCards() {
    var cards = h('div', {class: 'cards'});
    function card(k, v, sub, cls, href) {
      var c = h(href ? 'a' : 'div', {class: 'card' + (cls ? ' ' + cls : ''), href: href},
        h('div', {class: 'k'}, k), h('div', {class: 'v'}, v), sub ? h('div', {class: 's'}, sub) : null);
      cards.appendChild(c);
    }
    var summaries = M.of('message_summary');
    var main = summaries.filter(function (t) { return num(t.tid) === M.mainTid; })[0] || summaries[0];
    var totalMessages = 0;
    summaries.forEach(function (t) { totalMessages += num(t.count); });
    card('session', M.session ? dur(M.session.duration_ns) : '?', M.session ? str(M.session.end_reason) : 'no session record');
    if (M.coverage.messages === false) card('messages', 'off', 'no dispatch roles', null, '#messages');
    else card('messages', totalMessages.toLocaleString('en-US'),
      main ? 'busy ' + pct(num(main.busy_ns), M.session ? num(M.session.duration_ns) : 0) + ' on ' + threadLabel(num(main.tid)) : 'none dispatched',
      null, '#messages');
    var scenes = M.of('fps_scene');
    var frames = 0, janky = 0, fpsText = '';
    scenes.forEach(function (sc) { frames += num(sc.frames); janky += num(sc.janky); });
    if (!scenes.length) {
      frames = M.frames.length;
      M.frames.forEach(function (f) { if (f.deadline_missed) janky++; });
    }
    if (scenes.length === 1) fpsText = ', ' + num(scenes[0].delivered_fps).toFixed(1) + ' fps';
    if (M.coverage.frames === false && !frames) card('frames', 'off', 'no frame roles', null, '#frames');
    else card('frames', frames.toLocaleString('en-US'), janky + ' janky' + fpsText, janky ? 'warn' : null, '#frames');
    var evil = M.of('evil_method').length;
    card('slow messages', String(evil), 'with call trees', evil ? 'warn' : null, '#slow');
    var anrs = M.of('anr').length, lags = M.of('lag').length;
    card('ANR / LAG', anrs + ' / ' + lags,
      M.signals.length ? M.signals.length + ' SIGQUIT' : (M.spanLags.length + M.barriers.length) + ' other stalls',
      anrs ? 'bad' : (lags ? 'warn' : null), '#stalls');
    var losses = dataLossCounters();
    card('data quality', losses.length ? 'losses' : 'complete',
      losses.length ? losses.join(', ') : 'no losses counted', losses.length ? 'bad' : null, '#quality');
    return cards;
  }

  function banners() {
    var out = [];
    var losses = dataLossCounters();
    if (losses.length) {
      out.push(h('div', {class: 'banner'}, 'Data was lost: ',
        losses.map(function (k) { return k + ' ' + num(M.stats[k]).toLocaleString('en-US'); }).join(', '),
        '. Counts and costs below may be incomplete; see ', h('a', {href: '#quality'}, 'Data quality'), '.'));
    }
    if (M.badLines) out.push(h('div', {class: 'banner'}, M.badLines + ' embedded records could not be parsed and are not shown.'));
    var tm = M.timelineMeta;
    if (num(tm.messages_total) > num(tm.messages_embedded) || num(tm.frames_total) > num(tm.frames_embedded)) {
      out.push(h('div', {class: 'banner info'}, 'Long session: the timeline draws ' +
        num(tm.messages_embedded).toLocaleString('en-US') + ' of ' + num(tm.messages_total).toLocaleString('en-US') +
        ' messages and ' + num(tm.frames_embedded).toLocaleString('en-US') + ' of ' + num(tm.frames_total).toLocaleString('en-US') +
        ' frames one by one (the costliest, and every janky frame); the rest are pale summary bars per ' +
        dur(tm.bucket_ns) + '. Tables and statistics cover everything. Use -f json or -f chrome for every record.'));
    }
    return out;
  }

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
      var hint = M.coverage.messages === false ? whyNoMessages() :
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
          ]),
          e.has_beats === false ? h('div', {class: 'note'}, 'The profile maps no method roles: no call tree.') : null,
          callTrees(e, 'No call tree was recorded for this message.'),
          rawRecord(e)));
    });
  }

  // ------------------------------------------------------------------ janky frames

  function jankSection() {
    if (!M.frames.length) return missing('No janky frames: there are no frames.', whyNoFrames());
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
    var unknown = Object.keys(M.byType).filter(function (t) { return KNOWN_TYPES.indexOf(t) < 0; }).sort();
    var extra = unknown.length ? [['other', 'Other records']] : [];
    append(root, [header(), nav(extra), summaryCards(), banners()]);
    if (!M.records.length) {
      root.appendChild(missing('The report is empty: it has no records at all.', 'Was the recording empty or unreadable?'));
    }
    root.appendChild(section('timeline', 'Timeline', timelineSection));
    root.appendChild(section('frames', 'Frames', framesSection));
    root.appendChild(section('messages', 'Messages', messagesSection));
    root.appendChild(section('slow', 'Slow messages (EvilMethod) with call trees', slowSection));
    root.appendChild(section('jank', 'Janky frames', jankSection));
    root.appendChild(section('startup', 'Startup', startupSection));
    root.appendChild(section('stalls', 'ANR, LAG and other stalls', stallsSection));
    root.appendChild(section('quality', 'Data quality', qualitySection));
    if (unknown.length) root.appendChild(section('other', 'Other records', function () { return otherSection(unknown); }));
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
