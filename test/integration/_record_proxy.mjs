// A recording proxy for test_model_aimock: forwards every request to the
// aimock server unchanged and appends each raw request body (the bytes our
// client sent, which aimock's journal only keeps normalized) to a file, one
// body per line. Binds 127.0.0.1 only.
//   node _record_proxy.mjs UPSTREAM_PORT RECORD_FILE
import http from 'node:http';
import fs from 'node:fs';

const [upstreamPort, recordFile] = process.argv.slice(2);
const server = http.createServer((req, res) => {
  const chunks = [];
  req.on('data', (c) => chunks.push(c));
  req.on('end', () => {
    const body = Buffer.concat(chunks);
    fs.appendFileSync(recordFile, Buffer.concat([body, Buffer.from('\n')]));
    const up = http.request(
      { host: '127.0.0.1', port: Number(upstreamPort), method: req.method, path: req.url,
        headers: req.headers },
      (ur) => {
        res.writeHead(ur.statusCode, ur.headers);
        ur.pipe(res);
        ur.on('error', () => res.destroy());
        ur.on('aborted', () => res.destroy());
      });
    up.on('error', () => res.destroy());
    up.end(body);
  });
});
server.listen(0, '127.0.0.1', () => {
  console.log(`proxy listening on http://127.0.0.1:${server.address().port}`);
});
