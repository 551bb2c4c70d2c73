export { Elma, type ElmaOptions, type ErasureQuery, type EventInput, type GetOptions, type ListQuery, type MemoryInput } from './elma.js';
export type { RecallOptions, SubjectErasure, WaitOptions } from './elma.js';
export { CLIENT_CODES, ElmaError } from './errors.js';
export type { RetryInfo } from './http.js';
export type * from './types.js';
export type { components, operations, paths } from './openapi.gen.js';
