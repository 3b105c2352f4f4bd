// Checks that every relative link in README.md and docs/**/*.md resolves: the file exists under the
// given root (the checkout, or an installed package), and a #fragment names a heading of the target
// page (GitHub's heading anchors). Absolute URLs are not fetched.
//   node tools/check-links.mjs [root]     (default: the current directory)
// Exits 1 and lists every broken link.
import { existsSync, readdirSync, readFileSync, statSync } from 'node:fs';
import { dirname, join, relative, resolve } from 'node:path';

/** GitHub's anchor for a heading: lower case, punctuation dropped, spaces to hyphens. */
export function slug(heading) {
  return heading.trim().toLowerCase()
    .replace(/<[^>]+>/g, '')
    .replace(/[^\p{L}\p{N}\s_-]/gu, '')
    .replace(/\s/g, '-');
}

/** The anchors a markdown page defines (its headings; repeated headings get -1, -2, ...). */
export function anchorsOf(markdown) {
  const anchors = new Set();
  const seen = new Map();
  let fenced = false;
  for (const line of markdown.split('\n')) {
    if (line.startsWith('```')) fenced = !fenced;
    const match = !fenced && /^#{1,6}\s+(.*)$/.exec(line);
    if (!match) continue;
    const base = slug(match[1]);
    const n = seen.get(base) ?? 0;
    seen.set(base, n + 1);
    anchors.add(n === 0 ? base : `${base}-${n}`);
  }
  return anchors;
}

/** Every link target in a markdown page, outside code: [text](target), ![alt](target), src="target". */
export function linksOf(markdown) {
  const links = [];
  let fenced = false;
  for (const line of markdown.split('\n')) {
    if (line.startsWith('```')) { fenced = !fenced; continue; }
    if (fenced) continue;
    const text = line.replace(/`[^`]*`/g, '');
    for (const m of text.matchAll(/\]\(([^)\s]+)(?:\s+"[^"]*")?\)/g)) links.push(m[1]);
    for (const m of text.matchAll(/\bsrc="([^"]+)"/g)) links.push(m[1]);
  }
  return links;
}

function markdownFiles(root) {
  const files = [join(root, 'README.md')];
  const walk = (dir) => {
    if (!existsSync(dir)) return;
    for (const name of readdirSync(dir)) {
      const path = join(dir, name);
      if (statSync(path).isDirectory()) walk(path);
      else if (name.endsWith('.md')) files.push(path);
    }
  };
  walk(join(root, 'docs'));
  return files;
}

/** Broken links under root, as 'file: target (why)' strings. */
export function brokenLinks(root) {
  const problems = [];
  for (const file of markdownFiles(root)) {
    for (const link of linksOf(readFileSync(file, 'utf8'))) {
      if (/^[a-z][a-z+.-]*:/i.test(link)) continue;  // https:, mailto:, ...
      const [pathPart, fragment] = link.split('#');
      const target = pathPart === '' ? file : resolve(dirname(file), decodeURIComponent(pathPart));
      const where = `${relative(root, file)}: ${link}`;
      if (!target.startsWith(resolve(root))) { problems.push(`${where} (outside ${root})`); continue; }
      if (!existsSync(target)) { problems.push(`${where} (no such file)`); continue; }
      if (fragment !== undefined && target.endsWith('.md')) {
        if (!anchorsOf(readFileSync(target, 'utf8')).has(fragment)) problems.push(`${where} (no heading #${fragment})`);
      }
    }
  }
  return problems;
}

if (import.meta.url === `file://${process.argv[1]}`) {
  const root = resolve(process.argv[2] ?? '.');
  const problems = brokenLinks(root);
  const count = markdownFiles(root).length;
  if (problems.length) {
    console.error(`${problems.length} broken link(s) in ${count} markdown files under ${root}:`);
    for (const p of problems) console.error(`  ${p}`);
    process.exit(1);
  }
  console.log(`every relative link resolves (${count} markdown files under ${root})`);
}
