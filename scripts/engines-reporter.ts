/**
 * A vitest reporter for `npm run test:engines`: writes each test's file, name, state and skip note (the
 * reason given to `context.skip(note)`) as JSON to the file named by ELMA_ENGINES_REPORT. Vitest's own JSON
 * reporter drops the note.
 */
import { writeFileSync } from 'node:fs';
import type { Reporter, TestCase, TestModule } from 'vitest/node';

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
        // A test that never ran because a hook of its suite (or its file) failed is not skipped: it failed.
        const broken = result.state === 'skipped' && !result.note && suiteFailed(test);
        results.push({
          file: module.relativeModuleId,
          name: test.fullName,
          state: broken ? 'failed' : result.state,
          note: broken ? 'a hook of its suite failed before it ran' : result.state === 'skipped' ? result.note : undefined,
        });
      }
    }
    writeFileSync(target, JSON.stringify(results));
  }
}

function suiteFailed(test: TestCase): boolean {
  for (let parent = test.parent; ; parent = parent.parent) {
    if (parent.errors().length > 0) return true;
    if (parent.type === 'module') return false;
  }
}
