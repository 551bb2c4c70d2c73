/**
 * Run as a child process by the purge fault tests.
 *
 * `kill-mid-purge <dir>`: indexes a victim record among neighbours, starts
 * its purge and kills itself with SIGKILL at the purge's first wait for I/O
 * (after the row deletion committed, before the WAL checkpoint): a kill -9 at
 * a deterministic point, with no hook in the code under test.
 *
 * `retry <dir>`: purges the victim again in a fresh process, prints
 * `purged <count left>` and stays alive (the files are checked while the
 * process holds them, as erasure verification does) until it is killed.
 */
import { indexed } from '../../fixtures';
import { SqliteMemoryIndex } from '../sqlite-memory-index';

const PURGE_TENANT = 'acme';
const VICTIM_TEXT = 'Patient ZQXMARKER9731 was diagnosed with 糖尿病 in March.';

const [mode, dir] = process.argv.slice(2);
const index = await SqliteMemoryIndex.open({ dir, dimensions: 384 });

if (mode === 'kill-mid-purge') {
  const neighbours = Array.from({ length: 300 }, (_, i) =>
    indexed({ id: `n-${i}`, tenant: PURGE_TENANT, text: `routine note ${i} about the patient portal` }),
  );
  await index.upsert(PURGE_TENANT, [indexed({ id: 'victim', tenant: PURGE_TENANT, text: VICTIM_TEXT }), ...neighbours]);
  await index.flush();
  void index.purge(PURGE_TENANT, ['victim']);
  // The purge ran synchronously up to its first await; this runs at the first turn of the event loop after it.
  setImmediate(() => process.kill(process.pid, 'SIGKILL'));
} else if (mode === 'retry') {
  await index.purge(PURGE_TENANT, ['victim']);
  process.stdout.write(`purged ${await index.count(PURGE_TENANT)}\n`);
  setInterval(() => undefined, 60_000);
} else {
  throw new Error(`unknown mode ${mode}`);
}
