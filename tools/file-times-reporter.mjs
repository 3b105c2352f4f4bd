// A node --test reporter that writes, per test file, the time its top-level tests took (their
// durations summed: a module's own start-up before its first test is not counted) and its
// failures, slowest first. tools/test-quick.sh writes it to build/test-quick-js-times.txt, to see
// which JS files to keep out of the quick tier (its SLOW_JS):
//   node --test --test-reporter=spec --test-reporter-destination=stdout \
//     --test-reporter=./tools/file-times-reporter.mjs --test-reporter-destination=FILE ...
export default async function* fileTimes(source) {
  const files = new Map();
  for await (const event of source) {
    if ((event.type === 'test:pass' || event.type === 'test:fail') && event.data.nesting === 0) {
      const entry = files.get(event.data.file) ?? { ms: 0, failed: 0 };
      entry.ms += event.data.details.duration_ms;
      if (event.type === 'test:fail') entry.failed += 1;
      files.set(event.data.file, entry);
    }
  }
  const rows = [...files].sort((a, b) => b[1].ms - a[1].ms);
  for (const [file, { ms, failed }] of rows) {
    yield `${(ms / 1000).toFixed(1).padStart(7)} s  ${file.replace(`${process.cwd()}/`, '')}${failed ? `  (${failed} failed)` : ''}\n`;
  }
}
