import 'reflect-metadata';
import { Module, type DynamicModule } from '@nestjs/common';
import { NestFactory } from '@nestjs/core';
import { GraphQLModule } from '@nestjs/graphql';
import { MercuriusDriver, type MercuriusDriverConfig } from '@nestjs/mercurius';
import { FastifyAdapter, type NestFastifyApplication } from '@nestjs/platform-fastify';
import { DocumentBuilder, SwaggerModule } from '@nestjs/swagger';
import type { FastifyReply, FastifyRequest } from 'fastify';
import { StoredUsageCounter, TenantQuotas } from '@elma/application';
import { OidcSignIn, TokenVerifier, activeTracing } from '@elma/infra';
import { ELMA_VERSION } from '@elma/shared';
import type { Elma } from '@elma/runtime';
import { MemoryResolver } from './graphql/memory.resolver';
import { AuthGuard } from './http/auth.guard';
import { registerAdmission } from './http/admission';
import { registerMetrics } from './http/metrics';
import { registerRequestTelemetry } from './http/request-telemetry';
import { registerRequestSpans, tracedService } from './http/request-spans';
import { quotaGovernance, quotaIngest, quotaMemories, quotaRecall, tenantAdmission } from './http/quotas';
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
  OFFBOARDING_DESK,
  RECALL,
  REVIEWS,
  SUBJECT_ACCESS_DESK,
  CERTIFICATE_DESK,
  SIGN_IN_DESK,
  TENANT_CLOSURES,
  TOKEN_VERIFIER,
  type HealthCheck,
} from './http/tokens';
import { OffboardingDesk, type OffboardWorkflows } from './offboarding/offboarding-desk';
import { TenantsController } from './rest/tenants.controller';
import { KeysController } from './rest/keys.controller';
import { ErasureDesk, type ErasureWorkflows } from './erasure/erasure-desk';
import { ErasuresController, WellKnownController } from './rest/erasures.controller';
import { ErasureResolver } from './graphql/erasure.resolver';
import { SubjectAccessDesk, type SubjectAccessWorkflows } from './subject-access/subject-access-desk';
import { SubjectAccessController } from './rest/subject-access.controller';
import { EventsController } from './rest/events.controller';
import { GovernanceController } from './rest/governance.controller';
import { HealthController } from './rest/health.controller';
import { MemoriesController } from './rest/memories.controller';
import { RecallController } from './rest/recall.controller';
import { ReviewsController } from './rest/reviews.controller';
import { CertificatesController } from './rest/certificates.controller';
import { SessionController } from './rest/session.controller';
import { SignInController } from './rest/sign-in.controller';
import { SignInDesk } from './sign-in/sign-in-desk';
import { CertificateDesk } from './certificate/certificate-desk';
import { registerCertificateUploads } from './certificate/uploads';
import { consoleAssets } from './console/assets';
import { registerConsole } from './console/console';

/** Requests above this are refused with 413 before any handler runs. */
export const BODY_LIMIT_BYTES = 1024 * 1024;

@Module({})
class ApiModule {
  static with(elma: Elma, options: ApiOptions, shared: { verifier: TokenVerifier; quotas: TenantQuotas }): DynamicModule {
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
        TenantsController,
        SubjectAccessController,
        WellKnownController,
        HealthController,
        KeysController,
        ReviewsController,
        CertificatesController,
        SessionController,
        SignInController,
      ],
      providers: [
        // One token per service; the verifier is built once per API (it caches the identity provider's keys).
        // Writes and recalls pass the tenant's quotas first, on REST and GraphQL alike (both inject these).
        { provide: INGEST, useValue: quotaIngest(elma.ingest, shared.quotas) },
        { provide: MEMORIES, useValue: quotaMemories(elma.memories, shared.quotas) },
        { provide: ADJUDICATION, useValue: elma.adjudication },
        { provide: RECALL, useValue: quotaRecall(elma.recall, shared.quotas) },
        { provide: GOVERNANCE, useValue: quotaGovernance(elma.governance, shared.quotas) },
        { provide: KEYS, useValue: elma.keys },
        { provide: REVIEWS, useValue: elma.reviews },
        { provide: HEALTH, useValue: { health: () => elma.health() } satisfies HealthCheck },
        { provide: TOKEN_VERIFIER, useValue: shared.verifier },
        {
          provide: ERASURE_DESK,
          useValue: new ErasureDesk(
            tracedService(activeTracing(), 'erasure_requests', elma.erasure.requests),
            elma.signer,
            options.erasures,
          ),
        },
        { provide: OFFBOARDING_DESK, useValue: new OffboardingDesk(elma.offboarding.requests, options.offboarding) },
        { provide: TENANT_CLOSURES, useValue: elma.offboarding.closures },
        { provide: SUBJECT_ACCESS_DESK, useValue: new SubjectAccessDesk(elma.subjectAccess, options.subjectAccess) },
        { provide: CERTIFICATE_DESK, useValue: new CertificateDesk(elma.signer) },
        {
          provide: SIGN_IN_DESK,
          useValue: new SignInDesk(
            elma.config.auth.oidc && new OidcSignIn(elma.config.auth.oidc),
            shared.verifier,
            elma.offboarding.closures,
          ),
        },
        AuthGuard,
        MemoryResolver,
        ErasureResolver,
      ].map(tracedProvider),
    };
  }
}

