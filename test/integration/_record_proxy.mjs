// A recording proxy for test_model_aimock: forwards every request to the
// aimock server and appends one JSON line per request to a file:
// {"method","url","headers","body"} with the raw body our client sent (which
// aimock's journal only keeps normalized). Binds 127.0.0.1 only.
//   node _record_proxy.mjs UPSTREAM_PORT RECORD_FILE
//
// Two shapes aimock cannot produce are added on the way back, so that the
// byte-for-byte replay of signatures is tested for every provider:
// - Gemini streams (:streamGenerateContent): each functionCall part, and the
//   text part of the chunk that ends the answer, get a thoughtSignature.
// - Bedrock Converse streams (AWS event stream): a reasoning block gets a
//   signature delta before its contentBlockStop (frames re-encoded with
//   their CRCs).
import http from 'node:http';
import fs from 'node:fs';
import zlib from 'node:zlib';

const [upstreamPort, recordFile] = process.argv.slice(2);
let signatures = 0;

function signGeminiChunk(obj) {
  const cand = obj?.candidates?.[0];
  for (const part of cand?.content?.parts ?? []) {
    if (part.functionCall) part.thoughtSignature = `c2lnLWdlbWluaS1jYWxs${signatures++}`;
    else if (typeof part.text === 'string' && !part.thought && cand.finishReason)
      part.thoughtSignature = `c2lnLWdlbWluaS10ZXh0${signatures++}`;
  }
  return obj;
}

// Rewrites the `data:` events of an SSE body as they pass.
function geminiRewriter(res) {
  let pending = '';
  return {
    write(chunk) {
      pending += chunk.toString('utf8');
      let i;
      while ((i = pending.indexOf('\n\n')) >= 0) {
        const event = pending.slice(0, i);
        pending = pending.slice(i + 2);
        const m = /^data: (.*)$/s.exec(event);
        let out = event;
        if (m) {
          try { out = `data: ${JSON.stringify(signGeminiChunk(JSON.parse(m[1])))}`; } catch { /* keep */ }
        }
        res.write(`${out}\n\n`);
      }
    },
    end() { if (pending) res.write(pending); res.end(); },
  };
}

function encodeFrame(headers, payload) {
  const hs = [];
  for (const [name, value] of Object.entries(headers)) {
    const n = Buffer.from(name), v = Buffer.from(value);
    const h = Buffer.alloc(1 + n.length + 1 + 2 + v.length);
    h.writeUInt8(n.length, 0); n.copy(h, 1); h.writeUInt8(7, 1 + n.length);
    h.writeUInt16BE(v.length, 2 + n.length); v.copy(h, 4 + n.length);
    hs.push(h);
  }
  const hb = Buffer.concat(hs);
  const total = 12 + hb.length + payload.length + 4;
  const f = Buffer.alloc(total);
  f.writeUInt32BE(total, 0); f.writeUInt32BE(hb.length, 4);
  f.writeUInt32BE(zlib.crc32(f.subarray(0, 8)) >>> 0, 8);
  hb.copy(f, 12); payload.copy(f, 12 + hb.length);
  f.writeUInt32BE(zlib.crc32(f.subarray(0, total - 4)) >>> 0, total - 4);
  return f;
}

function decodeHeaders(buf) {
  const out = {};
  let i = 0;
  while (i < buf.length) {
    const nl = buf.readUInt8(i); i += 1;
    const name = buf.subarray(i, i + nl).toString(); i += nl;
    const type = buf.readUInt8(i); i += 1;
    if (type !== 7) return null; // aimock sends strings only
    const vl = buf.readUInt16BE(i); i += 2;
    out[name] = buf.subarray(i, i + vl).toString(); i += vl;
  }
  return out;
}

function bedrockRewriter(res) {
  let pending = Buffer.alloc(0);
  const reasoning = new Set();
  return {
    write(chunk) {
      pending = Buffer.concat([pending, chunk]);
      while (pending.length >= 12 && pending.length >= pending.readUInt32BE(0)) {
        const total = pending.readUInt32BE(0), hlen = pending.readUInt32BE(4);
        const frame = pending.subarray(0, total);
        pending = pending.subarray(total);
        const headers = decodeHeaders(frame.subarray(12, 12 + hlen));
        const payload = frame.subarray(12 + hlen, total - 4);
        let ev = null;
        try { ev = JSON.parse(payload.toString()); } catch { /* pass it on */ }
        const type = headers?.[':event-type'];
        if (type === 'contentBlockDelta' && ev?.delta?.reasoningContent) reasoning.add(ev.contentBlockIndex);
        if (type === 'contentBlockStop' && reasoning.has(ev?.contentBlockIndex)) {
          const sig = { contentBlockIndex: ev.contentBlockIndex,
                        delta: { reasoningContent: { signature: `c2lnLWJlZHJvY2s${signatures++}` } } };
          res.write(encodeFrame({ ...headers, ':event-type': 'contentBlockDelta' }, Buffer.from(JSON.stringify(sig))));
          reasoning.delete(ev.contentBlockIndex);
        }
        res.write(frame);
      }
    },
    end() { if (pending.length) res.write(pending); res.end(); },
  };
}

const server = http.createServer((req, res) => {
  const chunks = [];
  req.on('data', (c) => chunks.push(c));
  req.on('end', () => {
    const body = Buffer.concat(chunks);
    fs.appendFileSync(recordFile, JSON.stringify({ method: req.method, url: req.url,
      headers: req.headers, body: body.toString('utf8') }) + '\n');
    const up = http.request(
      { host: '127.0.0.1', port: Number(upstreamPort), method: req.method, path: req.url,
        headers: req.headers },
      (ur) => {
        const ok = ur.statusCode >= 200 && ur.statusCode < 300;
        const headers = { ...ur.headers };
        let sink = res;
        if (ok && req.url.includes(':streamGenerateContent')) {
          delete headers['content-length'];
          sink = geminiRewriter(res);
        } else if (ok && req.url.includes('/converse-stream')) {
          delete headers['content-length'];
          sink = bedrockRewriter(res);
        }
        res.writeHead(ur.statusCode, headers);
        ur.on('data', (c) => sink.write(c));
        ur.on('end', () => sink.end());
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
