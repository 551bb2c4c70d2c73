import { describe, expect, it } from 'vitest';
import { typedIn } from './user-folder';

describe('the folder a command was typed in', () => {
  it('is INIT_CWD under `npm run`, which runs the script in the project root', () => {
    // Given npm ran the script in the root, typed in docs/
    const env = { INIT_CWD: '/clone/docs', npm_package_json: '/clone/package.json' };
    // Then the command's folder is docs/
    expect(typedIn(env, '/clone')).toBe('/clone/docs');
  });

  it('is the working folder under npx and the bin, which run where typed', () => {
    expect(typedIn({ INIT_CWD: '/clone/docs', npm_package_json: '/clone/docs/package.json' }, '/clone/docs')).toBe('/clone/docs');
    expect(typedIn({}, '/clone/docs')).toBe('/clone/docs');
  });

  it('is the working folder of a process started elsewhere, whatever INIT_CWD it inherited', () => {
    // Given an `elma` a test spawns in a folder of its own, under `npm test` typed in the root
    const env = { INIT_CWD: '/clone', npm_package_json: '/clone/package.json' };
    // Then its relative paths are its own folder's
    expect(typedIn(env, '/tmp/elma-test')).toBe('/tmp/elma-test');
  });
});
