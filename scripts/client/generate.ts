// `npm run client:generate`: writes clients/typescript/src/openapi.gen.ts from the OpenAPI document a fresh ELMA
// serves (see openapi-types.ts). Run it after changing an endpoint, and commit the file with the change.
import { writeFileSync } from 'node:fs';
import { relative } from 'node:path';
import { GENERATED_TYPES_FILE, generateClientTypes } from './openapi-types';

writeFileSync(GENERATED_TYPES_FILE, await generateClientTypes());
process.stdout.write(`wrote ${relative(process.cwd(), GENERATED_TYPES_FILE)}\n`);
