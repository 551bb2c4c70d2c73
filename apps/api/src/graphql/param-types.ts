import 'reflect-metadata';

/**
 * `@nestjs/graphql` reads `design:paramtypes` for every `@Args` parameter even
 * when the type is given explicitly. esbuild (tsx, vitest) does not emit
 * decorator metadata, so resolvers declare it here; the GraphQL types
 * themselves still come from the explicit `type: () => X` options.
 */
export function ParamTypes(...types: unknown[]): MethodDecorator {
  return (target, key) => Reflect.defineMetadata('design:paramtypes', types, target, key);
}
