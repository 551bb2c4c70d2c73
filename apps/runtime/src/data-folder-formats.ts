import { join } from 'node:path';
import { DataFolderUnreadable, FORMAT_VERSIONS, planFormats, type FormatPlan, type FormatVersions } from '@elma/domain';
import { inspectDataFolder, stampSqliteVersion, type ElasticsearchMemoryIndex, type ElmaConfig } from '@elma/infra';

/**
 * Reads the format version of every engine file in the data folder and
 * decides what opening it takes, before anything writes to the folder (not
 * even the Temporal dev server's database). A file this build cannot read
 * (newer, or damaged where the log cannot rebuild it) throws
 * `DataFolderUnreadable`, whose message names each file with its versions and
 * what to do; the folder is left as it was.
 */
export function checkDataFolder(config: ElmaConfig, supported: FormatVersions = FORMAT_VERSIONS): FormatPlan {
  const found = inspectDataFolder(config.dataDir, { eventLog: !config.eventStore, index: config.index === 'sqlite' });
  const plan = planFormats(found, supported);
  if (plan.refuse.length > 0) throw new DataFolderUnreadable(config.dataDir, plan.refuse);
  return plan;
}

/**
 * Stamps the files whose format did not change since before versions were
 * recorded, once their adapters have opened (and created) them. The event
 * log stamps itself (its layout migration), and index partitions when they
 * are created.
 */
export function stampUnchangedFormats(config: ElmaConfig, supported: FormatVersions = FORMAT_VERSIONS): void {
  stampSqliteVersion(join(config.dataDir, 'keys.db'), supported.keyVault);
}

/**
 * The Elasticsearch side of the check: each tenant's index at an older
 * mapping version joins `plan.rebuild` (ReindexWorkflow builds a new index
 * beside it and moves the alias); a newer one throws `DataFolderUnreadable`
 * naming the index, before the projection writes anything.
 */
export async function checkElasticsearchFormats(
  config: ElmaConfig,
  index: Pick<ElasticsearchMemoryIndex, 'mappingVersions'>,
  plan: FormatPlan,
  supported: FormatVersions = FORMAT_VERSIONS,
): Promise<void> {
  const found = (await index.mappingVersions()).map(({ tenant, index: file, version }) => ({
    file,
    format: 'elasticsearchMapping' as const,
    version,
    tenant,
  }));
  const more = planFormats(found, supported);
  if (more.refuse.length > 0)
    throw new DataFolderUnreadable(
      config.dataDir,
      more.refuse,
      `the Elasticsearch indices of namespace ${config.elasticsearch?.namespace ?? 'elma'}`,
    );
  plan.rebuild = [...new Set([...plan.rebuild, ...more.rebuild])].sort();
}
