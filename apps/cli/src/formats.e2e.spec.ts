import { spawnSync } from 'node:child_process';
import { createHash } from 'node:crypto';
import { cpSync, mkdtempSync, readdirSync, readFileSync, rmSync, statSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join, relative } from 'node:path';
import Database from 'better-sqlite3';
import { afterEach, describe, expect, it } from 'vitest';
import { FORMAT_VERSIONS } from '@elma/domain';
import { readSqliteHeader } from '@elma/infra';
import { devServersOn, elmaArgs, mintToken, ownElmaEnv, startElma, waitFor } from '../../../tests/support/elma-process';

/** Written before subject pseudonyms and format versions (tests/fixtures/README.md). */
const FIXTURE = join(__dirname, '../../../tests/fixtures/pre-pseudonyms');

function checksums(dir: string): Record<string, string> {
  const out: Record<string, string> = {};
  const walk = (at: string) => {
    for (const name of readdirSync(at)) {
      const path = join(at, name);
      if (statSync(path).isDirectory()) walk(path);
      else out[relative(dir, path)] = createHash('sha256').update(readFileSync(path)).digest('hex');
    }
  };
  walk(dir);
  return out;
}

/**
 * `elma start` as an operator runs it after an upgrade (or a downgrade, or
 * a damaged disk): a real process on a real data folder. A folder it cannot
 * read stops it before it writes anything, Temporal's database included,
 * with a message naming the files; an old folder is upgraded while it serves.
 */
describe('elma start on a data folder of another format', () => {
  const cleanups: (() => Promise<unknown> | unknown)[] = [];
  afterEach(async () => {
    for (const cleanup of cleanups.splice(0).reverse()) await cleanup();
  });
  const fixtureCopy = () => {
    const dir = mkdtempSync(join(tmpdir(), 'elma-start-formats-'));
    cleanups.push(() => rmSync(dir, { recursive: true, force: true }));
    cpSync(FIXTURE, dir, { recursive: true });
    return dir;
  };

  const refusedStart = async (dir: string) => {
    const { env } = await ownElmaEnv(dir);
    return spawnSync(process.execPath, elmaArgs('start'), { env, encoding: 'utf8', timeout: 60_000 });
  };

  it('written by a newer ELMA: exits 1 with the file and both versions named, and the folder byte for byte as it was', async () => {
    const dir = fixtureCopy();
    const events = new Database(join(dir, 'events.db'), { fileMustExist: true });
    events.pragma(`user_version = ${FORMAT_VERSIONS.eventLog + 1}`);
    events.close();
    const before = checksums(dir);

    const run = await refusedStart(dir);

    expect(run.status).toBe(1);
    expect(run.stderr).toContain(`elma: ELMA cannot open the data folder ${dir}; nothing in it was changed:`);
    expect(run.stderr).toContain(
      `  - events.db: eventLog format version ${FORMAT_VERSIONS.eventLog + 1}, newer than this build reads (${FORMAT_VERSIONS.eventLog})`,
    );
    expect(run.stderr).toContain('A newer ELMA wrote it: run that version of ELMA (or a newer one)');
    // No owner file, no Temporal database, no -wal/-shm: nothing at all.
    expect(checksums(dir)).toEqual(before);
    expect(devServersOn(join(dir, 'temporal.db'))).toEqual([]);
  });

  it('with a damaged key vault: exits 1 naming keys.db, the folder untouched', async () => {
    const dir = fixtureCopy();
    writeFileSync(join(dir, 'keys.db'), Buffer.from('garbage written over the header by a fault drill '.repeat(3)), { flag: 'r+' });
    const before = checksums(dir);

    const run = await refusedStart(dir);

    expect(run.status).toBe(1);
    expect(run.stderr).toContain(
      `  - keys.db: not readable as keyVault format version ${FORMAT_VERSIONS.keyVault} (not a database of ELMA, or damaged)`,
    );
    expect(run.stderr).toContain('A damaged file: restore the folder from a backup.');
    expect(checksums(dir)).toEqual(before);
  });

  it('from before format versions: starts, rebuilds the index through ReindexWorkflow while serving, and recalls', async () => {
    const dir = fixtureCopy();
    const { env } = await ownElmaEnv(dir);
    const elma = await startElma(env);
    cleanups.push(() => elma.stop());
    const token = mintToken(env, '--tenant', 'acme', '--roles', 'agent', '--purposes', 'support');
    const recall = async (query: string) => {
      const response = await fetch(`${elma.api}/v1/recall`, {
        method: 'POST',
        headers: { authorization: `Bearer ${token}`, 'content-type': 'application/json' },
        body: JSON.stringify({ query, purpose: 'support', budgetTokens: 2000 }),
      });
      expect(response.status).toBe(200);
      return ((await response.json()) as { items: { text: string }[] }).items.map((i) => i.text);
    };

    // Recall answers while the rebuild runs,
    await recall('仓库托盘');
    // the partitions come out in this build's format,
    const stamped = (tenant: string) => {
      const header = readSqliteHeader(join(dir, 'index', `tenant-${tenant}.db`));
      return header.kind === 'sqlite' && header.userVersion === FORMAT_VERSIONS.indexRows;
    };
    await waitFor(() => stamped('acme') && stamped('globex'), 60_000, 'the rebuilt partitions');
    expect(elma.output()).toContain('index rebuilds for a format upgrade');
    // and the rebuilt index answers.
    await waitFor(async () => (await recall('仓库托盘')).includes('询问了仓库的托盘运输'), 30_000, 'recall after the rebuild');
  });
});
