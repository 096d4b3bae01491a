'use strict';
// A busy Node.js program of our own for the stack-walk tests (stack_walk_gaps_test.cc): for
// --seconds its timers and I/O callbacks keep the loop thread on the CPU in JavaScript that
// calls V8's builtins (sorting with a comparator, JSON, regular expressions, string and typed
// array work) and in Node's own C++ (a zlib round trip, a synchronous file read), so sampled
// stacks run through JIT code, builtins and native frames. It writes "ready" to --ready once
// its loop runs. No flags.
const fs = require('fs');
const os = require('os');
const path = require('path');
const zlib = require('zlib');

const args = process.argv.slice(2);
function option(name, fallback) {
  const i = args.indexOf('--' + name);
  return i >= 0 && i + 1 < args.length ? args[i + 1] : fallback;
}

const records = [];
for (let i = 0; i < 2000; i++) records.push({ id: i, name: 'item-' + ((i * 7919) % 2000), score: (i * 31) % 97 });

function sortRecords() {
  return records.slice().sort((a, b) => a.score - b.score || a.name.localeCompare(b.name));
}

function roundTripJson() {
  return JSON.parse(JSON.stringify(records)).length;
}

function matchNames() {
  let n = 0;
  for (const r of records) if (/^item-1\d{2}$/.test(r.name)) n++;
  return n + records.map((r) => r.name.toUpperCase()).join(',').length;
}

function hashBytes() {
  const bytes = new Uint8Array(1 << 16);
  for (let i = 0; i < bytes.length; i++) bytes[i] = (i * 131) & 0xff;
  let h = 0;
  for (let i = 0; i < bytes.length; i++) h = (h * 31 + bytes[i]) | 0;
  return h;
}

function compress() {
  return zlib.inflateSync(zlib.deflateSync(Buffer.from(JSON.stringify(records)))).length;
}

const scratch = path.join(os.tmpdir(), 'looptrace-busy-' + process.pid);
fs.writeFileSync(scratch, JSON.stringify(records));

function handleTick() {
  let work = 0;
  const end = Date.now() + 15;
  while (Date.now() < end) work += sortRecords().length + roundTripJson() + matchNames() + hashBytes();
  return work + compress();
}

function handleRead(err, data) {
  if (!err) JSON.parse(data).length;
}

const seconds = Number(option('seconds', '5'));
const stopAt = Date.now() + seconds * 1000;
const timer = setInterval(() => {
  handleTick();
  fs.readFile(scratch, 'utf8', handleRead);
  if (Date.now() >= stopAt) {
    clearInterval(timer);
    fs.unlinkSync(scratch);
  }
}, 20);

const ready = option('ready', null);
if (ready) setImmediate(() => fs.writeFileSync(ready, 'ready ' + process.pid + '\n'));
