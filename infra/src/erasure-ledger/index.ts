export { SqliteErasureLedger, ERASURE_LEDGER_FILE } from './sqlite-erasure-ledger';
export { openErasureLedger, type LedgerHealing } from './replicated-erasure-ledger';
