/**
 * Run as a child process by the event log's conversion kill test: prints
 * `opening`, opens the log file given (which converts an older layout),
 * prints `opened` and closes.
 */
import { SqliteEventLog } from '../sqlite-event-log';

const [path] = process.argv.slice(2);
process.stdout.write('opening\n');
const log = SqliteEventLog.open(path);
process.stdout.write('opened\n');
await log.close();
