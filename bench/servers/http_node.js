// A Node `http` server for the busy-server benchmark (bench/busy_server_overhead.py): every
// request gets "ok" with a Content-Length, on a kept-alive connection.
//   node http_node.js PORT
const http = require('http');
const server = http.createServer((req, res) => {
  res.writeHead(200, {'Content-Length': 2, 'Content-Type': 'text/plain'});
  res.end('ok');
});
server.keepAliveTimeout = 0;
server.listen(Number(process.argv[2]), '127.0.0.1', () => console.log('listening'));