/** With traces on, each service a controller calls is a span per call (`ingest.ingest`, `erasure_desk.create`). */
function tracedProvider<P>(provider: P): P {
  const { provide, useValue } = provider as { provide?: unknown; useValue?: unknown };
  if (typeof provide !== 'symbol' || !useValue || typeof useValue !== 'object') return provider;
  return { ...provider, useValue: tracedService(activeTracing(), (provide.description ?? 'service').toLowerCase(), useValue) };
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
  /** The off-boarding workflows on Temporal; without it an approval answers 503 TEMPORAL.UNAVAILABLE. */
  offboarding?: OffboardWorkflows;
  /** The subject-access workflows on Temporal; without it `POST /v1/subject-access` answers 503 TEMPORAL.UNAVAILABLE. */
  subjectAccess?: SubjectAccessWorkflows;
}

/** Builds the HTTP app (REST under /v1, GraphQL at /graphql, OpenAPI at /docs, the console at /console) on a process's ELMA services. */
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
  const verifier = new TokenVerifier(
    elma.config.auth,
    elma.config.jwtSecret,
    (tenant) => elma.policies.get(tenant),
    undefined,
    elma.revocations,
  );
  const { recountSeconds, ...platform } = elma.config.quotas;
  const usage = new StoredUsageCounter({
    index: elma.index,
    // A count waits (briefly) for the projection, so it includes the writes just appended.
    settle: async () => {
      if (elma.runner.running) await elma.runner.waitFor(await elma.log.headPosition(), 2_000);
    },
    nowMs: () => performance.now(),
    recountMs: recountSeconds * 1000,
    minRecountGapMs: 5_000,
  });
  const quotas = new TenantQuotas({ policies: elma.policies, platform, usage, nowMs: () => performance.now() });
  // Before any route exists, so the hook runs first for every route Nest adds.
  const { gates, active } = registerAdmission(fastify, elma.config.admission, tenantAdmission(verifier, quotas));
  registerRequestSpans(fastify, activeTracing());
  registerRequestTelemetry(fastify, {
    metrics: elma.metrics,
    accessLog: elma.config.telemetry.accessLog ? elma.logger : undefined,
    callerPseudonym: elma.callerPseudonym,
  });
  registerMetrics(fastify, { elma, gates, active, quotas, usage, erasuresByStatus: options.erasures?.countByStatus });
  fastify.addHook('onClose', async () => usage.stop());
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
  // The compliance console (/console) and the one route that takes a certificate file's bytes.
  registerConsole(fastify, await consoleAssets());
  registerCertificateUploads(fastify);
  const app = await NestFactory.create<NestFastifyApplication>(ApiModule.with(elma, options, { verifier, quotas }), adapter, {
    logger: false,
  });
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
      .setVersion(ELMA_VERSION)
      .addBearerAuth()
      .build(),
  );
  SwaggerModule.setup('docs', app, document, { jsonDocumentUrl: 'docs/openapi.json' });
  await app.init();
  // Each tenant's first count, ahead of its first write after this start (a count of 100,000 records takes ~0.4 s).
  // After the projection has caught up with the log (an index being rebuilt lists its tenants only then).
  void (async () => {
    if (elma.runner.running) await elma.runner.waitFor(await elma.log.headPosition(), 60_000);
    await usage.countAhead(await elma.index.tenants());
  })().catch(() => undefined);
  return app;
}
