// An OTLP/HTTP traces receiver for test/integration/test_trace_export.c.
// Decodes every export with the official opentelemetry-proto definitions
// (compiled for protobufjs, from @opentelemetry/otlp-transformer): protobuf
// bodies with ExportTraceServiceRequest.decode, OTLP/JSON bodies through
// ExportTraceServiceRequest.fromObject after the JSON mapping's hex ids
// are read as bytes, then verify. Listens on 127.0.0.1 (a free port),
// prints "port N", and exits when its standard input closes (the test
// ended, however it ended).
//   node _receiver.cjs NODE_MODULES_DIR [FAIL_FIRST]
// FAIL_FIRST: the first N exports get 503 with Retry-After: 0.
// GET /spans: every span received so far, decoded and flattened.
'use strict';
const http = require('http');
const path = require('path');
const mods = process.argv[2];
const failFirst = Number(process.argv[3] || 0);
const root = require(path.join(mods, '@opentelemetry/otlp-transformer/build/src/generated/root'));
const Req = root.opentelemetry.proto.collector.trace.v1.ExportTraceServiceRequest;
const Resp = root.opentelemetry.proto.collector.trace.v1.ExportTraceServiceResponse;

const spans = [];
const requests = [];
let seen = 0;

const hex = (b) => (b && b.length ? Buffer.from(b).toString('hex') : '');
function anyValue(v) {
  if (v == null) return null;
  if (v.stringValue != null) return v.stringValue;
  if (v.boolValue != null) return v.boolValue;
  if (v.intValue != null) return { int: String(v.intValue) };
  if (v.doubleValue != null) return { double: v.doubleValue };
  if (v.arrayValue != null) return (v.arrayValue.values || []).map(anyValue);
  return null;
}
function attrs(list) {
  const o = {};
  for (const kv of list || []) o[kv.key] = anyValue(kv.value);
  return o;
}
function flatten(req, encoding, headers) {
  for (const rs of req.resourceSpans || []) {
    const resource = attrs(rs.resource && rs.resource.attributes);
    for (const ss of rs.scopeSpans || []) {
      for (const s of ss.spans || []) {
        spans.push({
          encoding, resource, scope: ss.scope ? ss.scope.name : '',
          header: headers['x-test-token'] || '',
          traceId: hex(s.traceId), spanId: hex(s.spanId), parentSpanId: hex(s.parentSpanId),
          name: s.name, kind: s.kind, start: String(s.startTimeUnixNano), end: String(s.endTimeUnixNano),
          attributes: attrs(s.attributes),
          status: { code: s.status ? s.status.code || 0 : 0, message: s.status ? s.status.message || '' : '' },
        });
      }
    }
  }
}
// The OTLP/JSON mapping: ids are hex (not the protobuf JSON base64).
function jsonToMessage(doc) {
  for (const rs of doc.resourceSpans || [])
    for (const ss of rs.scopeSpans || [])
      for (const s of ss.spans || [])
        for (const k of ['traceId', 'spanId', 'parentSpanId'])
          if (typeof s[k] === 'string') {
            if (!/^([0-9a-f]{2})*$/.test(s[k])) throw new Error(`${k} is not lowercase hex: ${s[k]}`);
            s[k] = Buffer.from(s[k], 'hex');
          }
  // 64-bit integers are decimal strings in the JSON mapping: fromObject
  // reads them; the message it builds is then verified.
  const msg = Req.fromObject(doc);
  const err = Req.verify(msg);
  if (err) throw new Error('verify: ' + err);
  return msg;
}

const server = http.createServer((req, res) => {
  if (req.method === 'GET' && req.url === '/spans') {
    res.writeHead(200, { 'content-type': 'application/json' });
    res.end(JSON.stringify({ spans, requests }));
    return;
  }
  const chunks = [];
  req.on('data', (c) => chunks.push(c));
  req.on('end', () => {
    const body = Buffer.concat(chunks);
    const type = req.headers['content-type'] || '';
    seen++;
    if (req.url !== '/v1/traces' || req.method !== 'POST') {
      res.writeHead(404);
      res.end();
      return;
    }
    if (seen <= failFirst) {
      requests.push({ type, status: 503 });
      res.writeHead(503, { 'retry-after': '0' });
      res.end();
      return;
    }
    try {
      let msg, encoding;
      if (type === 'application/x-protobuf') {
        msg = Req.decode(body);
        encoding = 'protobuf';
      } else if (type === 'application/json') {
        msg = jsonToMessage(JSON.parse(body.toString('utf8')));
        encoding = 'json';
      } else {
        throw new Error('unexpected content-type ' + type);
      }
      const obj = Req.toObject(msg, { longs: String, defaults: false, arrays: true });
      flatten(obj, encoding, req.headers);
      requests.push({ type, status: 200 });
      if (encoding === 'protobuf') {
        res.writeHead(200, { 'content-type': 'application/x-protobuf' });
        res.end(Buffer.from(Resp.encode(Resp.create({})).finish()));
      } else {
        res.writeHead(200, { 'content-type': 'application/json' });
        res.end('{}');
      }
    } catch (e) {
      requests.push({ type, status: 400, error: String(e && e.message) });
      res.writeHead(400, { 'content-type': 'text/plain' });
      res.end(String(e && e.message));
    }
  });
});
server.listen(0, '127.0.0.1', () => {
  process.stdout.write(`port ${server.address().port}\n`);
});
process.stdin.on('data', () => {});
process.stdin.on('end', () => process.exit(0));
process.stdin.on('error', () => process.exit(0));
