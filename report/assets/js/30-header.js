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

  // Links to the sections drawn (`shown`: their ids, in page order).
  function nav(shown) {
    var titles = {};
    SECTIONS.concat([['absent', 'Not in this report'], ['other', 'Other records']]).forEach(function (sct) {
      titles[sct[0]] = sct[1];
    });
    var n = h('nav', {class: 'toc'});
    shown.forEach(function (id) { n.appendChild(h('a', {href: '#' + id}, titles[id] || id)); });
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

