import 'reflect-metadata';
import { Module, type DynamicModule } from '@nestjs/common';
import { NestFactory } from '@nestjs/core';
import { GraphQLModule } from '@nestjs/graphql';
import { MercuriusDriver, type MercuriusDriverConfig } from '@nestjs/mercurius';
import { FastifyAdapter, type NestFastifyApplication } from '@nestjs/platform-fastify';
import { DocumentBuilder, SwaggerModule } from '@nestjs/swagger';
import type { FastifyReply, FastifyRequest } from 'fastify';
import type { GraphQLError } from 'graphql';
import type { Elma } from '@elma/infra';
import { MemoryResolver } from './graphql/memory.resolver';
import { AuthGuard } from './http/auth.guard';
import { registerAdmission } from './http/admission';
import { ProblemFilter, sendProblem } from './http/problem.filter';
import { toProblem, type Problem } from './http/problem';
import { serverErrorLog } from './http/server-errors';
import { ELMA, ERASURE_DESK } from './http/tokens';
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
          errorFormatter: (execution, context) => {
            const errors = (execution.errors ?? []).map((error: GraphQLError) => {
              const problem = toProblem(error.originalError ?? error);
              if (problem.status >= 500 && !error.originalError) {
                // Errors of the query itself (syntax, unknown field) are the caller's.
                return { message: error.message, locations: error.locations, path: error.path, extensions: { code: 'GRAPHQL.INVALID_QUERY', status: 400 } };
              }
              if (problem.status >= 500) logServerError(problem, { api: 'graphql', name: (error.originalError as Error)?.name });
              return { message: problem.detail, locations: error.locations, path: error.path, extensions: { code: problem.code, status: problem.status, errors: problem.errors } };
            });
            void context;
            return { statusCode: 200, response: { data: execution.data ?? null, errors } };
          },
        }),
      ],
      controllers: [EventsController, MemoriesController, RecallController, GovernanceController, ErasuresController, WellKnownController, HealthController],
      providers: [
        { provide: ELMA, useValue: elma },
        { provide: ERASURE_DESK, useValue: new ErasureDesk(elma, options.erasures) },
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
  const adapter = new FastifyAdapter({ bodyLimit: BODY_LIMIT_BYTES, logger: false });
  // Before any route exists, so the hook runs first for every route Nest adds.
  registerAdmission(adapter.getInstance(), elma.config.admission);
  const app = await NestFactory.create<NestFastifyApplication>(ApiModule.with(elma, options), adapter, { logger: false });
  const logServerError = serverErrorLog(elma.logger);
  const onServerError = (error: unknown, requestId: string, problem: Problem) =>
    logServerError(problem, { requestId, name: (error as Error)?.name, cause: (error as { code?: string })?.code });
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
