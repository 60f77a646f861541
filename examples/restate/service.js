'use strict';
// The Restate service of the example: the AgentSession virtual object
// (session.js) of the agent of agent.js, served over HTTP/2 (h2c) on
// $HOST:$PORT (127.0.0.1:9080; PORT=0 picks a free port) for a Restate
// server to call. Register it once with the server's admin API:
//   curl localhost:9070/deployments -H 'content-type: application/json' \
//        -d '{"uri": "http://127.0.0.1:9080"}'
const http2 = require('node:http2');
const restate = require('@restatedev/restate-sdk');
const { makeAgent } = require('./agent');
const { sessionObject } = require('./session');

const endpoint = restate.endpoint().bind(sessionObject(makeAgent()));
const server = http2.createServer(endpoint.http2Handler());
server.listen(Number(process.env.PORT || 9080), process.env.HOST || '127.0.0.1', () => {
  const { address, port } = server.address();
  process.stdout.write(`restate example: listening on http://${address}:${port}\n`);
});
