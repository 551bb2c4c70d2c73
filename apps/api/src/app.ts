import 'reflect-metadata';
import { Module, type DynamicModule } from '@nestjs/common';
import { NestFactory } from '@nestjs/core';
import { GraphQLModule } from '@nestjs/graphql';
import { MercuriusDriver, type MercuriusDriverConfig } from '@nestjs/mercurius';
import { FastifyAdapter, type NestFastifyApplication } from '@nestjs/platform-fastify';
import { DocumentBuilder, SwaggerModule } from '@nestjs/swagger';
import type { FastifyReply, FastifyRequest } from 'fastify';
import { TokenVerifier } from '@elma/infra';
import type { Elma } from '@elma/runtime';
import { MemoryResolver } from './graphql/memory.resolver';
import { AuthGuard } from './http/auth.guard';
import { registerAdmission } from './http/admission';
import { ProblemFilter, onClientError, sendProblem } from './http/problem.filter';
import type { Problem } from './http/problem';
import { causeOf, serverErrorLog } from './http/server-errors';
import { graphqlErrorFormatter, GRAPHQL_RESPONSE_TYPE, wantsGraphqlResponse } from './graphql/errors';
import { registerExplorer } from './graphql/explorer';
import { limitsRule } from './graphql/limits';
import {
  ADJUDICATION,
  ERASURE_DESK,
  GOVERNANCE,
  HEALTH,
  INGEST,
  KEYS,
  MEMORIES,
  RECALL,
  TOKEN_VERIFIER,
  type HealthCheck,
} from './http/tokens';
import { KeysController } from './rest/keys.controller';
import { ErasureDesk, type ErasureWorkflows } from './erasure/erasure-desk';
import { ErasuresController, WellKnownController } from './rest/erasures.controller';
import { ErasureResolver } from './graphql/erasure.resolver';
import { EventsController } from './rest/events.controller';
import { GovernanceController } from './rest/governance.controller';
import { HealthController } from './rest/health.controller';
import { MemoriesController } from './rest/memories.controller';
import { RecallController } from './rest/recall.controller';

/** Requests above this are refused with 413 before any handler runs. */
export const BODY_LIMIT_BYTES = 1024 * 1024;

@Module({})
class ApiModule {
  static with(elma: Elma, options: ApiOptions): DynamicModule {
    const logServerError = serverErrorLog(elma.logger);
    return {
      module: ApiModule,
      imports: [
        GraphQLModule.forRoot<MercuriusDriverConfig>({
          driver: MercuriusDriver,
          autoSchemaFile: true,
          path: '/graphql',
          graphiql: false,
          context: (request: FastifyRequest) => ({ request }),
          // One operation per request: a batched array would run many under one admission slot and one set of limits.
          allowBatchedQueries: false,
          validationRules: [limitsRule(elma.config.graphql)],
          errorFormatter: graphqlErrorFormatter(logServerError),
        }),
      ],
      controllers: [
        EventsController,
        MemoriesController,
        RecallController,
        GovernanceController,
        ErasuresController,
        WellKnownController,
        HealthController,
        KeysController,
      ],
      providers: [
        // One token per service; the verifier is built once per API (it caches the identity provider's keys).
        { provide: INGEST, useValue: elma.ingest },
        { provide: MEMORIES, useValue: elma.memories },
        { provide: ADJUDICATION, useValue: elma.adjudication },
        { provide: RECALL, useValue: elma.recall },
        { provide: GOVERNANCE, useValue: elma.governance },
        { provide: KEYS, useValue: elma.keys },
        { provide: HEALTH, useValue: { health: () => elma.health() } satisfies HealthCheck },
        {
          provide: TOKEN_VERIFIER,
          useValue: new TokenVerifier(
            elma.config.auth,
            elma.config.jwtSecret,
            (tenant) => elma.policies.get(tenant),
            undefined,
            elma.revocations,
          ),
        },
        { provide: ERASURE_DESK, useValue: new ErasureDesk(elma.erasure.requests, elma.signer, options.erasures) },
        AuthGuard,
        MemoryResolver,
        ErasureResolver,
      ],
    };
  }
}

