import type { ActivityExecuteInput, ActivityInboundCallsInterceptor, ActivityInterceptorsFactory, Next } from '@temporalio/worker';
import { ERASURE_STEP_OF_ACTIVITY } from '@elma/activities';
import type { ElmaMetrics } from '@elma/infra';

const STEPS: Record<string, string | undefined> = ERASURE_STEP_OF_ACTIVITY;

/**
 * Times each attempt of an erasure step's activity into `elma_erasure_step_duration_seconds`, labelled by
 * step and outcome only (the activity's arguments, ids and keyed hashes, never reach a label).
 */
export function erasureStepTiming(metrics: ElmaMetrics): ActivityInterceptorsFactory {
  return (ctx) => {
    const step = STEPS[ctx.info.activityType];
    if (!step) return {};
    const inbound: ActivityInboundCallsInterceptor = {
      async execute(input: ActivityExecuteInput, next: Next<ActivityInboundCallsInterceptor, 'execute'>) {
        const end = metrics.erasureSteps.startTimer({ step });
        try {
          const result = await next(input);
          end({ outcome: 'ok' });
          return result;
        } catch (error) {
          end({ outcome: 'failed' });
          throw error;
        }
      },
    };
    return { inbound };
  };
}
