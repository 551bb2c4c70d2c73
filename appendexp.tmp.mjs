import Database from 'better-sqlite3';
import { randomUUID } from 'node:crypto';
import { rmSync } from 'node:fs';
const cache = process.argv[2];
const path = `/tmp/appendexp-${cache}.db`;
rmSync(path, { force: true }); rmSync(path + '-wal', { force: true });
const db = new Database(path);
db.pragma('journal_mode = WAL'); db.pragma('synchronous = NORMAL'); db.pragma('wal_autocheckpoint = 10000'); db.pragma('secure_delete = ON');
if (cache !== 'default') db.pragma(`cache_size = ${cache}`);
db.exec(`CREATE TABLE events (position INTEGER PRIMARY KEY AUTOINCREMENT, stream TEXT NOT NULL, revision INTEGER NOT NULL, id TEXT NOT NULL, type TEXT NOT NULL, data TEXT NOT NULL, metadata TEXT NOT NULL, created INTEGER NOT NULL, UNIQUE (stream, revision), UNIQUE (stream, id))`);
const ins = db.prepare('INSERT INTO events (stream, revision, id, type, data, metadata, created) VALUES (?, ?, ?, ?, ?, ?, ?)');
const last = db.prepare('SELECT revision, position FROM events WHERE stream = ? ORDER BY revision DESC LIMIT 1');
const data = 'x'.repeat(800);
const batch = db.transaction((n) => { for (let i = 0; i < n; i++) { const id = randomUUID(); for (const s of [`events-t-psn_${i % 200}`, `idempotency-t-${id}`, `memory-t-mem_${id}`]) { const l = last.get(s); ins.run(s, l ? l.revision + 1 : 0, id, 'T', data, '{"tenant":"t"}', Date.now()); } } });
let t = performance.now();
for (let k = 1; k <= 6000; k++) { batch(100); if (k % 1000 === 0) { console.log(cache, `${k * 100} ingests`, Math.round(100000 / ((performance.now() - t) / 1000)), 'ingests/s'); t = performance.now(); } }
