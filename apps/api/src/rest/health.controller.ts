import { Controller, Get, Inject, Res } from '@nestjs/common';
import { ApiResponse, ApiTags } from '@nestjs/swagger';
import type { FastifyReply } from 'fastify';
import { HEALTH, type HealthCheck } from '../http/tokens';
import { ApiProblems } from './openapi';

const Health = {
  type: 'object',
  required: ['status', 'engines'],
  properties: {
    status: { type: 'string', enum: ['up', 'degraded', 'down'] },
    engines: {
      type: 'object',
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
