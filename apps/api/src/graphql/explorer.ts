import type { FastifyInstance } from 'fastify';

/**
 * A GraphQL explorer for the embedded mode: one self-contained page (no
 * script or style from elsewhere, so it works offline), with the schema read
 * by introspection, a query and variables editor and the bearer token kept in
 * the browser's local storage. Served at /graphiql, and at /graphql when a
 * browser opens it (GET, HTML accepted, no query).
 */
export function registerExplorer(fastify: FastifyInstance): void {
  fastify.get('/graphiql', (_request, reply) => sendPage(reply));
  fastify.addHook('onRequest', async (request, reply) => {
    if (request.method !== 'GET' || request.routeOptions.url !== '/graphql') return;
    const query = request.query as { query?: unknown } | undefined;
    if (query?.query !== undefined || !String(request.headers.accept ?? '').includes('text/html')) return;
    return sendPage(reply);
  });
}

function sendPage(reply: import('fastify').FastifyReply) {
  return reply
    .header('content-type', 'text/html; charset=utf-8')
    .header('content-security-policy', "default-src 'none'; script-src 'unsafe-inline'; style-src 'unsafe-inline'; connect-src 'self'")
    .header('cache-control', 'no-store')
    .send(PAGE);
}

const PAGE = `<!doctype html>
<html lang="en"><head><meta charset="utf-8"><title>ELMA GraphQL explorer</title>
<style>
body{font:14px system-ui,sans-serif;margin:0;display:grid;grid-template-columns:1fr 1fr 22rem;grid-template-rows:auto 1fr 10rem;height:100vh}
header{grid-column:1/4;padding:.5rem 1rem;background:#223;color:#fff;display:flex;gap:1rem;align-items:center}
header input{flex:1;font:inherit}button{font:inherit;padding:.2rem 1rem}
textarea,pre{font:13px ui-monospace,monospace;margin:0;padding:.5rem;border:1px solid #ccc;overflow:auto;white-space:pre-wrap}
#query{grid-column:1;grid-row:2}#variables{grid-column:1;grid-row:3}#result{grid-column:2;grid-row:2/4}
#schema{grid-column:3;grid-row:2/4;overflow:auto;padding:.5rem;border-left:1px solid #ccc}
#schema a{cursor:pointer;color:#0645ad}#schema div{margin:.2rem 0}
</style></head><body>
<header><b>ELMA GraphQL</b><input id="token" placeholder="bearer token (npm run elma -- token --tenant acme --purposes support)"><button id="run" title="Ctrl-Enter">Run</button></header>
<textarea id="query" spellcheck="false"># Ctrl-Enter runs the query
query Recall($input: RecallInput!) {
  recall(input: $input) { recallId items { id kind text } }
}</textarea>
<textarea id="variables" spellcheck="false">{ "input": { "query": "renewal", "purpose": "support" } }</textarea>
<pre id="result"></pre>
<div id="schema">Loading the schema...</div>
<script>
const $ = (id) => document.getElementById(id);
$('token').value = localStorage.getItem('elma.token') || '';
$('token').onchange = () => localStorage.setItem('elma.token', $('token').value.trim());
async function call(query, variables) {
  const headers = { 'content-type': 'application/json', accept: 'application/graphql-response+json, application/json' };
  const token = $('token').value.trim();
  if (token) headers.authorization = 'Bearer ' + token;
  const response = await fetch(location.pathname.replace(/\\/graphiql$/, '/graphql'), { method: 'POST', headers, body: JSON.stringify({ query, variables }) });
  return { status: response.status, body: await response.json().catch(() => null) };
}
async function run() {
  let variables;
  try { variables = $('variables').value.trim() ? JSON.parse($('variables').value) : undefined; }
  catch { $('result').textContent = 'the variables are not valid JSON'; return; }
  const { status, body } = await call($('query').value, variables);
  $('result').textContent = 'HTTP ' + status + '\\n' + JSON.stringify(body, null, 2);
}
$('run').onclick = run;
document.addEventListener('keydown', (e) => { if (e.key === 'Enter' && (e.ctrlKey || e.metaKey)) run(); });
const typeName = (t) => t.kind === 'NON_NULL' ? typeName(t.ofType) + '!' : t.kind === 'LIST' ? '[' + typeName(t.ofType) + ']' : t.name;
const baseName = (t) => t.ofType ? baseName(t.ofType) : t.name;
let types = {};
function show(name) {
  const type = types[name]; const box = $('schema'); box.textContent = '';
  const title = document.createElement('h3'); title.textContent = name; box.append(title);
  if (name !== 'Query') { const back = document.createElement('a'); back.textContent = '< Query'; back.onclick = () => show('Query'); box.append(back); }
  if (types.Mutation && name === 'Query') { const m = document.createElement('a'); m.textContent = ' Mutation >'; m.onclick = () => show('Mutation'); box.append(m); }
  for (const f of type.fields || type.inputFields || []) {
    const row = document.createElement('div');
    const args = (f.args || []).map((a) => a.name + ': ' + typeName(a.type)).join(', ');
    row.append(f.name + (args ? '(' + args + ')' : '') + ': ');
    const link = document.createElement('a'); link.textContent = typeName(f.type);
    const target = baseName(f.type); if (types[target] && (types[target].fields || types[target].inputFields)) link.onclick = () => show(target);
    row.append(link);
    for (const a of f.args || []) { const t = baseName(a.type); if (types[t] && types[t].inputFields) { const l = document.createElement('a'); l.textContent = ' ' + t; l.onclick = () => show(t); row.append(l); } }
    if (f.description) { const d = document.createElement('div'); d.style.color = '#666'; d.textContent = f.description; row.append(d); }
    box.append(row);
  }
  for (const v of type.enumValues || []) { const row = document.createElement('div'); row.textContent = v.name; box.append(row); }
}
const typeRef = 'kind name ofType { kind name ofType { kind name ofType { kind name ofType { kind name } } } }';
call('{ __schema { types { name kind description fields { name description args { name type { ' + typeRef + ' } } type { ' + typeRef + ' } } inputFields { name description type { ' + typeRef + ' } } enumValues { name } } } }')
  .then(({ body }) => { for (const t of body.data.__schema.types) types[t.name] = t; show('Query'); })
  .catch(() => { $('schema').textContent = 'the schema could not be read'; });
</script></body></html>`;
