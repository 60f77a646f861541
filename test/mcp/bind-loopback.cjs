// Preloaded (node --require) into servers that call listen(port) without a host
// (server-everything, conformance scenario servers): pins them to 127.0.0.1.
const net = require('node:net'); const orig = net.Server.prototype.listen;
net.Server.prototype.listen = function (...a) {
  if (typeof a[0] === 'object' && a[0] && !Array.isArray(a[0])) {
    if (a[0].port !== undefined && !a[0].host && !a[0].path) a[0] = { ...a[0], host: '127.0.0.1' };
  } else if (typeof a[0] === 'number' || (typeof a[0] === 'string' && /^\d+$/.test(a[0]))) {
    if (typeof a[1] !== 'string') a.splice(1, 0, '127.0.0.1');
  }
  return orig.apply(this, a);
};
