import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join, resolve } from 'node:path';
import { parseArgs } from 'node:util';
import { SPLITS, loadSplit, type Split } from '../eval/bilingual/data';
import { summaryText } from '../eval/bilingual/report';
import { runBilingual } from '../eval/bilingual/run';
import { BILINGUAL_TARGETS, ENFORCE_TARGETS, shortfalls } from '../eval/bilingual/targets';

export const EVAL_BILINGUAL_USAGE = `Asks the bilingual test set (apps/cli/src/eval/bilingual: English and Chinese memories, questions across and
within the languages) of recall as shipped, the dense route alone and BM25 alone, with the configured embedder
(the model by default), and prints top-3, top-1 and MRR per split and direction as a markdown table.
  --split   open (what tuning may look at), sealed (reported separately, after tuning) or all (default)
  --json    also write the figures, every question's rank and the misses to FILE
`;

/** `npm run eval:bilingual`: the bilingual recall evaluation. Exit 2 on a bad option; the figures never fail it. */
export async function evalBilingualCommand(argv: string[]): Promise<number> {
  const { values } = parseArgs({ args: argv, options: { split: { type: 'string', default: 'all' }, json: { type: 'string' } } });
  const splits: Split[] | undefined =
    values.split === 'all' ? [...SPLITS] : (SPLITS as readonly string[]).includes(values.split) ? [values.split as Split] : undefined;
  if (!splits) {
    process.stderr.write(`--split needs open, sealed or all, got "${values.split}"\n`);
    return 2;
  }
  const workDir = mkdtempSync(join(tmpdir(), 'elma-bilingual-'));
  try {
    const parts = splits.map((split) => ({ split, tenants: loadSplit(split).tenants }));
    const run = await runBilingual({ parts, workDir, progress: (line) => process.stderr.write(`${line}\n`) });
    process.stdout.write(`${summaryText(run)}\n`);
    if (values.json) {
      const report = { ...run, targets: BILINGUAL_TARGETS, enforceTargets: ENFORCE_TARGETS, shortfalls: shortfalls(run.rows) };
      writeFileSync(resolve(process.cwd(), values.json), `${JSON.stringify(report, null, 2)}\n`);
    }
    return 0;
  } finally {
    rmSync(workDir, { recursive: true, force: true });
  }
}
