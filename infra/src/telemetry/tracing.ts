import { createRequire } from 'node:module';
import type { Span, Tracer } from '@opentelemetry/api';
import type { SpanExporter } from '@opentelemetry/sdk-trace-base';
import type { WorkflowClientInterceptor } from '@temporalio/client';
import type { ActivityInterceptorsFactory, InjectedSinks } from '@temporalio/worker';
import type { OpenTelemetryWorkflowExporter } from '@temporalio/interceptors-opentelemetry';

/**
 * OpenTelemetry traces, off unless ELMA_OTEL_ENDPOINT is set. Every
 * OpenTelemetry SDK module is imported here, dynamically, when tracing starts:
 * with tracing off none is loaded. Spans carry names, route templates,
 * status codes and Temporal's ids (workflow ids are `<kind>-<tenant>-<requestId>`):
 * never a subject, a pseudonym, a token claim other than the tenant, or content.
 */
export interface Tracing {
  tracer: Tracer;
  /** Runs `body` in a new span (a child of the active one), ending it when `body` settles. */
  inSpan<T>(name: string, body: (span: Span) => T): T;
  /** Starts a span (a root, or a child of the active one); `activate` makes it the parent of what follows. */
  startSpan(name: string): Span;
  /** Runs `next` (a Fastify hook's `done`) with `span` active: what it starts and awaits are its children. */
  activate(span: Span, next: () => void): void;
  /** For Temporal clients: the workflow start, signal and query spans, whose context goes to the workflow in headers. */
  clientInterceptors: WorkflowClientInterceptor[];
  /** For Temporal workers: activity spans (children of the workflow's), and the sink that exports workflow spans. */
  activityInterceptors: ActivityInterceptorsFactory[];
  sinks: InjectedSinks<{ exporter: OpenTelemetryWorkflowExporter }>;
  /** Workflow interceptor modules: a workflow bundle made while tracing is on includes them. */
  workflowInterceptorModules: string[];
  /** Exports what is pending. */
  flush(): Promise<void>;
  shutdown(): Promise<void>;
}

let active: Tracing | undefined;

/** The process's tracing, when started; undefined when traces are off. */
export function activeTracing(): Tracing | undefined {
  return active;
}

/**
 * Starts tracing for this process (once: a second call returns the first). `exporter` replaces the OTLP/HTTP
 * exporter (tests pass an in-memory one).
 */
export async function startTracing(options: { endpoint?: string; serviceName: string; exporter?: SpanExporter }): Promise<Tracing> {
  if (active) return active;
  const [api, sdk, resources, asyncHooks, temporalOtel] = await Promise.all([
    import('@opentelemetry/api'),
    import('@opentelemetry/sdk-trace-base'),
    import('@opentelemetry/resources'),
    import('@opentelemetry/context-async-hooks'),
    import('@temporalio/interceptors-opentelemetry'),
  ]);
  let exporter = options.exporter;
  if (!exporter) {
    const { OTLPTraceExporter } = await import('@opentelemetry/exporter-trace-otlp-http');
    exporter = new OTLPTraceExporter({ url: options.endpoint });
  }
  const resource = new resources.Resource({ 'service.name': options.serviceName });
  const processor = new sdk.BatchSpanProcessor(exporter);
  const provider = new sdk.BasicTracerProvider({ resource, spanProcessors: [processor] });
  // Async context, so a span started by a request is the parent of what its handler awaits.
  provider.register({ contextManager: new asyncHooks.AsyncLocalStorageContextManager().enable() });
  const tracer = api.trace.getTracer('elma');
  const fail = (span: Span, error: unknown) => {
    // The error's name only: messages may quote input.
    span.setStatus({ code: api.SpanStatusCode.ERROR, message: (error as Error)?.name ?? 'Error' });
    span.end();
  };
  const tracing: Tracing = {
    tracer,
    inSpan: (name, body) =>
      tracer.startActiveSpan(name, (span) => {
        try {
          const result = body(span);
          if (result instanceof Promise) {
            return result.then(
              (value) => (span.end(), value),
              (error: unknown) => {
                fail(span, error);
                throw error;
              },
            ) as typeof result;
          }
          span.end();
          return result;
        } catch (error) {
          fail(span, error);
          throw error;
        }
      }),
    startSpan: (name) => tracer.startSpan(name),
    activate: (span, next) => api.context.with(api.trace.setSpan(api.context.active(), span), next),
    clientInterceptors: [new temporalOtel.OpenTelemetryWorkflowClientInterceptor()],
    activityInterceptors: [
      (ctx) => ({
        inbound: new temporalOtel.OpenTelemetryActivityInboundInterceptor(ctx),
        outbound: new temporalOtel.OpenTelemetryActivityOutboundInterceptor(ctx),
      }),
    ],
    sinks: { exporter: temporalOtel.makeWorkflowExporter(processor, resource) },
    workflowInterceptorModules: [
      createRequire(import.meta.url).resolve('@temporalio/interceptors-opentelemetry/lib/workflow-interceptors'),
    ],
    flush: () => provider.forceFlush(),
    shutdown: async () => {
      await provider.shutdown();
      active = undefined;
    },
  };
  active = tracing;
  return tracing;
}
