import { readFileSync } from 'node:fs';
import { createRequire } from 'node:module';
import { dirname, join } from 'node:path';
import { NotFoundException } from '@nestjs/common';
import type { FastifyInstance, FastifyReply } from 'fastify';
import { toProblem } from '../http/problem';

/**
 * GraphiQL for the embedded mode, served from the installed `graphiql`,
 * `react` and `react-dom` packages (their browser builds), so the page works
 * offline: nothing is loaded from elsewhere. Served at /graphiql, and at
 * /graphql when a browser opens it (GET, HTML accepted, no query). Requests
 * carry the bearer token from the page's token field, kept in the browser's
 * local storage.
 */
export function registerExplorer(fastify: FastifyInstance): void {
  const assets = explorerAssets();
  fastify.get('/graphiql', (_request, reply) => sendPage(reply));
  fastify.get('/graphiql/assets/:name', (request, reply) => {
    const asset = assets.get((request.params as { name: string }).name);
    if (!asset)
      return reply
        .code(404)
        .type('application/problem+json')
        .send(toProblem(new NotFoundException(), undefined, String(request.id)));
    return reply.header('content-type', asset.type).header('cache-control', 'public, max-age=86400').send(asset.body);
  });
  fastify.addHook('onRequest', async (request, reply) => {
    if (request.method !== 'GET' || request.routeOptions.url !== '/graphql') return;
    const query = request.query as { query?: unknown } | undefined;
    if (query?.query !== undefined || !String(request.headers.accept ?? '').includes('text/html')) return;
    return sendPage(reply);
  });
}

interface Asset {
  type: string;
  body: Buffer;
}

/** The browser builds the page loads, read once from node_modules (their `exports` do not list them, hence the package folders). */
function explorerAssets(): Map<string, Asset> {
  const require = createRequire(import.meta.url);
  const folder = (name: string) => dirname(require.resolve(`${name}/package.json`));
  const script = (path: string): Asset => ({ type: 'text/javascript; charset=utf-8', body: readFileSync(path) });
  return new Map([
    ['react.js', script(join(folder('react'), 'umd/react.production.min.js'))],
    ['react-dom.js', script(join(folder('react-dom'), 'umd/react-dom.production.min.js'))],
    ['graphiql.js', script(join(folder('graphiql'), 'graphiql.min.js'))],
    ['graphiql.css', { type: 'text/css; charset=utf-8', body: readFileSync(join(folder('graphiql'), 'graphiql.min.css')) }],
    ['elma.js', { type: 'text/javascript; charset=utf-8', body: Buffer.from(BOOT) }],
  ]);
}

function sendPage(reply: FastifyReply) {
  return reply
    .header('content-type', 'text/html; charset=utf-8')
    .header(
      'content-security-policy',
      "default-src 'none'; script-src 'self'; style-src 'self' 'unsafe-inline'; img-src 'self' data:; font-src 'self' data:; connect-src 'self'",
    )
    .header('cache-control', 'no-store')
    .send(PAGE);
}

const PAGE = `<!doctype html>
<html lang="en"><head><meta charset="utf-8"><title>ELMA GraphQL explorer</title>
<link rel="stylesheet" href="/graphiql/assets/graphiql.css">
<style>body{margin:0;height:100vh;display:flex;flex-direction:column;font:14px system-ui,sans-serif}
header{padding:.4rem 1rem;background:#223;color:#fff;display:flex;gap:1rem;align-items:center}
header input{flex:1;font:inherit}#graphiql{flex:1;min-height:0}</style></head>
<body><header><b>ELMA GraphQL</b><input id="token" placeholder="bearer token (npx elma token --tenant acme --purposes support)"></header>
<div id="graphiql">Loading GraphiQL...</div>
<script src="/graphiql/assets/react.js"></script>
<script src="/graphiql/assets/react-dom.js"></script>
<script src="/graphiql/assets/graphiql.js"></script>
<script src="/graphiql/assets/elma.js"></script>
</body></html>`;

/** Starts GraphiQL with a fetcher that sends the token field as a bearer token (an external file: the page's CSP allows no inline script). */
const BOOT = `(function () {
  var token = document.getElementById('token');
  token.value = localStorage.getItem('elma.token') || '';
  token.addEventListener('change', function () { localStorage.setItem('elma.token', token.value.trim()); });
  var endpoint = location.pathname.replace(/\\/graphiql$/, '/graphql');
  function fetcher(params) {
    var headers = { 'content-type': 'application/json', accept: 'application/graphql-response+json, application/json' };
    if (token.value.trim()) headers.authorization = 'Bearer ' + token.value.trim();
    return fetch(endpoint, { method: 'POST', headers: headers, body: JSON.stringify(params) }).then(function (r) { return r.json(); });
  }
  var query = '# Ctrl-Enter runs the query\\nquery Recall($input: RecallInput!) {\\n  recall(input: $input) { recallId items { id kind text } }\\n}\\n';
  var variables = '{ "input": { "query": "renewal", "purpose": "support" } }';
  ReactDOM.createRoot(document.getElementById('graphiql')).render(
    React.createElement(GraphiQL, { fetcher: fetcher, defaultQuery: query, defaultVariableEditorOpen: true, variables: variables }),
  );
})();
`;
