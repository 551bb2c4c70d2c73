#!/usr/bin/env node
// Builds a TEST-ONLY single-node Elasticsearch from Maven Central artifacts into .tools/elasticsearch/<version>/
// (git-ignored), once; later runs reuse it. Prints the node's home folder on stdout, progress on stderr.
//
//   node scripts/ensure-elasticsearch.mjs [--version 9.5.3|8.15.3 | --all]
//
// What it assembles (README, "Testing the production engines", says why a node is assembled this way):
//   lib/                        org.elasticsearch:elasticsearch:<version> and its runtime dependencies (Lucene,
//                               x-content with its embedded Jackson impl, log4j, ...), via `mvn dependency:copy-dependencies`
//   modules/transport-netty4/   org.elasticsearch.plugin:transport-netty4:<version> + Netty (the HTTP layer)
//   modules/elma-test-standin/  a small plugin compiled here from scripts/elasticsearch/standin (+ <major>/standin),
//                               standing in for what Maven Central does not carry: the `english`/`cjk` analyzers
//                               (analysis-common), `_delete_by_query` (reindex) and `GET /` (rest-root). Never used
//                               outside tests.
//   launcher/                   scripts/elasticsearch/launcher (+ <major>/launcher): starts the Node in-process, because
//                               the real entry point needs the server CLI (ServerArgs on stdin), which is not published.
//   inspector/                  scripts/elasticsearch/inspector: reads a shard's Lucene index for the erasure proof
//                               (tests/support/elasticsearch-files.ts); built by `ensureInspector`.
//
// What differs by version (API, Lucene, JDK) is in RECIPES below.
// Needs: `mvn` on PATH (Maven Central reachable) and a JDK the version runs on (ELMA_ES_JAVA_HOME, JAVA_HOME, or one
// under /usr/lib/jvm). Environment: ELMA_ES_VERSION (default 9.5.3; --version wins), ELMA_ES_HOME (use this folder
// instead of building).

import { spawnSync } from 'node:child_process';
import { createHash } from 'node:crypto';
import {
  existsSync,
  mkdirSync,
  mkdtempSync,
  readdirSync,
  readFileSync,
  renameSync,
  rmSync,
  writeFileSync,
  copyFileSync,
  statSync,
} from 'node:fs';
import { tmpdir } from 'node:os';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';

export const DEFAULT_ES_VERSION = '9.5.3';

/**
 * The versions the test node can be built for, and what differs between them:
 * - `sources`: the Java source folders (under scripts/elasticsearch) compiled into the stand-in plugin and the
 *   launcher; the shared ones first, then the major version's own (its plugin API and Node constructor differ);
 * - `jdk`: the JDKs it is built and run with (`release` is javac's --release, the jars' X-Compile-Target-JDK;
 *   the newest installed JDK from `min` to `max` is taken);
 * - `nettyDescriptor`: where transport-netty4's plugin descriptor comes from (9 ships it in the jar, 8 does not);
 * - `jvmArgs`: what start-elasticsearch.mjs adds to the java command line.
 */
export const RECIPES = {
  '9.5.3': {
    major: 9,
    sources: { standin: ['standin', '9/standin'], launcher: ['launcher', '9/launcher'] },
    jdk: { release: 21, min: 21 },
    nettyDescriptor: 'jar',
    // The vector module as ES's own jvm options add it (SIMD for dense_vector); native access for Lucene's and ES's own.
    jvmArgs: [
      '--enable-native-access=ALL-UNNAMED,org.apache.lucene.core,org.elasticsearch.nativeaccess',
      '--add-modules',
      'ALL-MODULE-PATH,jdk.incubator.vector',
    ],
  },
  '8.15.3': {
    major: 8,
    sources: { standin: ['standin', '8/standin'], launcher: ['launcher', '8/launcher'] },
    // Built for 17; ES 8.15 supports 17 to 21 (and the JDK 22/23 it bundles); Lucene 9.11 vectorises only on 20-22.
    jdk: { release: 17, min: 17, max: 21 },
    nettyDescriptor: {
      description: 'Netty 4 based transport implementation',
      classname: 'org.elasticsearch.transport.netty4.Netty4Plugin',
      modulename: 'org.elasticsearch.transport.netty4',
    },
    jvmArgs: ['--add-modules', 'ALL-MODULE-PATH'],
  },
};

