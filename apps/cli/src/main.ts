#!/usr/bin/env node
import { runCli } from './cli';

runCli(process.argv.slice(2)).then(
  (code) => {
    if (code !== undefined) process.exitCode = code;
  },
  (error: unknown) => {
    process.stderr.write(`elma: ${error instanceof Error ? error.message : String(error)}\n`);
    process.exitCode = 1;
  },
);
