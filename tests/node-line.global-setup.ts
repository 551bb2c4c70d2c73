import Database from 'better-sqlite3';

/**
 * For `npm run test:node-lines`: prints which Node runs the suites (the test workers are forked from this
 * process's binary) and fails the run at once when it is not the one asked for (ELMA_NODE_LINE_EXPECT, set by
 * scripts/test-node-lines.sh) or when better-sqlite3 was built for another Node (NODE_MODULE_VERSION).
 */
export default function setup(): void {
  const expected = process.env.ELMA_NODE_LINE_EXPECT;
  if (expected && process.versions.node !== expected) {
    throw new Error(`expected Node ${expected}, but the suites run under Node ${process.versions.node} (${process.execPath})`);
  }
  const db = new Database(':memory:');
  const sqlite = (db.prepare('select sqlite_version() as v').get() as { v: string }).v;
  db.close();
  process.stderr.write(
    `[elma] Node ${process.version} (${process.execPath}, modules ${process.versions.modules}), SQLite ${sqlite} via better-sqlite3\n`,
  );
}
