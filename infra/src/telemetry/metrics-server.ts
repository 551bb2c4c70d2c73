import { createServer, type Server } from 'node:http';
import type { Registry } from 'prom-client';
import { renderMetrics } from './metrics';

/**
 * `GET /metrics` on a listener of its own, for a process that serves no API (`elma worker` with
 * ELMA_WORKER_METRICS_PORT): the same text as the API's /metrics, for that process's families.
 * Anything else is 404; nothing is read from the request but its method and path.
 */
export async function serveMetrics(
  registry: Registry,
  listen: { host: string; port: number },
): Promise<{ port: number; close(): Promise<void> }> {
  const server: Server = createServer((request, response) => {
    const path = (request.url ?? '').split('?')[0];
    if (request.method !== 'GET' || path !== '/metrics') {
      response.writeHead(404, { 'content-type': 'text/plain; charset=utf-8' }).end('not found\n');
      return;
    }
    renderMetrics([registry]).then(
      ({ contentType, body }) => response.writeHead(200, { 'content-type': contentType }).end(body),
      () => response.writeHead(500, { 'content-type': 'text/plain; charset=utf-8' }).end('metrics unavailable\n'),
    );
  });
  await new Promise<void>((resolve, reject) => {
    server.once('error', reject);
    server.listen(listen.port, listen.host, () => resolve());
  });
  const address = server.address();
  return {
    port: typeof address === 'object' && address ? address.port : listen.port,
    close: () => new Promise<void>((resolve) => server.close(() => resolve())),
  };
}
