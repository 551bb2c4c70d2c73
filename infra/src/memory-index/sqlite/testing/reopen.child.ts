/**
 * Run as a child process by the index tests: opens the index folder `dir`
 * in a fresh process (loading the tenant's saved graph), runs a dense and a
 * text search for `tenant`, and prints `count <records> hits <hits>`. A
 * graph file that breaks the native loader aborts this process, not the test.
 */
import { embed, searchIds } from '../../fixtures';
import { SqliteMemoryIndex } from '../sqlite-memory-index';

const [dir, tenant, query] = process.argv.slice(2);
const index = await SqliteMemoryIndex.open({ dir, dimensions: 384 });
const hits = await searchIds(index, tenant, query, embed(query));
process.stdout.write(`count ${await index.count(tenant)} hits ${hits.length}\n`);
await index.close();
