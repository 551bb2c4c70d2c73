import { Inject, UseGuards } from '@nestjs/common';
import { Args, ID, Int, Mutation, Query, Resolver } from '@nestjs/graphql';
import type { Principal } from '@elma/domain';
import { ErasureDesk } from '../erasure/erasure-desk';
import { AuthGuard, Caller, RequestId } from '../http/auth.guard';
import { ERASURE_DESK } from '../http/tokens';
import { ParamTypes } from './param-types';
import { ErasurePageType, ErasureRequestInput, ErasureType } from './types';
import { withoutNulls } from './without-nulls';

/** The erasure endpoints, as GraphQL. The certificate is the signed JSON document as a string. */
@Resolver()
@UseGuards(AuthGuard)
export class ErasureResolver {
  constructor(@Inject(ERASURE_DESK) private readonly desk: ErasureDesk) {}

  @Query(() => ErasureType)
  @ParamTypes(Object, String)
  erasure(@Caller() caller: Principal, @Args('id', { type: () => ID }) id: string) {
    return this.desk.progress(caller, id);
  }

  @Query(() => ErasurePageType, { description: 'The erasures the caller may follow, a page at a time, as GET /v1/erasures lists them.' })
  @ParamTypes(Object, String, String, Number)
  erasures(
    @Caller() caller: Principal,
    @Args('status', { type: () => String, nullable: true }) status: string | null,
    @Args('cursor', { type: () => String, nullable: true }) cursor: string | null,
    @Args('limit', { type: () => Int, nullable: true }) limit: number | null,
  ) {
    return this.desk.list(caller, withoutNulls({ status, cursor, limit }));
  }

  @Query(() => String)
  @ParamTypes(Object, String, String)
  async erasureCertificate(@Caller() caller: Principal, @RequestId() requestId: string, @Args('id', { type: () => ID }) id: string) {
    return JSON.stringify(await this.desk.certificate(caller, id, requestId));
  }

  @Mutation(() => ErasureType)
  @ParamTypes(Object, String, ErasureRequestInput)
  requestErasure(
    @Caller() caller: Principal,
    @RequestId() requestId: string,
    @Args('input', { type: () => ErasureRequestInput }) input: ErasureRequestInput,
  ) {
    return this.desk.create(caller, withoutNulls(input), requestId);
  }

  @Mutation(() => ErasureType)
  @ParamTypes(Object, String, String)
  approveErasure(@Caller() caller: Principal, @RequestId() requestId: string, @Args('id', { type: () => ID }) id: string) {
    return this.desk.approve(caller, id, requestId);
  }
}
