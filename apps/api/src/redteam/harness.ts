import { writeFileSync } from 'node:fs';
import { join } from 'node:path';
import type { Principal } from '@elma/domain';
import type { TestApp } from '../testing';

/**
 * The red team's shared machinery: hostile requests over real HTTP, each
 * checked for anything its caller must not see. A leak is a response that
 * shows a forbidden marker or id the prober did not send itself; a 5xx is
 * counted apart. Every probe is tallied by surface (REST route or GraphQL),
 * and `report()` prints probes, leaks and 5xx per surface.
 */
export interface Secret {
  /** A memory or event id the caller must not learn. */
  id: string;
  /** A unique string planted in the secret record's text. */
  marker: string;
  /** Where the secret lives, for the leak message. */
  label?: string;
}

export interface ProbeResult {
  status: number;
  text: string;
  headers: Headers;
}

export interface ProbeRequest {
  token?: string;
  method: string;
  path: string;
  /** A JSON value, or a raw string sent as is. */
  body?: unknown;
  headers?: Record<string, string>;
}

export interface Tally {
  probes: number;
  leaks: number;
  serverErrors: number;
}

/** Where each red-team file leaves its tallies for the run's summary (set by tests/redteam.global-setup.ts). */
export const REDTEAM_DIR_ENV = 'ELMA_REDTEAM_DIR';

export class RedTeam {
  readonly leaks: string[] = [];
  readonly serverErrors: string[] = [];
  private readonly tallies = new Map<string, Tally>();
  private readonly tokens = new Map<string, string>();

  constructor(
    readonly app: TestApp,
    readonly name: string,
  ) {}

  get probes(): number {
    let n = 0;
    for (const tally of this.tallies.values()) n += tally.probes;
    return n;
  }

  /** A token for `name` in `tenant`, minted once. */
  async token(tenant: string, name: string, claims: Partial<Principal>): Promise<string> {
    const key = `${tenant}/${name}`;
    if (!this.tokens.has(key)) this.tokens.set(key, await this.app.token({ tenant, sub: `${name}-${tenant}`, ...claims }));
    return this.tokens.get(key)!;
  }

  /** Sends one request without counting it (set-up and checks). */
  async send(request: ProbeRequest): Promise<ProbeResult> {
    const { token, method, path, body, headers = {} } = request;
    const response = await fetch(`${this.app.url}${path}`, {
      method,
      headers: {
        ...(token ? { authorization: `Bearer ${token}` } : {}),
        ...(body === undefined ? {} : { 'content-type': 'application/json' }),
        ...headers,
      },
      body: body === undefined ? undefined : typeof body === 'string' ? body : JSON.stringify(body),
    });
    return { status: response.status, text: await response.text(), headers: response.headers };
  }

  /** Sends a probe; records a leak for each forbidden secret shown and a server error for any 5xx. */
  async probe(
    label: string,
    request: ProbeRequest,
    forbidden: readonly Secret[] = [],
    surface = surfaceOf(request.method, request.path),
  ): Promise<ProbeResult> {
    const tally = this.tallies.get(surface) ?? { probes: 0, leaks: 0, serverErrors: 0 };
    this.tallies.set(surface, tally);
    tally.probes += 1;
    const result = await this.send(request);
    const asked = `${request.path} ${typeof request.body === 'string' ? request.body : JSON.stringify(request.body ?? '')}`;
    for (const secret of forbidden) {
      // What the prober itself sent may be echoed (a 404 names the id asked for); a leak is anything else of the record.
      const shown =
        (!asked.includes(secret.id) && result.text.includes(secret.id)) ||
        (!asked.includes(secret.marker) && result.text.includes(secret.marker));
      if (shown) {
        tally.leaks += 1;
        this.leaks.push(`${label}: ${secret.label ?? secret.id} (HTTP ${result.status}) ${result.text.slice(0, 300)}`);
      }
    }
    if (result.status >= 500) {
      tally.serverErrors += 1;
      this.serverErrors.push(`${label}: HTTP ${result.status} ${result.text.slice(0, 300)}`);
    }
    return result;
  }

  /** Prints the report (and any leak and 5xx in full), then closes the app under test. */
  async close(): Promise<void> {
    process.stdout.write(`${[this.report(), ...this.leaks, ...this.serverErrors].join('\n')}\n`);
    await this.app.close();
  }

  /** Probes, leaks and 5xx by surface, as a table; also left for the run's summary when one is collected. */
  report(): string {
    const dir = process.env[REDTEAM_DIR_ENV];
    if (dir)
      writeFileSync(join(dir, `${this.name.replace(/[^A-Za-z0-9_-]+/g, '-')}.json`), JSON.stringify(Object.fromEntries(this.tallies)));
    return formatReport(`red team (${this.name})`, this.tallies);
  }
}

/** A table of probes, leaks and 5xx per surface, with a total line. */
export function formatReport(title: string, tallies: ReadonlyMap<string, Tally>): string {
  const rows = [...tallies.entries()].sort(([a], [b]) => a.localeCompare(b));
  const width = Math.max(7, ...rows.map(([surface]) => surface.length));
  const line = (surface: string, t: Tally) =>
    `  ${surface.padEnd(width)}  ${String(t.probes).padStart(7)}  ${String(t.leaks).padStart(5)}  ${String(t.serverErrors).padStart(4)}`;
  const total = rows.reduce(
    (sum, [, t]) => ({ probes: sum.probes + t.probes, leaks: sum.leaks + t.leaks, serverErrors: sum.serverErrors + t.serverErrors }),
    {
      probes: 0,
      leaks: 0,
      serverErrors: 0,
    },
  );
  return [
    `${title}: ${total.probes} probes, ${total.leaks} leaks, ${total.serverErrors} 5xx`,
    `  ${'surface'.padEnd(width)}  ${'probes'.padStart(7)}  ${'leaks'.padStart(5)}  ${'5xx'.padStart(4)}`,
    ...rows.map(([surface, t]) => line(surface, t)),
    line('total', total),
  ].join('\n');
}

/** Adds one file's tallies into a run's. */
export function addTallies(into: Map<string, Tally>, from: Record<string, Tally>): void {
  for (const [surface, t] of Object.entries(from)) {
    const sum = into.get(surface) ?? { probes: 0, leaks: 0, serverErrors: 0 };
    into.set(surface, { probes: sum.probes + t.probes, leaks: sum.leaks + t.leaks, serverErrors: sum.serverErrors + t.serverErrors });
  }
}

/** `POST /v1/memories/{id}`-style surface names: ids replaced by `{id}`, the query string dropped. */
export function surfaceOf(method: string, path: string): string {
  const route = path.split('?')[0];
  if (route.startsWith('/graphql')) return `graphql (${method})`;
  const template = route
    .split('/')
    .map((part) => (/^(mem|era|evt|hold|ev)_|^[0-9a-f-]{16,}$|\d{3,}/i.test(part) || part.length > 40 ? '{id}' : part))
    .join('/');
  return `${method} ${template}`;
}

/** Runs tasks with bounded concurrency. */
export async function pool<T>(items: readonly T[], width: number, run: (item: T) => Promise<unknown>): Promise<void> {
  let next = 0;
  await Promise.all(
    Array.from({ length: width }, async () => {
      while (next < items.length) await run(items[next++]);
    }),
  );
}
