import type { WorkloadGenerator, WorkloadName } from '../types';
import type { AttackStrings } from './attack-strings';
import { w1Project } from './w1-project';
import { w2Policy } from './w2-policy';
import { w3Tenants } from './w3-tenants';
import { w4Regulated } from './w4-regulated';
import { w5Poisoning } from './w5-poisoning';

// The loader (attack-strings.ts: loadAttackStrings, PUBLIC_ATTACK_SOURCE) does I/O and is imported on its own.
export type { AttackStrings } from './attack-strings';
export { FINANCE_ROLE, W3_POLICY } from './w3-tenants';
export type { W5Options } from './w5-poisoning';
export { w1Project, w2Policy, w3Tenants, w4Regulated, w5Poisoning };

/**
 * The five workloads of the paper (§7.2), W5 with the public attack strings
 * given (from `loadAttackStrings`, once per run) or its synthetic scripts only.
 */
export function workloads(attackStrings?: AttackStrings): Record<WorkloadName, WorkloadGenerator> {
  return {
    W1: w1Project,
    W2: w2Policy,
    W3: w3Tenants,
    W4: w4Regulated,
    W5: (seed, options) => w5Poisoning(seed, { ...options, ...(attackStrings ? { attackStrings } : {}) }),
  };
}

/** The five workloads, W5 with its synthetic scripts only (no I/O): pure, for tests and quick runs. */
export const WORKLOADS: Record<WorkloadName, WorkloadGenerator> = workloads();
