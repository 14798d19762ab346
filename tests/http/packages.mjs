// The client packages the HTTP tests drive, `ollama` and `openai`, from this folder's
// node_modules (pinned in package-lock.json, installed by scripts/install-deps.sh with `npm ci`);
// a test whose packages are missing ends at once, saying how to install them.
import { existsSync } from 'node:fs';
import { join, dirname } from 'node:path';
import { fileURLToPath } from 'node:url';

const here = dirname(fileURLToPath(import.meta.url));
if (!existsSync(join(here, 'node_modules', 'ollama')) || !existsSync(join(here, 'node_modules', 'openai'))) {
  console.error(`${process.argv[1]}: the client packages are not installed: run \`npm ci\` in ${here} (scripts/install-deps.sh does)`);
  process.exit(1);
}
export const { Ollama } = await import('ollama');
export const { default: OpenAI } = await import('openai');
