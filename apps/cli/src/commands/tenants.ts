import { writeFile } from 'node:fs/promises';
import { parseArgs } from 'node:util';
import { API_OPTIONS, API_USAGE_NOTE, callApi, processIo, report, resolveApi, type CommandIo } from '../api-client';

const USAGE = `usage: elma tenants offboard <tenant> --reason <contract_ended|customer_request|legal_requirement|platform_decision> [--export]
       elma tenants approve <tenant> <requestId>
       elma tenants status <tenant> <requestId> [--wait]
       elma tenants certificate <tenant> <requestId> [--out FILE]
A platform admin's token (role platform-admin, tenant elma_platform).
${API_USAGE_NOTE}
`;

const WAIT_POLL_MS = 1_000;

/**
 * Tenant off-boarding for operators, over the API (so the same four-eyes and audit rules hold): ask, approve,
 * follow, fetch the signed certificate (then check it with `elma verify-certificate`). Exit codes: 0 done,
 * 1 refused by the API (its problem+json on stderr) or the API unreachable (ApiUnreachable), 2 usage.
 */
export async function tenantsCommand(argv: string[], io: CommandIo = processIo()): Promise<number> {
  let parsed;
  try {
    parsed = parseArgs({
      args: argv,
      options: {
        ...API_OPTIONS,
        reason: { type: 'string' },
        export: { type: 'boolean', default: false },
        wait: { type: 'boolean', default: false },
        out: { type: 'string' },
      },
      allowPositionals: true,
    });
  } catch (error) {
    io.stderr.write(`${(error as Error).message}\n${USAGE}`);
    return 2;
  }
  const { values, positionals } = parsed;
  const [action, tenant, requestId] = positionals;
  const api = resolveApi(values, io.env);
  const usage = (message: string) => {
    io.stderr.write(`elma tenants: ${message}\n${USAGE}`);
    return 2;
  };
  if (!api.token) return usage('no token: set ELMA_TOKEN or pass --token');
  if (!tenant) return usage('name the tenant');
  const base = `/v1/tenants/${encodeURIComponent(tenant)}/offboard`;
  const call = (method: string, path: string, body?: unknown) => callApi(api, method, path, { body });

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
}
