import { NotFoundException } from '@nestjs/common';
import type { FastifyInstance, FastifyReply, FastifyRequest } from 'fastify';
import { toProblem } from '../http/problem';
import type { ConsoleAssets } from './assets';

/**
 * The page's policy: its own script and style sheet only (no inline script or style, nothing from elsewhere),
 * calls to this origin only, no framing, no forms posted anywhere, no base URL games.
 */
export const CONSOLE_CSP =
  "default-src 'none'; script-src 'self'; style-src 'self'; img-src 'self' data:; connect-src 'self'; " +
  "base-uri 'none'; form-action 'none'; frame-ancestors 'none'";

/**
 * The compliance console at /console: a static page, its style sheet and its script, served from memory.
 * Everything it shows comes from the REST API with the bearer token the user pastes (kept in the tab's
 * sessionStorage, sent only as an Authorization header, never in a URL).
 */
export function registerConsole(fastify: FastifyInstance, assets: ConsoleAssets): void {
  fastify.get('/console', (_request, reply) => reply.redirect('/console/', 302));
  fastify.get('/console/', (_request, reply) => send(reply, assets.get('index.html')!));
  fastify.get('/console/:name', (request, reply) => {
    const asset = assets.get((request.params as { name: string }).name);
    return asset ? send(reply, asset) : notFound(request, reply);
  });
}

function send(reply: FastifyReply, asset: { type: string; body: Buffer }) {
  return reply
    .header('content-type', asset.type)
    .header('content-security-policy', CONSOLE_CSP)
    .header('x-content-type-options', 'nosniff')
    .header('referrer-policy', 'no-referrer')
    .header('x-frame-options', 'DENY')
    .header('cache-control', 'no-store')
    .send(asset.body);
}

function notFound(request: FastifyRequest, reply: FastifyReply) {
  return reply
    .code(404)
    .type('application/problem+json')
    .send(toProblem(new NotFoundException(), undefined, String(request.id)));
}
