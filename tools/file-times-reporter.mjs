// A node --test reporter that writes, per test file, how long it ran (from its first report to its
// last: a module's own start-up before its first test is not seen) and its failures, slowest
// first. tools/test-quick.sh writes it to build/test-quick-js-times.txt, to see which JS files to
// keep out of the quick tier (its SLOW_JS):
//   node --test --test-reporter=spec --test-reporter-destination=stdout \
//     --test-reporter=./tools/file-times-reporter.mjs --test-reporter-destination=FILE ...
export default async function* fileTimes(source) {
  const files = new Map();
  for await (const event of source) {
    const file = event.data?.file;
    if (!file) continue;
    const now = Date.now();
    const entry = files.get(file) ?? { first: now, last: now, failed: 0 };
    entry.last = now;
    if (event.type === 'test:fail' && event.data.nesting === 0) entry.failed += 1;
    files.set(file, entry);
  }
  const rows = [...files].map(([file, e]) => [file, e.last - e.first, e.failed]).sort((a, b) => b[1] - a[1]);
  for (const [file, ms, failed] of rows) {
    yield `${(ms / 1000).toFixed(1).padStart(7)} s  ${file.replace(`${process.cwd()}/`, '')}${failed ? `  (${failed} failed)` : ''}\n`;
  }
}
