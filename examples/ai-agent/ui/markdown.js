// Safe Markdown for the AI Agent page: the text becomes DOM nodes made with
// createElement and textContent, never HTML, so nothing the model writes can
// run or load anything. Covered: paragraphs (single line breaks kept),
// headings, fenced code blocks (with a copy button), inline code, bold,
// italic, strike-through, links (http, https and mailto only, opened in a
// new tab without referrer), block quotes, ordered and unordered lists (one
// level of nesting), tables and horizontal rules. Anything else stays text.

const SAFE_URL = /^(https?:\/\/|mailto:)/i;

function el(tag, cls, text) {
  const e = document.createElement(tag);
  if (cls) e.className = cls;
  if (text !== undefined) e.textContent = text;
  return e;
}

// ---- inline ------------------------------------------------------------------

// Inline spans, longest delimiters first; each returns [node, length] at i.
const INLINE = [
  { re: /^`([^`\n]+)`/, make: (m) => el('code', null, m[1]) },
  { re: /^\*\*([^*\n](?:[^\n]*?[^*\n])?)\*\*/, make: (m) => wrap('strong', m[1]) },
  { re: /^__([^_\n](?:[^\n]*?[^_\n])?)__/, make: (m) => wrap('strong', m[1]) },
  { re: /^~~([^~\n]+)~~/, make: (m) => wrap('del', m[1]) },
  { re: /^\*([^*\s](?:[^*\n]*?[^*\s])?)\*/, make: (m) => wrap('em', m[1]) },
  { re: /^_([^_\s](?:[^_\n]*?[^_\s])?)_(?![A-Za-z0-9])/, make: (m) => wrap('em', m[1]) },
  { re: /^\[([^\]\n]+)\]\(([^)\s]+)\)/, make: (m) => link(m[1], m[2]) },
  { re: /^(https?:\/\/[^\s<>()]+[^\s<>().,;:!?'"])/, make: (m) => link(m[1], m[1]) },
];

function wrap(tag, text) {
  const e = el(tag);
  e.append(inline(text));
  return e;
}

function link(text, url) {
  if (!SAFE_URL.test(url)) return document.createTextNode(text);
  const a = el('a', null);
  a.append(inline(text));
  a.href = url;
  a.target = '_blank';
  a.rel = 'noopener noreferrer nofollow';
  return a;
}

// Inline Markdown of one paragraph's text (line breaks become <br>).
export function inline(text) {
  const frag = document.createDocumentFragment();
  let plain = '';
  const flush = () => {
    if (!plain) return;
    const lines = plain.split('\n');
    lines.forEach((line, k) => {
      if (k) frag.append(el('br'));
      if (line) frag.append(document.createTextNode(line));
    });
    plain = '';
  };
  for (let i = 0; i < text.length;) {
    const rest = text.slice(i);
    const ch = text[i];
    // A delimiter can only start a span at these characters.
    if ('`*_~[h'.includes(ch) && (ch !== 'h' || rest.startsWith('http'))) {
      // Intra-word underscores (snake_case) stay text.
      const wordBefore = i > 0 && /[A-Za-z0-9]/.test(text[i - 1]);
      let matched = false;
      for (const r of INLINE) {
        if (ch === '_' && wordBefore) break;
        const m = r.re.exec(rest);
        if (m) {
          flush();
          frag.append(r.make(m));
          i += m[0].length;
          matched = true;
          break;
        }
      }
      if (matched) continue;
    }
    if (ch === '\\' && i + 1 < text.length && /[\\`*_~[\]()#>+\-.!|]/.test(text[i + 1])) {
      plain += text[i + 1];
      i += 2;
      continue;
    }
    plain += ch;
    i++;
  }
  flush();
  return frag;
}

// ---- blocks -------------------------------------------------------------------

function codeBlock(lang, code) {
  const box = el('div', 'code-block');
  const head = el('div', 'code-head');
  head.append(el('span', 'code-lang', lang || 'text'));
  const copy = el('button', 'copy-code', 'Copy');
  copy.type = 'button';
  copy.setAttribute('aria-label', `Copy the ${lang || 'text'} code`);
  copy.addEventListener('click', () => {
    const done = () => {
      copy.textContent = 'Copied';
      setTimeout(() => { copy.textContent = 'Copy'; }, 1500);
    };
    if (navigator.clipboard && navigator.clipboard.writeText) {
      navigator.clipboard.writeText(code).then(done, () => { copy.textContent = 'Copy failed'; });
    }
  });
  head.append(copy);
  const pre = el('pre');
  const c = el('code', null, code);
  if (lang) c.dataset.lang = lang;
  pre.append(c);
  box.append(head, pre);
  return box;
}

const LIST_ITEM = /^(\s*)([-*+]|\d{1,9}[.)])\s+(.*)$/;

function list(lines, start) {
  const first = LIST_ITEM.exec(lines[start]);
  const ordered = /\d/.test(first[2]);
  const indent = first[1].length;
  const root = el(ordered ? 'ol' : 'ul');
  if (ordered && parseInt(first[2], 10) !== 1) root.start = parseInt(first[2], 10);
  let i = start;
  let item = null;
  let itemText = [];
  const close = () => {
    if (item) item.prepend(inline(itemText.join('\n')));
    itemText = [];
  };
  while (i < lines.length) {
    const m = LIST_ITEM.exec(lines[i]);
    if (m && m[1].length === indent && /\d/.test(m[2]) === ordered) {
      close();
      item = el('li');
      const task = /^\[([ xX])\]\s+(.*)$/.exec(m[3]);
      if (task) {
        const box = el('span', `task ${task[1] === ' ' ? 'open' : 'done'}`, task[1] === ' ' ? '○' : '✓');
        box.setAttribute('aria-hidden', 'true');
        item.append(box);
        itemText.push(task[2]);
      } else {
        itemText.push(m[3]);
      }
      root.append(item);
      i++;
    } else if (m && m[1].length > indent && item) {
      const [sub, next] = list(lines, i);
      close();
      item.append(sub);
      i = next;
    } else if (!m && item && lines[i].trim() && /^\s+/.test(lines[i])) {
      itemText.push(lines[i].trim());
      i++;
    } else {
      break;
    }
  }
  close();
  return [root, i];
}

function splitRow(line) {
  let s = line.trim();
  if (s.startsWith('|')) s = s.slice(1);
  if (s.endsWith('|')) s = s.slice(0, -1);
  return s.split('|').map((c) => c.trim());
}

const TABLE_SEP = /^\s*\|?\s*:?-{3,}:?\s*(\|\s*:?-{3,}:?\s*)*\|?\s*$/;

function table(lines, start) {
  const head = splitRow(lines[start]);
  const wrapBox = el('div', 'table-wrap');
  const t = el('table');
  const thead = el('thead');
  const tr = el('tr');
  for (const h of head) {
    const th = el('th');
    th.append(inline(h));
    tr.append(th);
  }
  thead.append(tr);
  t.append(thead);
  const tbody = el('tbody');
  let i = start + 2;
  while (i < lines.length && lines[i].includes('|') && lines[i].trim()) {
    const row = el('tr');
    const cells = splitRow(lines[i]);
    for (let k = 0; k < head.length; k++) {
      const td = el('td');
      td.append(inline(cells[k] || ''));
      row.append(td);
    }
    tbody.append(row);
    i++;
  }
  t.append(tbody);
  wrapBox.append(t);
  return [wrapBox, i];
}

// Renders Markdown text as a fragment of safe nodes.
export function renderMarkdown(text) {
  const frag = document.createDocumentFragment();
  const lines = String(text || '').replace(/\r\n?/g, '\n').split('\n');
  let para = [];
  const flushPara = () => {
    if (!para.length) return;
    const p = el('p');
    p.append(inline(para.join('\n')));
    frag.append(p);
    para = [];
  };
  for (let i = 0; i < lines.length;) {
    const line = lines[i];
    const fence = /^\s*(```|~~~)\s*([\w+#.-]*)\s*$/.exec(line);
    if (fence) {
      flushPara();
      const body = [];
      i++;
      while (i < lines.length && !lines[i].trim().startsWith(fence[1])) body.push(lines[i++]);
      i++; // the closing fence (or the end)
      frag.append(codeBlock(fence[2], body.join('\n')));
      continue;
    }
    if (!line.trim()) {
      flushPara();
      i++;
      continue;
    }
    const h = /^(#{1,6})\s+(.*?)\s*#*\s*$/.exec(line);
    if (h) {
      flushPara();
      // Headings inside an answer start at h3: the page has its own h1/h2.
      const e = el(`h${Math.min(6, h[1].length + 2)}`);
      e.append(inline(h[2]));
      frag.append(e);
      i++;
      continue;
    }
    if (/^\s*([-*_])(\s*\1){2,}\s*$/.test(line)) {
      flushPara();
      frag.append(el('hr'));
      i++;
      continue;
    }
    if (/^\s*>/.test(line)) {
      flushPara();
      const quoted = [];
      while (i < lines.length && /^\s*>/.test(lines[i])) quoted.push(lines[i++].replace(/^\s*>\s?/, ''));
      const q = el('blockquote');
      q.append(renderMarkdown(quoted.join('\n')));
      frag.append(q);
      continue;
    }
    if (LIST_ITEM.test(line) && !para.length) {
      const [l, next] = list(lines, i);
      frag.append(l);
      i = next;
      continue;
    }
    if (line.includes('|') && i + 1 < lines.length && TABLE_SEP.test(lines[i + 1])) {
      flushPara();
      const [t, next] = table(lines, i);
      frag.append(t);
      i = next;
      continue;
    }
    para.push(line);
    i++;
  }
  flushPara();
  return frag;
}
