// The README's code as a new user pastes it: writes the first ```js block to <dir>/first.mjs and
// the first ```ts block to <dir>/first.ts (tests/stages/40-package.sh runs the one in an empty
// project that installed the packed tarball, and type-checks the other with tsc --strict).
//   node tests/package/readme-examples.mjs <README.md> <dir>
import { readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';

/** The first fenced block of a language, without its fences. */
export function firstBlock(markdown, language) {
  const match = new RegExp('^```' + language + '\\n([\\s\\S]*?)^```', 'm').exec(markdown);
  if (!match) throw new Error(`no \`\`\`${language} block in the README`);
  return match[1];
}

const [readme, dir] = process.argv.slice(2);
const markdown = readFileSync(readme, 'utf8');
writeFileSync(join(dir, 'first.mjs'), firstBlock(markdown, 'js'));
writeFileSync(join(dir, 'first.ts'), firstBlock(markdown, 'ts'));
console.log(`wrote first.mjs and first.ts from ${readme}`);
