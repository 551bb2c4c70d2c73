import { writeFile } from 'node:fs/promises';
import { parseArgs } from 'node:util';

const USAGE = `usage: elma tenants offboard <tenant> --reason <contract_ended|customer_request|legal_requirement|platform_decision> [--export]
       elma tenants approve <tenant> <requestId>
       elma tenants status <tenant> <requestId> [--wait]
       elma tenants certificate <tenant> <requestId> [--out FILE]
A platform admin's token (role platform-admin, tenant elma_platform) in ELMA_TOKEN or --token; the API at ELMA_URL
(default http://127.0.0.1:$ELMA_PORT or 8080), or --url.
`;

interface Output {
  write(text: string): unknown;
}

const REQUEST_TIMEOUT_MS = 30_000;
const WAIT_POLL_MS = 1_000;

/**
 * Tenant off-boarding for operators, over the API (so the same four-eyes and audit rules hold): ask, approve,
 * follow, fetch the signed certificate (then check it with `elma verify-certificate`). Exit codes: 0 done,
 * 1 refused by the API (its problem+json on stderr), 2 usage or the API unreachable.
 */
export async function tenantsCommand(
  argv: string[],
  io: { stdout: Output; stderr: Output; env: NodeJS.ProcessEnv } = { stdout: process.stdout, stderr: process.stderr, env: process.env },
): Promise<number> {
  let parsed;
  try {
    parsed = parseArgs({
      args: argv,
      options: {
        reason: { type: 'string' },
        export: { type: 'boolean', default: false },
        wait: { type: 'boolean', default: false },
        out: { type: 'string' },
        token: { type: 'string' },
        url: { type: 'string' },
      },
      allowPositionals: true,
    });
  } catch (error) {
    io.stderr.write(`${(error as Error).message}\n${USAGE}`);
    return 2;
  }
  const { values, positionals } = parsed;
  const [action, tenant, requestId] = positionals;
  const token = values.token ?? io.env.ELMA_TOKEN;
  const url = (values.url ?? io.env.ELMA_URL ?? `http://127.0.0.1:${io.env.ELMA_PORT ?? '8080'}`).replace(/\/+$/, '');
  const usage = (message: string) => {
    io.stderr.write(`elma tenants: ${message}\n${USAGE}`);
    return 2;
  };
  if (!token) return usage('no token: set ELMA_TOKEN or pass --token');
  if (!tenant) return usage('name the tenant');
  const base = `/v1/tenants/${encodeURIComponent(tenant)}/offboard`;
  const call = (method: string, path: string, body?: unknown) => request(url, token, method, path, body);

  try {
    switch (action) {
      case 'offboard': {
        if (!values.reason) return usage('--reason is required');
        return report(io, await call('POST', base, { reason: values.reason, export: values.export }));
      }
      case 'approve':
        if (!requestId) return usage('name the request id');
        return report(io, await call('POST', `${base}/${encodeURIComponent(requestId)}/approve`));
      case 'status': {
        if (!requestId) return usage('name the request id');
        for (;;) {
          const answer = await call('GET', `${base}/${encodeURIComponent(requestId)}`);
          const status = (answer.body as { status?: string } | undefined)?.status;
          if (!values.wait || answer.status !== 200 || (status !== 'running' && status !== 'awaiting_approval')) {
            const code = report(io, answer);
            return code === 0 && status !== 'completed' && values.wait ? 1 : code;
          }
          await new Promise((resolve) => setTimeout(resolve, WAIT_POLL_MS));
        }
      }
      case 'certificate': {
        if (!requestId) return usage('name the request id');
        const answer = await call('GET', `${base}/${encodeURIComponent(requestId)}/certificate`);
        if (answer.status !== 200 || !values.out) return report(io, answer);
        await writeFile(values.out, `${JSON.stringify(answer.body, null, 2)}\n`, { mode: 0o600 });
        io.stdout.write(`certificate written to ${values.out}; check it with: elma verify-certificate ${values.out}\n`);
        return 0;
      }
      default:
        return usage(`unknown action ${action ?? '(none)'}`);
    }
  } catch (error) {
    io.stderr.write(`elma tenants: the API at ${url} did not answer: ${(error as Error).message}\n`);
    return 2;
  }
}

async function request(url: string, token: string, method: string, path: string, body?: unknown) {
  const response = await fetch(`${url}${path}`, {
    method,
    headers: { authorization: `Bearer ${token}`, ...(body === undefined ? {} : { 'content-type': 'application/json' }) },
    body: body === undefined ? undefined : JSON.stringify(body),
    signal: AbortSignal.timeout(REQUEST_TIMEOUT_MS),
  });
  const text = await response.text();
  let json: unknown;
  try {
    json = text ? JSON.parse(text) : undefined;
  } catch {
    json = undefined;
  }
  return { status: response.status, text, body: json };
}

function report(io: { stdout: Output; stderr: Output }, answer: { status: number; text: string; body: unknown }): number {
  const shown = answer.body === undefined ? answer.text : JSON.stringify(answer.body, null, 2);
  if (answer.status >= 200 && answer.status < 300) {
    io.stdout.write(`${shown}\n`);
    return 0;
  }
  io.stderr.write(`HTTP ${answer.status}: ${shown}\n`);
  return 1;
}
