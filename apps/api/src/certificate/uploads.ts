import type { FastifyInstance } from 'fastify';

/** The one route that takes a file's bytes as they are, rather than a JSON body. */
export const CERTIFICATE_VERIFY_ROUTE = '/v1/certificates/verify';

/**
 * Lets `POST /v1/certificates/verify` receive a certificate file as `application/octet-stream` or
 * `application/pdf` (a Buffer, within the API's body limit). Every other route keeps refusing these types with
 * 415 REQUEST.UNSUPPORTED_MEDIA_TYPE, as it did before the parser existed: the parser is global in Fastify, so
 * it checks the route itself.
 */
export function registerCertificateUploads(fastify: FastifyInstance): void {
  fastify.addContentTypeParser(['application/octet-stream', 'application/pdf'], { parseAs: 'buffer' }, (request, body, done) => {
    if (request.routeOptions.url !== CERTIFICATE_VERIFY_ROUTE) {
      done(Object.assign(new Error('unsupported media type'), { code: 'FST_ERR_CTP_INVALID_MEDIA_TYPE', statusCode: 415 }), undefined);
      return;
    }
    done(null, body);
  });
}
