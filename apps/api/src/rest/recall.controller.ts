import { Body, Controller, HttpCode, Inject, Param, Post, UseGuards } from '@nestjs/common';
import { ApiBearerAuth, ApiBody, ApiResponse, ApiTags } from '@nestjs/swagger';
import { RecallFeedback, RecallRequest, type Principal } from '@elma/domain';
import type { Elma } from '@elma/infra';
import { AuthGuard, Caller, RequestId } from '../http/auth.guard';
import { ELMA } from '../http/tokens';
import { jsonSchema, problemResponse } from './openapi';

@ApiTags('recall')
@ApiBearerAuth()
@Controller('v1/recall')
@UseGuards(AuthGuard)
export class RecallController {
  constructor(@Inject(ELMA) private readonly elma: Elma) {}

  @Post()
  @HttpCode(200)
  @ApiBody({ schema: jsonSchema(RecallRequest) })
  @ApiResponse({ status: 200, description: 'A budgeted, cited context pack.' })
  @ApiResponse({ status: 403, ...problemResponse })
  @ApiResponse({ status: 503, ...problemResponse })
  recall(@Caller() caller: Principal, @RequestId() requestId: string, @Body() body: unknown) {
    return this.elma.recall.recall(caller, body, requestId);
  }

  @Post(':id/feedback')
  @HttpCode(200)
  @ApiBody({ schema: jsonSchema(RecallFeedback) })
  @ApiResponse({ status: 200, description: 'Records which packed memories the caller used (`usage.adopted`, which packing weighs).' })
  @ApiResponse({ status: 404, ...problemResponse })
  @ApiResponse({ status: 422, ...problemResponse })
  feedback(@Caller() caller: Principal, @RequestId() requestId: string, @Param('id') id: string, @Body() body: unknown) {
    return this.elma.recall.feedback(caller, id, body, requestId);
  }
}
