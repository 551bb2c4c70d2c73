/** Injection token for the process's ELMA services (a port bound to its adapter by a token). */
export const ELMA = Symbol('ELMA');

/** Injection token for the erasure desk (ELMA services plus the Temporal side of erasure). */
export const ERASURE_DESK = Symbol('ERASURE_DESK');
