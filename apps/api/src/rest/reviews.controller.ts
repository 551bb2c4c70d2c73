import { Body, Controller, Get, HttpCode, Inject, Param, Post, Query, UseGuards } from '@nestjs/common';
import { ApiTags } from '@nestjs/swagger';
import { ResolveReviewFlagRequest, ReviewFlag, ReviewFlagQuery, type Principal } from '@elma/domain';
import { AuthGuard, Caller, RequestId } from '../http/auth.guard';
import { REVIEWS, type Reviews } from '../http/tokens';
import { ApiAuthenticated, ApiId, ApiJsonBody, ApiOk, ApiProblems, ApiQueryOf, jsonSchema } from './openapi';

const Flag = jsonSchema(ReviewFlag, 'output');

@ApiTags('reviews')
@ApiAuthenticated()
@Controller('v1/review-flags')
@UseGuards(AuthGuard)
export class ReviewsController {
  constructor(@Inject(REVIEWS) private readonly reviews: Reviews) {}

  @Get()
  @ApiQueryOf(ReviewFlagQuery)
  @ApiOk(200, "A page of the tenant's review flags, oldest first (roles reviewer, admin, compliance, auditor).", {
    type: 'object',
    required: ['items'],
    properties: {
      items: { type: 'array', items: Flag },
      nextCursor: { type: 'string', description: 'Pass as `cursor` for the next page; absent on the last page.' },
    },
  })
  @ApiProblems(403, 422)
  list(@Caller() caller: Principal, @RequestId() requestId: string, @Query() query: unknown) {
    return this.reviews.list(caller, query, requestId);
  }

  @Post(':id/resolve')
  @HttpCode(200)
  @ApiId('The review flag.')
  @ApiJsonBody(ResolveReviewFlagRequest, { example: { decision: 'dismissed', note: 'routine price update' } })
  @ApiOk(200, 'The flag, confirmed or dismissed (roles reviewer, admin). Records are not changed.', Flag)
  @ApiProblems(403, 404, 409, 422)
  resolve(@Caller() caller: Principal, @RequestId() requestId: string, @Param('id') id: string, @Body() body: unknown) {
    return this.reviews.resolve(caller, id, body, requestId);
  }
}
