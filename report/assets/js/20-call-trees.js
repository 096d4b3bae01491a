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

