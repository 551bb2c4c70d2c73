import { createHash } from 'node:crypto';
import { cpSync, mkdtempSync, readdirSync, readFileSync, rmSync, statSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join, relative } from 'node:path';
import Database from 'better-sqlite3';
import { afterEach, describe, expect, it } from 'vitest';
import { FORMAT_VERSIONS, type Principal } from '@elma/domain';
import { loadConfig, readSqliteHeader, SqliteEventLog } from '@elma/infra';
import { silentLogger } from '@elma/shared';
import { openElma } from './elma';

/** Written by the code before subject pseudonyms and before format versions (tests/fixtures/README.md): every file at version 0. */
const FIXTURE = join(__dirname, '../../../tests/fixtures/pre-pseudonyms');

const dirs: string[] = [];
afterEach(() => {
  for (const dir of dirs.splice(0)) rmSync(dir, { recursive: true, force: true });
});
const newDir = () => {
  const dir = mkdtempSync(join(tmpdir(), 'elma-formats-'));
  dirs.push(dir);
  return dir;
};

const config = (dir: string) => loadConfig({ ELMA_EMBEDDER: 'hashing', ELMA_DATA_DIR: dir, ELMA_PORT: '0' });
const open = (dir: string) => openElma(config(dir), { logger: silentLogger });
const principal = (tenant: string): Principal => ({
  tenant,
  sub: 'agent-1',
  roles: ['agent'],
  purposes: ['support'],
  clearance: 'internal',
});
const version = (path: string) => {
  const header = readSqliteHeader(path);
  return header.kind === 'sqlite' ? header.userVersion : header.kind;
};

/** Every file of the folder with its SHA-256: what "nothing changed" is checked against. */
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

/** A folder as this build leaves it: two tenants with memories, English and Chinese. */
async function currentFolder(): Promise<string> {
  const dir = newDir();
  const elma = await open(dir);
  try {
    await elma.runner.start();
    for (const tenant of ['acme', 'globex']) {
      const { position } = await elma.ingest.ingest(principal(tenant), {
        events: [
          {
            subject: 'cust-1',
            occurredAt: '2026-11-20T10:00:00Z',
            activity: 'chat.turn',
            content: { text: `${tenant} asked about the pallet invoice` },
            source: { system: 'crm', externalId: `${tenant}-1` },
            purposes: ['support'],
          },
          {
            subject: 'cust-1',
            occurredAt: '2026-11-21T10:00:00Z',
            activity: 'chat.turn',
            content: { text: '客户询问了托盘发票' },
            source: { system: 'crm', externalId: `${tenant}-2` },
            purposes: ['support'],
          },
        ],
      });
      await elma.runner.waitFor(BigInt(position));
    }
  } finally {
    await elma.close();
  }
  return dir;
}

function stamp(path: string, userVersion: number): void {
  const db = new Database(path, { fileMustExist: true });
  db.pragma(`user_version = ${userVersion}`);
  db.close();
}

const recallTexts = async (elma: Awaited<ReturnType<typeof open>>, tenant: string, query: string) =>
  (await elma.recall.recall(principal(tenant), { query, purpose: 'support', budgetTokens: 2000, consistency: 'strong' })).items.map(
    (i) => i.text,
  );

describe('a data folder from before format versions (tests/fixtures/pre-pseudonyms)', () => {
  it('opens: log and vault migrated and stamped in place, partitions listed for a rebuild and still answering until then', async () => {
    const dir = newDir();
    cpSync(FIXTURE, dir, { recursive: true });

    const elma = await open(dir);
    try {
      expect(elma.formats.refuse).toEqual([]);
      expect(elma.formats.rebuild).toEqual(['acme', 'globex']);
      expect(elma.formats.migrate.map((m) => `${m.file} ${m.from}->${m.to}`)).toEqual([
        `events.db 0->${FORMAT_VERSIONS.eventLog}`,
        `keys.db 0->${FORMAT_VERSIONS.keyVault}`,
        `index/meta.db 0->${FORMAT_VERSIONS.indexMeta}`,
      ]);
      // (fixture-subject-one's records are under a legal hold, which recall does not serve.)
      expect(await recallTexts(elma, 'globex', 'renewal contract')).toContain('renewal of the support contract');
      expect(await recallTexts(elma, 'acme', '仓库托盘')).toContain('询问了仓库的托盘运输');
    } finally {
      await elma.close();
    }
    expect(version(join(dir, 'events.db'))).toBe(FORMAT_VERSIONS.eventLog);
    expect(version(join(dir, 'keys.db'))).toBe(FORMAT_VERSIONS.keyVault);
    expect(version(join(dir, 'index/meta.db'))).toBe(FORMAT_VERSIONS.indexMeta);
    // Until ReindexWorkflow replaces them (workflow spec), the partitions keep their old stamp, so a restart still rebuilds them.
    expect(version(join(dir, 'index/tenant-acme.db'))).toBe(0);
    const again = await open(dir);
    try {
      expect(again.formats.migrate).toEqual([]);
      expect(again.formats.rebuild).toEqual(['acme', 'globex']);
    } finally {
      await again.close();
    }
  });
});

