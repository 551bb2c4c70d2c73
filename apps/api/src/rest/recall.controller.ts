import { Body, Controller, HttpCode, Inject, Param, Post, UseGuards } from '@nestjs/common';
import { ApiTags } from '@nestjs/swagger';
import { RecallFeedback, RecallRequest, type Principal } from '@elma/domain';
import { AuthGuard, Caller, RequestId } from '../http/auth.guard';
import { RECALL, type Recall } from '../http/tokens';
import { ZodBody } from '../http/zod-body';
import { ApiAuthenticated, ApiId, ApiJsonBody, ApiOk, ApiProblems, linksFrom, RecallResultSchema } from './openapi';

@ApiTags('recall')
@ApiAuthenticated()
@Controller('v1/recall')
@UseGuards(AuthGuard)
export class RecallController {
  constructor(@Inject(RECALL) private readonly recalls: Recall) {}

  @Post()
  @HttpCode(200)
  @ApiJsonBody(RecallRequest, { example: { query: 'Where does the customer live?', purpose: 'support', budgetTokens: 1000 } })
  @ApiOk(
    200,
    'A budgeted, cited context pack.',
    RecallResultSchema,
    linksFrom('$response.body#/recallId', { RecallFeedback: ['post', '/v1/recall/{id}/feedback'] }),
  )
  @ApiProblems(403)
  recall(@Caller() caller: Principal, @RequestId() requestId: string, @Body(new ZodBody(RecallRequest)) body: RecallRequest) {
    return this.recalls.recall(caller, body, requestId);
  }

  @Post(':id/feedback')
  @HttpCode(200)
  @ApiId('The recall, as its answer named it (`recallId`).')
  @ApiJsonBody(RecallFeedback)
  @ApiOk(200, 'Records which packed memories the caller used (`usage.adopted`, which packing weighs).', {
    type: 'object',
    required: ['adopted'],
    properties: { adopted: { type: 'integer', minimum: 0 } },
  })
  @ApiProblems(403, 404)
  feedback(
    @Caller() caller: Principal,
    @RequestId() requestId: string,
    @Param('id') id: string,
    @Body(new ZodBody(RecallFeedback)) body: RecallFeedback,
  ) {
    return this.recalls.feedback(caller, id, body, requestId);
  }
}
