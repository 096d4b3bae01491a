'use strict';
// A Node.js program of our own for looptrace's tests: it writes its truth as JSON lines, with
// times from process.hrtime.bigint() (CLOCK_MONOTONIC, the clock of looptrace's records).
//   --scenario timers   fast timer callbacks, one slow (compute, synchronous wait, compute),
//                       one slow setImmediate callback and a timer made late, then exit
//   --scenario http     an http server with one slow route (/slow), loaded by a client on a
//                       worker thread (127.0.0.1 only) for --seconds, then exit
//   --scenario route    an http server whose one route (renderReport) computes and waits
//                       synchronously at every request; the client sends --requests of them,
//                       the program writes how many it served, then exits after --linger ms
//   --scenario stuck    a timer callback spinning for --seconds (an ANR) --delay ms after the
//                       start, then exit
const fs = require('fs');
const http = require('http');
const { Worker, isMainThread, parentPort, workerData } = require('worker_threads');

const args = process.argv.slice(2);
function option(name, fallback) {
  const i = args.indexOf('--' + name);
  return i >= 0 && i + 1 < args.length ? args[i + 1] : fallback;
}

function now() { return process.hrtime.bigint(); }
function compute(ms) {
  const end = now() + BigInt(ms) * 1000000n;
  let x = 0;
  while (now() < end) x += Math.sqrt(x + 1);
  return x;
}
function waitSynchronously(ms) { Atomics.wait(new Int32Array(new SharedArrayBuffer(4)), 0, 0, ms); }

// The client: sequential keep-alive requests, every fifth to the slow route (or all to
// /report, workerData.requests of them).
if (!isMainThread) {
  const agent = new http.Agent({ keepAlive: true, maxSockets: 1 });
  const until = Date.now() + workerData.seconds * 1000;
  let n = 0;
  const next = () => {
    if (workerData.requests ? n >= workerData.requests : Date.now() >= until) {
      parentPort.postMessage('done');
      return;
    }
    const path = workerData.requests ? '/report' : ++n % 5 === 0 ? '/slow' : '/fast';
    if (workerData.requests) ++n;
    http.get({ host: '127.0.0.1', port: workerData.port, path, agent }, (res) => {
      res.resume();
      res.on('end', next);
    }).on('error', () => setTimeout(next, 10));
  };
  next();
  return;
}

const truthPath = option('truth', null);
const truthFd = truthPath ? fs.openSync(truthPath, 'w') : -1;
function truth(type, name, begin, end) {
  if (truthFd >= 0)
    fs.writeSync(truthFd, `{"type":"${type}","name":"${name}","begin_ns":${begin},"end_ns":${end}}\n`);
}

const scenario = option('scenario', 'timers');
if (scenario === 'timers') {
  let ticks = 0;
  const tick = setInterval(() => { compute(1); ++ticks; }, 10);
  setTimeout(function slowTimer() {
    const begin = now();
    compute(15);
    waitSynchronously(15);
    compute(15);
    truth('callback', 'slow_timer', begin, now());
  }, 300);
  setTimeout(() => {
    setImmediate(function slowImmediate() {
      const begin = now();
      compute(25);
      truth('callback', 'slow_immediate', begin, now());
    });
  }, 500);
  setTimeout(() => { clearInterval(tick); truth('done', 'ticks', ticks, 0); }, 550);
  // Event-loop delay: a timer due in 20 ms runs ~40 ms late, as a setImmediate callback
  // blocks the loop for 60 ms first (no other timer is due then).
  setTimeout(() => {
    const due = now() + 20000000n;
    setTimeout(function lateTimer() { truth('late_timer', 'late_timer', due, now()); }, 20);
    setImmediate(() => compute(60));
  }, 600);
} else if (scenario === 'http' || scenario === 'route') {
  let served = 0;
  function onRequest(req, res) {
    const begin = now();
    if (req.url === '/slow') compute(30);
    res.end('ok\n');
    truth('request', req.url, begin, now());
  }
  function renderReport(req, res) {
    compute(2);
    waitSynchronously(2);
    res.end('report\n');
    ++served;
  }
  const server = http.createServer(scenario === 'route' ? renderReport : onRequest);
  server.keepAliveTimeout = 60000;
  server.listen(0, '127.0.0.1', () => {
    const port = server.address().port;
    truth('listening', String(port), now(), 0);
    const requests = scenario === 'route' ? Number(option('requests', '50')) : 0;
    const worker = new Worker(__filename,
      { argv: [], workerData: { port, seconds: Number(option('seconds', '2')), requests } });
    worker.on('message', () => {
      truth('served', 'requests', served, 0);
      worker.terminate();
      setTimeout(() => { server.close(); server.closeAllConnections(); }, Number(option('linger', '0')));
    });
  });
} else if (scenario === 'stuck') {
  function spin(ms) { return compute(ms); }
  setTimeout(function stuckTimer() { spin(Number(option('seconds', '2')) * 1000); }, Number(option('delay', '50')));
} else {
  console.error('unknown scenario ' + scenario);
  process.exit(2);
}