/** The recipe of a version, or an error naming the versions there are. */
export function recipeOf(version) {
  const recipe = RECIPES[version];
  if (!recipe) throw new Error(`no test-node recipe for Elasticsearch ${version}; known: ${Object.keys(RECIPES).join(', ')}`);
  return recipe;
}

/** The version asked for: `--version V` on the command line, then ELMA_ES_VERSION, then the default. */
export function requestedVersion(argv = process.argv, env = process.env) {
  const i = argv.indexOf('--version');
  return (i >= 0 ? argv[i + 1] : undefined) ?? env.ELMA_ES_VERSION ?? DEFAULT_ES_VERSION;
}

const repoRoot = fileURLToPath(new URL('../', import.meta.url));
const sourcesDir = join(repoRoot, 'scripts', 'elasticsearch');
export const ES_TOOLS_DIR = join(repoRoot, '.tools', 'elasticsearch');

const log = (msg) => process.stderr.write(`[elma] ${msg}\n`);

/** The major version of a JDK folder (from its `release` file), or 0. */
function jdkMajor(home) {
  try {
    const release = readFileSync(join(home, 'release'), 'utf8');
    const m = /JAVA_VERSION="(\d+)/.exec(release);
    return m && existsSync(join(home, 'bin', 'javac')) ? Number(m[1]) : 0;
  } catch {
    return 0;
  }
}

/**
 * A JDK in the range `{ min, max }` (max open when absent): ELMA_ES_JAVA_HOME (only its minimum is checked, so a
 * newer JDK can be tried on purpose), then JAVA_HOME, then the newest in range under /usr/lib/jvm.
 */
export function findJdk({ min, max = Infinity }, env = process.env) {
  const range = max === Infinity ? `${min} or newer` : `${min} to ${max}`;
  if (env.ELMA_ES_JAVA_HOME) {
    if (jdkMajor(env.ELMA_ES_JAVA_HOME) >= min) return env.ELMA_ES_JAVA_HOME;
    throw new Error(`ELMA_ES_JAVA_HOME=${env.ELMA_ES_JAVA_HOME} is not a JDK ${range}`);
  }
  const inRange = (major) => major >= min && major <= max;
  if (env.JAVA_HOME && inRange(jdkMajor(env.JAVA_HOME))) return env.JAVA_HOME;
  const root = '/usr/lib/jvm';
  const candidates = existsSync(root)
    ? readdirSync(root)
        .map((d) => join(root, d))
        .map((d) => ({ d, major: jdkMajor(d) }))
        .filter((c) => inRange(c.major))
        .sort((a, b) => b.major - a.major)
    : [];
  if (candidates.length > 0) return candidates[0].d;
  throw new Error(`this Elasticsearch needs a JDK ${range}: set ELMA_ES_JAVA_HOME (or JAVA_HOME) to one`);
}

function listFiles(dir) {
  return readdirSync(dir, { recursive: true })
    .map(String)
    .filter((f) => statSync(join(dir, f)).isFile())
    .sort();
}

/** The .java files of these source folders (under scripts/elasticsearch), as absolute paths. */
const javaFiles = (folders) =>
  folders.flatMap((d) =>
    listFiles(join(sourcesDir, d))
      .filter((f) => f.endsWith('.java'))
      .map((f) => join(sourcesDir, d, f)),
  );

/** A fingerprint of the recipe: the version, its recipe entry and the Java sources compiled into the node. */
function recipeHash(version, recipe) {
  const h = createHash('sha256').update(`es=${version};layout=2;${JSON.stringify(recipe)}`);
  for (const f of javaFiles([...recipe.sources.standin, ...recipe.sources.launcher]))
    h.update(f.slice(sourcesDir.length)).update(readFileSync(f));
  return h.digest('hex').slice(0, 16);
}

function run(command, args, options = {}) {
  const out = spawnSync(command, args, { encoding: 'utf8', stdio: ['ignore', 'pipe', 'pipe'], ...options });
  if (out.error) throw new Error(`${command} failed to start: ${out.error.message}`);
  if (out.status !== 0) {
    const tail = `${out.stdout ?? ''}\n${out.stderr ?? ''}`.trim().split('\n').slice(-15).join('\n');
    throw new Error(`${command} ${args.slice(0, 3).join(' ')} ... exited with ${out.status}:\n${tail}`);
  }
  return out.stdout;
}

