import { describe, expect, it } from 'vitest';
import { evalCommand } from './eval';

/** `npm run eval` refuses bad options before it runs anything (exit 2, a message naming the option). */
describe('elma eval options', () => {
  it.each([
    [['--seeds', '0'], /--seeds needs a positive integer/],
    [['--seeds', 'many'], /--seeds needs a positive integer/],
    [['--budget', '0'], /--budget needs a positive integer/],
    [['--budget', '-5'], /argument is ambiguous/],
    [['--colour'], /Unknown option/],
    [['--locomo-json', '/nonexistent/locomo.json'], /--locomo-json .*ENOENT/],
    [['--locomo-json', 'package.json'], /not the JSON `elma eval-locomo --json` writes/],
    [['--scale', '0'], /--scale needs a number/],
    [['--only', 'W1,W9'], /unknown: W9/],
    [['--systems', 'B1,Z9'], /--systems: unknown Z9/],
  ])('given %j, then it exits 2 and says why', async (argv, message) => {
    const written: string[] = [];
    const write = process.stderr.write.bind(process.stderr);
    process.stderr.write = ((chunk: string) => written.push(String(chunk)) > 0) as typeof process.stderr.write;
    try {
      expect(await evalCommand(argv)).toBe(2);
    } finally {
      process.stderr.write = write;
    }
    expect(written.join('')).toMatch(message);
  });
});
