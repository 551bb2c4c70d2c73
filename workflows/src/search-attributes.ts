import { defineSearchAttributeKey, SearchAttributeType } from '@temporalio/common';

/**
 * Custom search attributes ELMA's workflows carry, visible and filterable in the Temporal UI
 * (`ElmaTenant = "acme"`). They must be registered on the namespace before a workflow uses them:
 * the dev server does it from `ELMA_SEARCH_ATTRIBUTES`; a cluster needs
 * `temporal operator search-attribute create --name ElmaTenant --type Keyword` (and so on).
 *
 * Visibility records outlive erasure, so values here are ids and states only: never content, and never a
 * data subject's identifier in the clear.
 */
export const ElmaTenant = defineSearchAttributeKey('ElmaTenant', SearchAttributeType.KEYWORD);
export const ElmaStatus = defineSearchAttributeKey('ElmaStatus', SearchAttributeType.KEYWORD);
export const ElmaRequestId = defineSearchAttributeKey('ElmaRequestId', SearchAttributeType.KEYWORD);
export const ElmaReason = defineSearchAttributeKey('ElmaReason', SearchAttributeType.KEYWORD);

/** Name -> type, in the form `temporal server start-dev --search-attribute NAME=Type` takes. */
export const ELMA_SEARCH_ATTRIBUTES = {
  ElmaTenant: 'Keyword',
  ElmaStatus: 'Keyword',
  ElmaRequestId: 'Keyword',
  ElmaReason: 'Keyword',
} as const satisfies Record<string, 'Keyword' | 'Text' | 'Int' | 'Double' | 'Bool' | 'Datetime' | 'KeywordList'>;
