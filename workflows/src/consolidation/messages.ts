import { defineSignal } from '@temporalio/workflow';

export interface ConsolidationInput {
  tenant: string;
  /** Record ids standing for the subjects to consolidate; all subjects of the tenant when omitted. */
  subjectRefs?: string[];
}

export interface ConsolidationTotals {
  tenant: string;
  subjects: number;
  created: number;
  unchanged: number;
  skippedErased: number;
}

export interface ConsolidationSweepResult {
  tenants: ConsolidationTotals[];
}

/** More subjects (each named by one of its record ids) for a tenant's triggered consolidation. */
export const consolidateSubjectsSignal = defineSignal<[string[]]>('consolidateSubjects');
