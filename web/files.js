// The page's file helpers: read the file a user chose, save one the page made.

/** The file chosen in `input` as { name, bytes }; `what` names it in the message when none is chosen. */
export async function readFile(input, what) {
  const file = input.files[0];
  if (!file) throw new TypeError(`Choose a ${what} file first.`);
  return { name: file.name, bytes: new Uint8Array(await file.arrayBuffer()) };
}

/** Saves `blob` as the file `name` (the browser's download). */
export function download(name, blob) {
  const link = document.createElement('a');
  link.href = URL.createObjectURL(blob);
  link.download = name;
  document.body.append(link);
  link.click();
  link.remove();
  setTimeout(() => URL.revokeObjectURL(link.href), 1000);
}
