// This module is the Worker's `workflowsPath`: everything it exports is bundled into the workflow sandbox,
// and every exported function is a workflow type. Keep exports deterministic and dependency-free.
export * from './task-queue';
export * from './search-attributes';
export * from './reindex/messages';
export * from './erasure/messages';
export { reindexWorkflow } from './reindex/workflow';
export { erasureWorkflow } from './erasure/workflow';
export { retentionSweepWorkflow } from './erasure/retention-sweep';
export * from './consolidation/messages';
export { consolidationWorkflow, consolidationSweepWorkflow, tenantConsolidationWorkflow } from './consolidation/workflow';
export * from './offboarding/messages';
export { offboardWorkflow } from './offboarding/workflow';
export * from './subject-access/messages';
export { subjectAccessWorkflow } from './subject-access/workflow';
