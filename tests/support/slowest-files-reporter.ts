import { relative } from 'node:path';
import type { Reporter, TestModule } from 'vitest/node';

/** How many files the closing list names. */
const SHOWN = 15;

/**
 * Closes every vitest run with its slowest spec files: each file's own time (environment, import and
 * collection, setup, tests and hooks) and test count, so that a CI stage shows where its time goes. Printed
 * after vitest's summary; no line starts with `Tests`, which `.ci/run` counts.
 */
export default class SlowestFilesReporter implements Reporter {
  onTestRunEnd(modules: ReadonlyArray<TestModule>): void {
    if (modules.length === 0) return;
    const rows = modules
      .map((module) => {
        const d = module.diagnostic();
        const seconds = (d.environmentSetupDuration + d.prepareDuration + d.collectDuration + d.setupDuration + d.duration) / 1000;
        return { file: relative(process.cwd(), module.moduleId), seconds, tests: [...module.children.allTests()].length };
      })
      .sort((a, b) => b.seconds - a.seconds);
    const total = rows.reduce((sum, row) => sum + row.seconds, 0);
    const lines = rows
      .slice(0, SHOWN)
      .map((row) => `  ${row.seconds.toFixed(1).padStart(7)} s  ${String(row.tests).padStart(4)} tests  ${row.file}`);
    process.stdout.write(
      `\nslowest spec files (${Math.min(SHOWN, rows.length)} of ${rows.length}; all files: ${total.toFixed(0)} s of file time):\n${lines.join('\n')}\n`,
    );
  }
}
