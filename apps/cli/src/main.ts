#!/usr/bin/env node
import { findRepoRoot } from '@elma/infra/tools';
import { runCli } from './cli';
import { settleInTypedFolder } from './user-folder';

// Everything ELMA creates is owner-only: databases and their -wal/-shm files, index graphs, secrets, and the
// Temporal dev server's database (a child inherits the mask). The SQLite adapters also create their files 0600.
process.umask(0o077);
// Relative paths are the user's: see settleInTypedFolder (and README, "The command line").
settleInTypedFolder(findRepoRoot());

runCli(process.argv.slice(2)).then(
  (code) => {
    if (code !== undefined) process.exitCode = code;
  },
  (error: unknown) => {
    process.stderr.write(`elma: ${error instanceof Error ? error.message : String(error)}\n`);
    process.exitCode = 1;
  },
);
