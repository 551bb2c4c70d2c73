import { Controller, Get, Inject, Res } from '@nestjs/common';
import { ApiResponse, ApiTags } from '@nestjs/swagger';
import type { FastifyReply } from 'fastify';
import { HEALTH, type HealthCheck } from '../http/tokens';
import { ApiProblems } from './openapi';

/**
 * The embedding lag: records BM25 already finds whose vector the background stage has not made yet.
 * Never down (recall answers by BM25 meanwhile); degraded while the embedder fails or a tenant needs
 * `elma reindex` because its vectors are of another model.
 */
const EmbeddingsHealth = {
  type: 'object',
  required: ['up'],
  properties: {
    engine: { type: 'string' },
    up: { type: 'boolean' },
    degraded: { type: 'boolean' },
    detail: {
      type: 'object',
      properties: {
        model: { type: 'string', description: 'The embedder model (id with its version) of the vectors being made.' },
        running: { type: 'boolean' },
        pending: { type: 'integer', minimum: 0, description: 'Current records without a vector of the configured model.' },
        oldestPendingAt: { type: 'string', format: 'date-time' },
        oldestPendingAgeMs: { type: 'integer', minimum: 0 },
        embedded: { type: 'integer', minimum: 0, description: 'Records embedded by this process since it started.' },
        failures: { type: 'integer', minimum: 0, description: 'Embedder failures in a row.' },
        lastError: { type: 'string', description: 'Error class or code of the last failure (never content).' },
        retryAt: { type: 'string', format: 'date-time' },
        reindexNeeded: { type: 'array', items: { type: 'string' }, description: 'Tenants whose vectors are of another model.' },
      },
    },
  },
};

const Health = {
  type: 'object',
  required: ['status', 'engines'],
  properties: {
    status: { type: 'string', enum: ['up', 'degraded', 'down'] },
    engines: {
      type: 'object',
      properties: { embeddings: EmbeddingsHealth },
      additionalProperties: { type: 'object', required: ['up'], properties: { up: { type: 'boolean' }, degraded: { type: 'boolean' } } },
    },
  },
};

@ApiTags('health')
@Controller('health')
export class HealthController {
  constructor(@Inject(HEALTH) private readonly engines: HealthCheck) {}

  /** Each engine and whether it is up; 503 when any is down; `degraded` (200) when all are up but one serves only part (e.g. a quarantined tenant). */
  @Get()
  @ApiResponse({
    status: 200,
    description: 'Every engine is up (`degraded` when one serves only part).',
    content: { 'application/json': { schema: Health } },
  })
  @ApiResponse({ status: 503, description: 'An engine is down.', content: { 'application/json': { schema: Health } } })
  @ApiProblems(414, 431)
  async health(@Res() reply: FastifyReply) {
    const engines = await this.engines.health();
    const up = Object.values(engines).every((e) => e.up);
    const degraded = Object.values(engines).some((e) => e.degraded);
    return reply.status(up ? 200 : 503).send({ status: up ? (degraded ? 'degraded' : 'up') : 'down', engines });
  }
}
