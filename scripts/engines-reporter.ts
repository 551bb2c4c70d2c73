/**
 * A vitest reporter for `npm run test:engines`: writes each test's file, name, state and skip note (the
 * reason given to `context.skip(note)`) as JSON to the file named by ELMA_ENGINES_REPORT. Vitest's own JSON
 * reporter drops the note.
 */
import { writeFileSync } from 'node:fs';
import type { Reporter, TestModule } from 'vitest/node';

export interface EngineTestResult {
  file: string;
  name: string;
  state: 'passed' | 'failed' | 'skipped' | 'pending';
  note?: string;
}

export default class EnginesReporter implements Reporter {
  onTestRunEnd(modules: ReadonlyArray<TestModule>): void {
    const target = process.env.ELMA_ENGINES_REPORT;
    if (!target) return;
    const results: EngineTestResult[] = [];
    for (const module of modules) {
      for (const test of module.children.allTests()) {
        const result = test.result();
        results.push({
          file: module.relativeModuleId,
          name: test.fullName,
          state: result.state,
          note: result.state === 'skipped' ? result.note : undefined,
        });
      }
    }
    writeFileSync(target, JSON.stringify(results));
  }
}
