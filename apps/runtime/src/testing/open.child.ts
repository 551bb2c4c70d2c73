/**
 * Run as a child process by the pseudonym migration's kill test: prints
 * `opening`, opens ELMA on the data folder given (which migrates it), prints
 * `opened` and closes.
 */
import { loadConfig } from '@elma/infra';
import { openElma } from '../elma';
import { silentLogger } from '@elma/shared';

const [dir] = process.argv.slice(2);
process.stdout.write('opening\n');
const elma = await openElma(loadConfig({ ELMA_EMBEDDER: 'hashing', ELMA_DATA_DIR: dir, ELMA_PORT: '0' }), { logger: silentLogger });
process.stdout.write('opened\n');
await elma.close();