describe('a data folder written by this build', () => {
  it('is stamped with this build’s versions everywhere and opens with nothing to do', async () => {
    const dir = await currentFolder();
    expect(version(join(dir, 'events.db'))).toBe(FORMAT_VERSIONS.eventLog);
    expect(version(join(dir, 'keys.db'))).toBe(FORMAT_VERSIONS.keyVault);
    expect(version(join(dir, 'index/meta.db'))).toBe(FORMAT_VERSIONS.indexMeta);
    expect(version(join(dir, 'index/tenant-acme.db'))).toBe(FORMAT_VERSIONS.indexRows);
    const elma = await open(dir);
    try {
      expect(elma.formats).toEqual({ refuse: [], rebuild: [], migrate: [] });
    } finally {
      await elma.close();
    }
  });
});

describe('a data folder this build cannot read is refused before anything is written to it', () => {
  it.each([
    ['events.db', 'eventLog'],
    ['keys.db', 'keyVault'],
    ['index/meta.db', 'indexMeta'],
    ['index/tenant-acme.db', 'indexRows'],
  ] as const)('%s stamped by a newer build: refused naming the file and both versions, every byte unchanged', async (file, format) => {
    const dir = await currentFolder();
    const newer = FORMAT_VERSIONS[format] + 1;
    stamp(join(dir, file), newer);
    const before = checksums(dir);

    const refused = open(dir);

    await expect(refused).rejects.toMatchObject({ code: 'FORMAT.DATA_FOLDER_UNREADABLE' });
    await expect(refused).rejects.toThrow(
      `  - ${file}: ${format} format version ${newer}, newer than this build reads (${FORMAT_VERSIONS[format]})`,
    );
    await expect(refused).rejects.toThrow(`ELMA cannot open the data folder ${dir}; nothing in it was changed:`);
    expect(checksums(dir)).toEqual(before);
  });

  it.each(['events.db', 'keys.db', 'index/meta.db'])(
    '%s with garbage over its header: refused as unreadable, every byte unchanged',
    async (file) => {
      const dir = await currentFolder();
      writeFileSync(join(dir, file), Buffer.from('garbage written over the header by a fault drill '.repeat(3)), { flag: 'r+' });
      const before = checksums(dir);

      await expect(open(dir)).rejects.toThrow(`  - ${file}: not readable as `);
      expect(checksums(dir)).toEqual(before);
    },
  );

  it('an event log stamped newer is refused by the adapter too (a WAL the header check could not see)', async () => {
    const dir = await currentFolder();
    stamp(join(dir, 'events.db'), FORMAT_VERSIONS.eventLog + 1);
    expect(() => SqliteEventLog.open(join(dir, 'events.db'))).toThrow(
      expect.objectContaining({
        code: 'FORMAT.TOO_NEW',
        message: expect.stringContaining(`events.db: eventLog format version ${FORMAT_VERSIONS.eventLog + 1}`),
      }),
    );
  });
});

describe('a damaged index partition (derived data)', () => {
  it('does not stop the folder from opening: the tenant is listed for a rebuild from the log, the others answer', async () => {
    const dir = await currentFolder();
    writeFileSync(join(dir, 'index/tenant-acme.db'), Buffer.from('garbage written over the header by a fault drill '.repeat(3)), {
      flag: 'r+',
    });

    const elma = await open(dir);
    try {
      expect(elma.formats.refuse).toEqual([]);
      expect(elma.formats.rebuild).toEqual(['acme']);
      expect(await recallTexts(elma, 'globex', '托盘发票')).toContain('客户询问了托盘发票');
    } finally {
      await elma.close();
    }
  });
});