let overrideWarningSilenced = false;

/**
 * Fastify reports FSTWRN004 each time an error handler is set in a scope that
 * has one, and marks it `unlimited`, so it cannot be marked as shown. ELMA
 * sets its handler on purpose (see createApi), so that one warning is
 * dropped; every other warning is printed as before.
 */
function silenceExpectedOverrideWarning(): void {
  if (overrideWarningSilenced) return;
  overrideWarningSilenced = true;
  const emit = process.emitWarning.bind(process) as (...args: unknown[]) => void;
  process.emitWarning = ((...args: unknown[]) => {
    // process-warning calls emitWarning(message, name, code).
    if (args[2] === 'FSTWRN004') return;
    emit(...args);
  }) as typeof process.emitWarning;
}

export interface ApiOptions {
  /** The erasure workflows on Temporal; without it the erasure endpoints answer 503 TEMPORAL.UNAVAILABLE. */
  erasures?: ErasureWorkflows;
}

/** Builds the HTTP app (REST under /v1, GraphQL at /graphql, OpenAPI at /docs) on a process's ELMA services. */
export async function createApi(elma: Elma, options: ApiOptions = {}): Promise<NestFastifyApplication> {
  const logServerError = serverErrorLog(elma.logger);
  const onServerError = (error: unknown, requestId: string, problem: Problem) => logServerError(problem, { requestId, ...causeOf(error) });
  const adapter = new FastifyAdapter({
    bodyLimit: BODY_LIMIT_BYTES,
    logger: false,
    // Headers too large, a malformed request line, a timeout: Node's parser refuses them before Fastify has a request.
    clientErrorHandler: onClientError,
    // A path that is not validly encoded, or a parameter longer than the router keeps (414).
    frameworkErrors: (error: Error, request: FastifyRequest, reply: FastifyReply) => sendProblem(request, reply, error, onServerError),
  });
  const fastify = adapter.getInstance();
  // Before any route exists, so the hook runs first for every route Nest adds.
  registerAdmission(fastify, elma.config.admission);
  // GraphQL-over-HTTP: a client that accepts the GraphQL media type gets it (and its statuses, see graphql/errors.ts).
  fastify.addHook('onSend', async (request, reply, payload) => {
    if (
      request.routeOptions.url === '/graphql' &&
      wantsGraphqlResponse(request) &&
      String(reply.getHeader('content-type')).startsWith('application/json')
    ) {
      void reply.header('content-type', `${GRAPHQL_RESPONSE_TYPE}; charset=utf-8`);
    }
    return payload;
  });
  if (elma.config.graphql.explorer) registerExplorer(fastify);
  const app = await NestFactory.create<NestFastifyApplication>(ApiModule.with(elma, options), adapter, { logger: false });
  app.useGlobalFilters(new ProblemFilter(onServerError));

  // Body parsing fails inside Fastify before Nest's router sees the request: map those errors here too.
  // Routes keep the handler in force when they are registered (at init, so this one). Nest then sets its
  // own for later routes, which Fastify reports as an override (FSTWRN004); that report is expected here.
  silenceExpectedOverrideWarning();
  app
    .getHttpAdapter()
    .getInstance()
    .setErrorHandler((error: unknown, request: FastifyRequest, reply: FastifyReply) => sendProblem(request, reply, error, onServerError));

  const document = SwaggerModule.createDocument(
    app,
    new DocumentBuilder()
      .setTitle('ELMA')
      .setDescription('Governed long-term memory for AI agents. Errors are RFC 9457 problem+json with a stable `code`.')
      .setVersion('0.1.0')
      .addBearerAuth()
      .build(),
  );
  SwaggerModule.setup('docs', app, document, { jsonDocumentUrl: 'docs/openapi.json' });
  await app.init();
  return app;
}
