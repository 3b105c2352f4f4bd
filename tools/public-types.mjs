// The package's public types as text, one block per exported name of each typed entry point
// (package.json's exports: 'mha-wasm' and 'mha-wasm/tfjs', import and require): its kind, its
// documentation, its declaration as TypeScript prints it, and what TypeScript resolves each
// member to (inherited ones too). tests/js/public-types.test.js compares it with the committed
// tests/js/public-types.snapshot.txt, so that moving the declarations between files cannot change
// a public type unseen. After a deliberate change to the types: node tools/public-types.mjs
//
// TypeScript 7 (the package's dev dependency) is the native compiler; its JS API is the
// `typescript/unstable/sync` client, which runs the compiler in a child process.
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';

import { SyntaxKind } from 'typescript/unstable/ast';
import { API, NodeBuilderFlags, SignatureKind, SymbolFlags } from 'typescript/unstable/sync';

const ROOT = fileURLToPath(new URL('..', import.meta.url));
export const SNAPSHOT = new URL('../tests/js/public-types.snapshot.txt', import.meta.url);

// No "..." in long types; a type alias printed as its body, not its name.
const { NoTruncation, InTypeAlias } = NodeBuilderFlags;

/** Each typed entry point of package.json's exports: [label, .d.ts path relative to the root]. */
export function typedEntries() {
  const packageJson = JSON.parse(readFileSync(join(ROOT, 'package.json'), 'utf8'));
  const entries = [];
  for (const [subpath, conditions] of Object.entries(packageJson.exports)) {
    if (typeof conditions === 'string') continue;
    const name = subpath === '.' ? packageJson.name : `${packageJson.name}/${subpath.slice(2)}`;
    for (const kind of ['import', 'require']) {
      entries.push([`${name} (${kind})`, conditions[kind].types.replace(/^\.\//, '')]);
    }
  }
  return entries;
}

/** The TypeScript options of tests/stages/40-package.sh's typed examples. */
function writeTsconfig(dir, files) {
  const path = join(dir, 'tsconfig.json');
  writeFileSync(path, JSON.stringify({
    compilerOptions: {
      strict: true, noEmit: true, module: 'nodenext', moduleResolution: 'nodenext', target: 'es2022',
      lib: ['es2023', 'dom', 'esnext.disposable'], types: [], skipLibCheck: false,
    },
    files: files.map((file) => join(ROOT, file)),
  }));
  return path;
}

// A well-known symbol's member is named after the symbol's id in this run: name it as written.
const memberName = (symbol) => symbol.name.replace(/^__@(\w+)@\d+$/, '[Symbol.$1]');

function documentation(checker, symbol, indent) {
  const text = checker.getDocumentationCommentOfSymbol(symbol);
  const tags = checker.getJsDocTagsOfSymbol(symbol).map((tag) => `@${tag.name} ${tag.text ?? ''}`.trimEnd());
  return [text, ...tags].filter(Boolean).join('\n').split('\n').filter(Boolean).map((line) => `${indent}| ${line}`);
}

function kindOf(symbol) {
  for (const [flag, kind] of [['Interface', 'interface'], ['TypeAlias', 'type'], ['Function', 'function'], ['Variable', 'const']]) {
    if (symbol.flags & SymbolFlags[flag]) return kind;
  }
  throw new Error(`public-types: no kind for ${symbol.name} (flags ${symbol.flags})`);
}

/** One exported name's declaration: kind, documentation, declarations, resolved type and members. */
function describe(project, name, symbol) {
  const { checker, emitter } = project;
  const kind = kindOf(symbol);
  const lines = [`${kind} ${name}`, ...documentation(checker, symbol, '  ')];
  for (const declaration of symbol.declarations) {
    lines.push(...emitter.printNode(declaration.resolve()).split('\n').map((line) => `  ${line}`));
  }
  const isValue = kind === 'function' || kind === 'const';
  const type = isValue ? checker.getTypeOfSymbol(symbol) : checker.getDeclaredTypeOfSymbol(symbol);
  lines.push(`  resolved: ${checker.typeToString(type, undefined, NoTruncation | InTypeAlias)}`);
  if (kind !== 'interface') return lines.join('\n');
  for (const signature of checker.getSignaturesOfType(type, SignatureKind.Construct)) {
    const node = checker.signatureToSignatureDeclaration(signature, SyntaxKind.ConstructSignature, undefined, NoTruncation);
    lines.push(`    ${emitter.printNode(node)}`);
  }
  for (const member of checker.getPropertiesOfType(type)) {
    const optional = member.flags & SymbolFlags.Optional ? '?' : '';
    const memberType = checker.typeToString(checker.getTypeOfSymbol(member), undefined, NoTruncation);
    lines.push(`    ${memberName(member)}${optional}: ${memberType}`, ...documentation(checker, member, '      '));
  }
  return lines.join('\n');
}

/**
 * The public types, from a TypeScript project of the typed entry points:
 * - `snapshot`: the snapshot's text: per entry point, a line listing its exported names in
 *   alphabetical order, then a block for each name whose declaration no earlier entry point
 *   exported (the require entries re-export the import entries' types, so they add only their
 *   own); blocks are separated by a blank line;
 * - `declarationFiles`: the package's declaration files the entry points load, relative to the root.
 * Throws on any TypeScript error in them.
 */
export function readPublicTypes() {
  const dir = mkdtempSync(join(tmpdir(), 'mha-public-types-'));
  const api = new API({ cwd: ROOT });
  try {
    const [project] = api.updateSnapshot({ openProject: writeTsconfig(dir, typedEntries().map(([, file]) => file)) }).getProjects();
    const { checker, program } = project;
    const errors = [...program.getSyntacticDiagnostics(), ...program.getSemanticDiagnostics()];
    if (errors.length > 0) {
      const where = (e) => `${e.fileName?.slice(ROOT.length) ?? ''}@${e.pos}`;
      throw new Error(`public-types: TypeScript errors:\n${errors.map((e) => `${where(e)}: TS${e.code} ${e.text}`).join('\n')}`);
    }
    const blocks = [];
    const described = new Set();
    for (const [label, file] of typedEntries()) {
      const moduleSymbol = checker.getSymbolAtLocation(program.getSourceFile(join(ROOT, file)));
      const exports = [...checker.getExportsOfModule(moduleSymbol)].sort((a, b) => (a.name < b.name ? -1 : 1));
      blocks.push(`# ${label}: ${exports.map((e) => e.name).join(', ')}`);
      for (const exported of exports) {
        const symbol = exported.flags & SymbolFlags.Alias ? checker.getAliasedSymbol(exported) : exported;
        if (described.has(symbol.id)) continue;
        described.add(symbol.id);
        blocks.push(describe(project, exported.name, symbol));
      }
    }
    const declarationFiles = program.getSourceFileNames()
      .filter((file) => file.startsWith(ROOT)).map((file) => file.slice(ROOT.length))
      .filter((file) => !file.startsWith('node_modules/')).sort();  // (TypeScript's own lib files, where node_modules is no link)
    // A type that names a module (`typeof import("/checkout/bindings/js/index")`) names it from the root.
    const snapshot = `${blocks.join('\n\n')}\n`.replaceAll(`import("${ROOT}`, 'import("./');
    return { snapshot, declarationFiles };
  } finally {
    api.close();
    rmSync(dir, { recursive: true, force: true });
  }
}

if (process.argv[1] === fileURLToPath(import.meta.url)) {
  writeFileSync(SNAPSHOT, readPublicTypes().snapshot);
  console.log(`wrote ${fileURLToPath(SNAPSHOT)}`);
}
