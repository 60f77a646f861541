// graph-panel.js: the session graph in a side panel of the AI Agent page.
//
// GET sessions/ID/graph (with the session's X-Agent-Session-Token) returns the
// graph document of dexagents-graph(7): the flow's Steps, RPCs and channels
// as nodes, its transitions as edges, and the session on it (the Steps that
// ran, "visits", and where it is "now"). This file draws it as SVG, with no
// library: Steps in rows by their distance from the start Step (at most
// three a row), then the channels and the RPCs.
//
// The page mounts it where it wants the panel and refreshes it after each
// turn:
//   const panel = DexaGraphPanel.mount(element, {base, sessionId, token, inlineStyle});
//   panel.refresh();
// render(doc) returns the SVG text alone (used by the tests under node).
(function (root) {
  'use strict';
  const COLS = 3, W = 178, H = 38, GX = 22, GY = 40, SH = 26, M = 16;

  // Rows of Steps: the shortest distance from the start over "next" edges
  // (then recovery edges), so the turn reads from top to bottom.
  function rows(doc) {
    const steps = doc.nodes.filter((n) => n.kind === 'step');
    const depth = new Map([[doc.start, 0]]);
    for (const kinds of [['next'], ['next', 'recovery']]) {
      const queue = [...depth.keys()];
      while (queue.length) {
        const id = queue.shift();
        for (const e of doc.edges) {
          if (e.from !== id || !kinds.includes(e.kind) || depth.has(e.to)) continue;
          depth.set(e.to, depth.get(id) + 1);
          queue.push(e.to);
        }
      }
    }
    const last = Math.max(0, ...depth.values()) + 1;
    const byRow = [];
    for (const s of steps) {
      const d = depth.has(s.id) ? depth.get(s.id) : last;
      (byRow[d] = byRow[d] || []).push(s);
    }
    return byRow.filter(Boolean);
  }

  // Rows of at most COLS boxes, centred: the Steps by row, then the
  // channels, then the RPCs (smaller), so the panel stays narrow.
  function layout(doc) {
    const boxes = new Map();
    const width = 2 * M + COLS * W + (COLS - 1) * GX;
    let y = M;
    const place = (nodes, w, h, gap) => {
      for (let i = 0; i < nodes.length; i += COLS) {
        const chunk = nodes.slice(i, i + COLS);
        const x0 = (width - (chunk.length * w + (chunk.length - 1) * GX)) / 2;
        chunk.forEach((n, j) => boxes.set(n.id, { x: x0 + j * (w + GX), y, w, h, node: n }));
        y += h + gap;
      }
    };
    for (const row of rows(doc)) place(row, W, H, GY);
    y += GY / 2;
    place(doc.nodes.filter((n) => n.kind === 'channel'), W, SH, GY);
    place(doc.nodes.filter((n) => n.kind === 'rpc'), W, SH, 10);
    return { boxes, width, height: y + M };
  }

  function esc(s) {
    return String(s).replace(/[&<>"']/g, (c) => ({ '&': '&amp;', '<': '&lt;', '>': '&gt;', '"': '&quot;', "'": '&#39;' })[c]);
  }

  // Where the session is at a Step node: waiting, running, ready, ran or "".
  function state(n) {
    const now = n.now || {};
    if (now.waiting) return 'waiting';
    if (now.running) return 'running';
    if (now.ready) return 'ready';
    return n.visits > 0 ? 'ran' : '';
  }

  // The point where the segment from the box's centre towards (tx, ty)
  // leaves the box.
  function border(b, tx, ty) {
    const cx = b.x + b.w / 2, cy = b.y + b.h / 2, dx = tx - cx, dy = ty - cy;
    if (!dx && !dy) return [cx, cy];
    const s = Math.min(dx ? b.w / 2 / Math.abs(dx) : Infinity, dy ? b.h / 2 / Math.abs(dy) : Infinity);
    return [cx + dx * s, cy + dy * s];
  }

  const STYLE =
    '.node rect{fill:#fff;stroke:#64748b;stroke-width:1.2}.node text{font:12px sans-serif;fill:#0f172a}' +
    '.node.step rect{rx:8}.node.wait rect{stroke-dasharray:4 3}.node.start rect{stroke-width:2.5}' +
    '.node.rpc rect{fill:#f1f5f9}.node.channel rect{fill:#f8fafc;rx:12}' +
    '.node.ran rect{fill:#dbeafe}.node.waiting rect{fill:#fde68a;stroke:#b45309;stroke-width:3}' +
    '.node.running rect{fill:#bbf7d0;stroke:#15803d;stroke-width:3}.node.ready rect{fill:#fef9c3;stroke-width:3}' +
    '.edge{stroke:#94a3b8;stroke-width:1.1;fill:none}.edge.recovery{stroke:#b91c1c;stroke-dasharray:6 3}' +
    '.edge.publish{stroke-dasharray:2 3}.edge.wait{stroke:#475569;stroke-width:2}';

  // opts.inlineStyle (default true): the SVG carries its own <style>. A page
  // whose Content-Security-Policy refuses inline styles (the AI Agent page's
  // style-src 'self') passes false and styles .dexa-graph in its own sheet.
  function render(doc, opts = {}) {
    const { boxes, width, height } = layout(doc);
    const out = [
      `<svg xmlns="http://www.w3.org/2000/svg" class="dexa-graph" viewBox="0 0 ${width} ${height}" width="${width}" height="${height}">`,
      opts.inlineStyle === false ? '' : `<style>${STYLE}</style>`,
      '<defs><marker id="dexa-arrow" viewBox="0 0 8 8" refX="8" refY="4" markerWidth="7" markerHeight="7" orient="auto">' +
        '<path d="M0,0 L8,4 L0,8 z" fill="#64748b"/></marker></defs>',
    ];
    for (const e of doc.edges) {
      const a = boxes.get(e.from), b = boxes.get(e.to);
      if (!a || !b) continue;
      const [x1, y1] = border(a, b.x + b.w / 2, b.y + b.h / 2);
      const [x2, y2] = border(b, a.x + a.w / 2, a.y + a.h / 2);
      out.push(`<line class="edge ${esc(e.kind)}" data-edge="${esc(e.from)}>${esc(e.to)}" ` +
        `x1="${x1.toFixed(1)}" y1="${y1.toFixed(1)}" x2="${x2.toFixed(1)}" y2="${y2.toFixed(1)}" ` +
        `marker-end="url(#dexa-arrow)"><title>${esc(e.kind + (e.mode ? ' ' + e.mode : ''))}</title></line>`);
    }
    for (const [id, b] of boxes) {
      const n = b.node, st = n.kind === 'step' ? state(n) : '';
      const cls = ['node', n.kind, st, n.waits ? 'wait' : '', id === doc.start ? 'start' : ''].filter(Boolean).join(' ');
      const count = n.visits > 0 ? ` \u00d7${n.visits}` : '';
      const tip = n.waits ? `waits ${n.waits.mode}: ` + n.waits.conditions.map((c) => (c.timer ? 'timer' : c.channel)).join(' | ') : n.label;
      out.push(`<g class="${esc(cls)}" data-id="${esc(id)}"><title>${esc(tip)}</title>` +
        `<rect x="${b.x}" y="${b.y}" width="${b.w}" height="${b.h}"/>` +
        `<text x="${b.x + b.w / 2}" y="${b.y + b.h / 2 + 4}" text-anchor="middle">${esc(n.label + count)}</text></g>`);
    }
    out.push('</svg>');
    return out.join('\n');
  }

  async function fetchGraph(base, sessionId, token) {
    const res = await fetch(`${base}sessions/${encodeURIComponent(sessionId)}/graph`, {
      headers: { 'X-Agent-Session-Token': token || '' }, cache: 'no-store',
    });
    const doc = await res.json();
    if (!res.ok) throw new Error((doc.error && doc.error.message) || `HTTP ${res.status}`);
    return doc;
  }

  // Draws the session's graph into element; refresh() draws it again.
  function mount(element, opts) {
    async function refresh() {
      try {
        element.innerHTML = render(await fetchGraph(opts.base, opts.sessionId, opts.token),
          { inlineStyle: opts.inlineStyle });
      } catch (err) {
        element.textContent = 'The session graph is not available: ' + err.message;
      }
    }
    refresh();
    return { refresh };
  }

  const api = { layout, render, mount, fetchGraph };
  if (typeof module === 'object' && module.exports) module.exports = api;
  else root.DexaGraphPanel = api;
})(typeof window !== 'undefined' ? window : globalThis);
