import { describe, expect, it } from 'vitest';
import { DEFAULT_POLICY } from '../policy/policy';
import { SecretDetected } from '../shared/errors';
import { cleanContent } from './hygiene';

/** Assembled at run time so the repository itself does not trip secret scanners. */
const token = 'ghp_' + 'a1B2c3D4e5F6g7H8i9J0'.repeat(2).slice(0, 36);
const fingerprint = () => 'FP';

const procedure = {
  text: 'Rotate the deploy key',
  procedure: { name: 'Key rotation', version: 1, steps: ['open the vault', `paste ${token}`], conditions: ['on a weekday'] },
};

describe('secrets in structured content', () => {
  it('are refused in a procedure step, naming the step', () => {
    const refused = (() => {
      try {
        cleanContent(procedure, 'internal', '', DEFAULT_POLICY, fingerprint);
      } catch (error) {
        return error;
      }
    })();
    expect(refused).toBeInstanceOf(SecretDetected);
    expect((refused as SecretDetected).findings).toEqual([{ kind: 'token', path: 'content.procedure.steps.1' }]);
  });

  it('are redacted in place under a redacting policy, keeping the structure', () => {
    const policy = { ...DEFAULT_POLICY, secrets: { mode: 'redact' as const } };
    const { content } = cleanContent(procedure, 'internal', '', policy, fingerprint);
    expect(content.procedure).toEqual({ ...procedure.procedure, steps: ['open the vault', expect.not.stringContaining(token)] });
    const edge = {
      text: 'x',
      relation: { from: { type: 'person' as const, id: token }, relation: 'owns', to: { type: 'project' as const, id: 'apollo' } },
    };
    const cleaned = cleanContent(edge, 'internal', '', policy, fingerprint).content;
    expect(cleaned.relation?.from.id).not.toContain(token);
    expect(cleaned.relation?.to).toEqual({ type: 'project', id: 'apollo' });
  });
});
