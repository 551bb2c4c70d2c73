export { SqliteErasureLedger, ERASURE_LEDGER_FILE } from './sqlite-erasure-ledger';
