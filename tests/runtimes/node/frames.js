'use strict';
// A Node.js program of our own for looptrace's JavaScript frame tests: its functions burn CPU
// and wait along known call paths, from a timer and from an I/O callback, for --seconds:
//   timer:  renderReport -> renderRows -> burn, then renderReport -> waitForDisk (Atomics.wait)
//   I/O:    onFileRead (fs.readFile's callback) -> parseRecords -> burn
// It writes "ready PID" to --ready once its loop runs. No flags: V8's frames are read from
// outside.
const fs = require('fs');

const args = process.argv.slice(2);
function option(name, fallback) {
  const i = args.indexOf('--' + name);
  return i >= 0 && i + 1 < args.length ? args[i + 1] : fallback;
}

function burn(ms) {
  const end = Date.now() + ms;
  let x = 0;
  while (Date.now() < end)
    for (let i = 0; i < 20000; i++) x += Math.sqrt(i + x);
  return x;
}

function renderRows(ms) {
  return burn(ms);
}

function waitForDisk(ms) {
  Atomics.wait(new Int32Array(new SharedArrayBuffer(4)), 0, 0, ms);
}

function renderReport() {
  renderRows(30);
  waitForDisk(20);
}

function parseRecords(ms) {
  return burn(ms);
}

function onFileRead(err) {
  if (err) throw err;
  parseRecords(25);
  setTimeout(readAgain, 40);
}

function readAgain() {
  fs.readFile(__filename, onFileRead);
}

const until = Date.now() + Number(option('seconds', '5')) * 1000;
const report = setInterval(renderReport, 100);
readAgain();
setTimeout(() => { clearInterval(report); process.exit(0); }, until - Date.now());
const ready = option('ready', null);
if (ready) setImmediate(() => fs.writeFileSync(ready, `ready ${process.pid}\n`));