const pom = (version) => `<project xmlns="http://maven.apache.org/POM/4.0.0">
  <modelVersion>4.0.0</modelVersion>
  <groupId>elma.tmp</groupId><artifactId>elasticsearch-node</artifactId><version>1</version><packaging>pom</packaging>
  <dependencies>
    <dependency><groupId>org.elasticsearch</groupId><artifactId>elasticsearch</artifactId><version>${version}</version></dependency>
    <dependency><groupId>org.elasticsearch.plugin</groupId><artifactId>transport-netty4</artifactId><version>${version}</version></dependency>
  </dependencies>
</project>
`;

const LOG4J = `status = error
appender.console.type = Console
appender.console.name = console
appender.console.layout.type = PatternLayout
appender.console.layout.pattern = [%d{ISO8601}][%-5p][%-25c{1.}] [%node_name]%marker %m%n
rootLogger.level = info
rootLogger.appenderRef.console.ref = console
logger.deprecation.name = org.elasticsearch.deprecation
logger.deprecation.level = error
`;

/** A plugin descriptor file's text. */
const descriptorText = (fields) =>
  `${Object.entries(fields)
    .map(([k, v]) => `${k}=${v}`)
    .join('\n')}\n`;

/** Returns the home folder of a ready node of this version, building it first when missing or stale. */
export function ensureElasticsearch(version = DEFAULT_ES_VERSION, env = process.env) {
  if (env.ELMA_ES_HOME) return env.ELMA_ES_HOME;
  const recipe = recipeOf(version);
  const home = join(ES_TOOLS_DIR, version);
  const stamp = join(home, '.elma-recipe');
  const hash = recipeHash(version, recipe);
  if (existsSync(stamp) && readFileSync(stamp, 'utf8').trim() === hash) return ensureInspector(home);

  const started = Date.now();
  const jdk = findJdk(recipe.jdk, env);
  const release = String(recipe.jdk.release);
  log(`building Elasticsearch ${version} (test-only node) into ${home} with the JDK at ${jdk}`);
  mkdirSync(ES_TOOLS_DIR, { recursive: true });
  const work = mkdtempSync(join(tmpdir(), 'elma-es-build-'));
  try {
    // 1. The artifacts, through Maven (its local repository caches them across builds).
    writeFileSync(join(work, 'pom.xml'), pom(version));
    const jars = join(work, 'jars');
    run('mvn', [
      '-q',
      '-B',
      '-f',
      join(work, 'pom.xml'),
      'dependency:copy-dependencies',
      `-DoutputDirectory=${jars}`,
      '-DincludeScope=runtime',
    ]);
    const stage = join(ES_TOOLS_DIR, `.stage-${process.pid}`);
    rmSync(stage, { recursive: true, force: true });
    for (const d of ['lib', 'modules/transport-netty4', 'modules/elma-test-standin', 'config', 'plugins', 'launcher'])
      mkdirSync(join(stage, d), { recursive: true });
    for (const jar of readdirSync(jars)) {
      const http = jar.startsWith('netty-') || jar.startsWith('transport-netty4-');
      copyFileSync(join(jars, jar), join(stage, http ? 'modules/transport-netty4' : 'lib', jar));
    }
    const nettyDescriptor = join(stage, 'modules/transport-netty4/plugin-descriptor.properties');
    if (recipe.nettyDescriptor === 'jar') {
      const nettyJar = join(stage, 'modules/transport-netty4', `transport-netty4-${version}.jar`);
      run(join(jdk, 'bin', 'jar'), ['xf', nettyJar, 'META-INF/es-plugins/transport-netty4/plugin-descriptor.properties'], { cwd: work });
      copyFileSync(join(work, 'META-INF/es-plugins/transport-netty4/plugin-descriptor.properties'), nettyDescriptor);
    } else {
      // The descriptor the distribution ships beside the module (the jar has none in 8.x).
      const { description, classname, modulename } = recipe.nettyDescriptor;
      writeFileSync(
        nettyDescriptor,
        descriptorText({
          description,
          version,
          name: 'transport-netty4',
          classname,
          'java.version': release,
          'elasticsearch.version': version,
          'extended.plugins': '',
          'has.native.controller': false,
          licensed: false,
          modulename,
        }),
      );
    }

    // 2. The stand-in plugin and the launcher, compiled against the server jars.
    const classpath = readdirSync(join(stage, 'lib'))
      .map((j) => join(stage, 'lib', j))
      .join(':');
    const javac = join(jdk, 'bin', 'javac');
    const standinOut = join(work, 'standin');
    run(javac, ['--release', release, '-nowarn', '-cp', classpath, '-d', standinOut, ...javaFiles(recipe.sources.standin)]);
    run(join(jdk, 'bin', 'jar'), ['cf', join(stage, 'modules/elma-test-standin/elma-test-standin.jar'), '-C', standinOut, '.']);
    writeFileSync(
      join(stage, 'modules/elma-test-standin/plugin-descriptor.properties'),
      descriptorText({
        description: 'TEST-ONLY stand-in for analysis-common (english, cjk analyzers), reindex (_delete_by_query) and rest-root (GET /)',
        version,
        name: 'elma-test-standin',
        classname: 'org.elma.esstandin.ElmaTestStandInPlugin',
        'java.version': release,
        'elasticsearch.version': version,
      }),
    );
    run(javac, ['--release', release, '-nowarn', '-cp', classpath, '-d', join(stage, 'launcher'), ...javaFiles(recipe.sources.launcher)]);

    // 3. Config, then the atomic swap into place.
    writeFileSync(join(stage, 'config/elasticsearch.yml'), '# settings come from start-elasticsearch.mjs (-E)\n');
    writeFileSync(join(stage, 'config/log4j2.properties'), LOG4J);
    writeFileSync(join(stage, 'java-home'), `${jdk}\n`);
    writeFileSync(join(stage, '.elma-recipe'), `${hash}\n`);
    rmSync(home, { recursive: true, force: true });
    mkdirSync(dirname(home), { recursive: true });
    renameSync(stage, home);
    log(`Elasticsearch ${version} ready at ${home} (built in ${((Date.now() - started) / 1000).toFixed(1)} s)`);
    return ensureInspector(home);
  } finally {
    rmSync(work, { recursive: true, force: true });
  }
}

