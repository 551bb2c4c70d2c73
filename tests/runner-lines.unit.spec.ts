import { describe, expect, it } from 'vitest';
import { lineMapper, withoutRunnerClosingLine } from '../scripts/runner-lines';

/** pytest's closing-line shape as a CI reader would match it. */
const pytestClosing = /^=+ .*\bin [\d.]+s.* =+$/;

describe('the fuzz stage output', () => {
  it("rewrites schemathesis' pytest-shaped closing banner, which reads as 'no test executed'", () => {
    for (const banner of [
      '============================= 2 warnings in 90.18s =============================',
      '========================= 1 failed, 3 warnings in 12.00s ========================',
      '==== 5 passed in 1.2s (0:00:01) ====',
    ]) {
      const out = withoutRunnerClosingLine(banner);
      expect(out).not.toMatch(pytestClosing);
      expect(out).toMatch(/^schemathesis summary: .*in [\d.]+s/);
    }
  });

  it('leaves every other line as it is, section banners included', () => {
    for (const line of [
      '=================================== SUMMARY ====================================',
      'Test cases:',
      '  5747 generated, 5747 passed',
      '== fuzz',
      '',
    ]) {
      expect(withoutRunnerClosingLine(line)).toBe(line);
    }
  });

  it('maps whole lines across chunk boundaries and flushes the last one', () => {
    let printed = '';
    const mapper = lineMapper(withoutRunnerClosingLine, (text) => (printed += text));
    mapper.push('Seed: 1\n=== 2 warn');
    mapper.push('ings in 9.1s ===\ntail');
    mapper.end();
    expect(printed).toBe('Seed: 1\nschemathesis summary: 2 warnings in 9.1s\ntail');
  });
});
