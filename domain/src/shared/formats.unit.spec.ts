import { describe, expect, it } from 'vitest';
import { DataFolderUnreadable, FORMAT_UPGRADES, FORMAT_VERSIONS, planFormats, type FoundFormat } from './formats';

const current = (file: string, format: keyof typeof FORMAT_VERSIONS, tenant?: string): FoundFormat => ({
  file,
  format,
  version: FORMAT_VERSIONS[format],
  ...(tenant ? { tenant } : {}),
});

describe('planning a data folder by its format versions', () => {
  it('given every file at this build’s versions, when planned, then nothing is refused, migrated or rebuilt', () => {
    const plan = planFormats([
      current('events.db', 'eventLog'),
      current('keys.db', 'keyVault'),
      current('index/meta.db', 'indexMeta'),
      current('index/tenant-acme.db', 'indexRows', 'acme'),
    ]);
    expect(plan).toEqual({ refuse: [], rebuild: [], migrate: [] });
  });

  it('given files from before versions (0), when planned, then the log and vault migrate in place and partitions are rebuilt', () => {
    const plan = planFormats([
      { file: 'events.db', format: 'eventLog', version: 0 },
      { file: 'keys.db', format: 'keyVault', version: 0 },
      { file: 'index/meta.db', format: 'indexMeta', version: 0 },
      { file: 'index/tenant-globex.db', format: 'indexRows', version: 0, tenant: 'globex' },
      { file: 'index/tenant-acme.db', format: 'indexRows', version: 0, tenant: 'acme' },
    ]);
    expect(plan.refuse).toEqual([]);
    expect(plan.rebuild).toEqual(['acme', 'globex']);
    expect(plan.migrate.map((m) => [m.file, m.from, m.to])).toEqual([
      ['events.db', 0, FORMAT_VERSIONS.eventLog],
      ['keys.db', 0, FORMAT_VERSIONS.keyVault],
      ['index/meta.db', 0, FORMAT_VERSIONS.indexMeta],
    ]);
  });

  it('given a file newer than this build reads, when planned, then it is refused with both versions, whatever its kind', () => {
    const plan = planFormats([
      { file: 'events.db', format: 'eventLog', version: FORMAT_VERSIONS.eventLog + 1 },
      { file: 'index/tenant-acme.db', format: 'indexRows', version: FORMAT_VERSIONS.indexRows + 4, tenant: 'acme' },
    ]);
    expect(plan.refuse).toEqual([
      { file: 'events.db', format: 'eventLog', found: FORMAT_VERSIONS.eventLog + 1, supported: FORMAT_VERSIONS.eventLog, reason: 'newer' },
      {
        file: 'index/tenant-acme.db',
        format: 'indexRows',
        found: FORMAT_VERSIONS.indexRows + 4,
        supported: FORMAT_VERSIONS.indexRows,
        reason: 'newer',
      },
    ]);
    expect(plan.rebuild).toEqual([]);
  });

  it('given an unreadable log or vault, when planned, then it is refused; an unreadable partition is rebuilt from the log instead', () => {
    const plan = planFormats([
      { file: 'events.db', format: 'eventLog', version: undefined },
      { file: 'keys.db', format: 'keyVault', version: undefined },
      { file: 'index/tenant-acme.db', format: 'indexRows', version: undefined, tenant: 'acme' },
    ]);
    expect(plan.refuse.map((p) => [p.file, p.reason])).toEqual([
      ['events.db', 'unreadable'],
      ['keys.db', 'unreadable'],
    ]);
    expect(plan.rebuild).toEqual(['acme']);
  });

  it('given a build one indexRows version ahead, when planned, then every partition of the version before is rebuilt', () => {
    const next = { ...FORMAT_VERSIONS, indexRows: FORMAT_VERSIONS.indexRows + 1 };
    const plan = planFormats([current('index/tenant-acme.db', 'indexRows', 'acme'), current('events.db', 'eventLog')], next);
    expect(plan.rebuild).toEqual(['acme']);
    expect(plan.refuse).toEqual([]);
  });

  it('every format says what opening an older file does', () => {
    expect(Object.keys(FORMAT_UPGRADES).sort()).toEqual(Object.keys(FORMAT_VERSIONS).sort());
  });
});

describe('the refusal an operator reads', () => {
  it('says the index/ folder may be deleted instead, the index being rebuilt from the log', () => {
    const error = new DataFolderUnreadable('/d', [
      { file: 'index/tenant-acme.db', format: 'indexRows', found: 3, supported: 1, reason: 'newer' },
    ]);
    expect(error.message.split('\n').slice(1)).toEqual([
      '  - index/tenant-acme.db: indexRows format version 3, newer than this build reads (1)',
      'A newer ELMA wrote it: run that version of ELMA (or a newer one), or restore a backup made by this version.',
      'The index/ folder can instead be deleted as a whole: ELMA replays the event log into a new index when it starts.',
    ]);
  });

  it('names every file with its versions and says what to do, with the stable code FORMAT.DATA_FOLDER_UNREADABLE', () => {
    const error = new DataFolderUnreadable('/var/lib/elma', [
      { file: 'events.db', format: 'eventLog', found: 7, supported: 1, reason: 'newer' },
      { file: 'keys.db', format: 'keyVault', found: undefined, supported: 1, reason: 'unreadable' },
    ]);
    expect(error.code).toBe('FORMAT.DATA_FOLDER_UNREADABLE');
    expect(error.message).toBe(
      [
        'ELMA cannot open the data folder /var/lib/elma; nothing in it was changed:',
        '  - events.db: eventLog format version 7, newer than this build reads (1)',
        '  - keys.db: not readable as keyVault format version 1 (not a database of ELMA, or damaged)',
        'A newer ELMA wrote it: run that version of ELMA (or a newer one), or restore a backup made by this version.',
        'A damaged file: restore the folder from a backup.',
      ].join('\n'),
    );
  });
});
