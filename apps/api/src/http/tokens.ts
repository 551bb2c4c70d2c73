/** Injection token for the process's ELMA services (a port bound to its adapter by a token). */
export const ELMA = Symbol('ELMA');
