import { Controller, Get, Inject, Res } from '@nestjs/common';
import { ApiTags } from '@nestjs/swagger';
import type { FastifyReply } from 'fastify';
import type { Elma } from '@elma/infra';
import { ELMA } from '../http/tokens';

@ApiTags('health')
@Controller('health')
export class HealthController {
  constructor(@Inject(ELMA) private readonly elma: Elma) {}

  /** Each engine and whether it is up; 503 when any is down; `degraded` (200) when all are up but one serves only part (e.g. a quarantined tenant). */
  @Get()
  async health(@Res() reply: FastifyReply) {
    const engines = await this.elma.health();
    const up = Object.values(engines).every((e) => e.up);
    const degraded = Object.values(engines).some((e) => e.degraded);
    return reply.status(up ? 200 : 503).send({ status: up ? (degraded ? 'degraded' : 'up') : 'down', engines });
  }
}