/**
 * Compiles the TEST-ONLY index inspector (scripts/elasticsearch/inspector: common/ plus lucene9/ or lucene10/, the one
 * class whose Lucene API differs) into `<home>/inspector/` against the node's own jars, with the node's JDK, unless
 * its stamp (a hash of its sources and the jars) is current. Returns `home`.
 */
export function ensureInspector(home) {
  const root = join(sourcesDir, 'inspector');
  const out = join(home, 'inspector');
  const jars = readdirSync(join(home, 'lib'))
    .filter((j) => j.endsWith('.jar'))
    .sort();
  const lucene = Number(/^lucene-core-(\d+)\./.exec(jars.find((j) => j.startsWith('lucene-core-')) ?? '')?.[1]);
  const folders = ['common', `lucene${lucene}`].map((d) => join(root, d));
  if (!existsSync(folders[1])) throw new Error(`the index inspector has no sources for Lucene ${lucene} (${folders[1]})`);
  const sources = folders.flatMap((d) => listFiles(d).map((f) => join(d, f)));
  const h = createHash('sha256').update(jars.join(','));
  for (const f of sources) h.update(f.slice(root.length)).update(readFileSync(f));
  const hash = h.digest('hex').slice(0, 16);
  const stamp = join(out, '.elma-recipe');
  if (existsSync(stamp) && readFileSync(stamp, 'utf8').trim() === hash) return home;
  const jdk = readFileSync(join(home, 'java-home'), 'utf8').trim();
  const stage = `${out}.stage-${process.pid}`;
  // Lucene 10 (Elasticsearch 9) is built for Java 21, Lucene 9 (Elasticsearch 8) for 17.
  const release = lucene >= 10 ? '21' : '17';
  run(join(jdk, 'bin', 'javac'), [
    '--release',
    release,
    '-nowarn',
    '-cp',
    join(home, 'lib', '*'),
    '-d',
    stage,
    ...sources.filter((f) => f.endsWith('.java')),
  ]);
  writeFileSync(join(stage, '.elma-recipe'), `${hash}\n`);
  rmSync(out, { recursive: true, force: true });
  renameSync(stage, out);
  log(`index inspector built into ${out}`);
  return home;
}

if (process.argv[1] && fileURLToPath(import.meta.url) === process.argv[1]) {
  try {
    const versions = process.argv.includes('--all') ? Object.keys(RECIPES) : [requestedVersion()];
    for (const version of versions) process.stdout.write(`${ensureElasticsearch(version)}\n`);
  } catch (err) {
    log(`error: ${err instanceof Error ? err.message : String(err)}`);
    process.exit(1);
  }
}
