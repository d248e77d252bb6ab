// Compiles one bench canister with moc.js, the Motoko compiler of the npm package `motoko`,
// for `icbench mops` when no native moc is at hand. icbench writes this file to a temporary
// directory and runs `node moc.js REQUEST.json`; the request names:
//   motoko    the package's directory (its moc.js is required from there)
//   files     [virtual path, real path] of every Motoko source the compile may read
//   packages  [name, virtual directory] for `mo:name/...` imports
//   gc        moc.js's gcFlags, in order ("force", a collector, "classicOP")
//   flags     moc command-line flags moc.js takes (its setExtraFlags), where it has them
//   canisters [virtual path of a canister, where its module goes], compiled in order
// moc's messages go to stderr as moc prints them (FILE:LINE.COL-LINE.COL: type error [CODE],
// ...); at the first canister that does not compile the exit status is 1. A request this
// moc.js cannot honour exits with status 2, a package that does not load with 3, each with
// one line. stdout: the compiler's version string.
'use strict';
const fs = require('fs');

// One line of what went wrong: moc's own message where the error carries one (moc.js wraps
// its OCaml exceptions, whose text holds moc's), never the minified source node would quote.
const reason = (e) => {
  const text = e && e.message ? e.message : String(e);
  const moc = text.match(/"((?:mocjs|moc): [^"\\]*)/);
  if (moc) return moc[1].replace(/\.$/, '');
  return text.split('\n')[0].slice(0, 300);
};

const request = JSON.parse(fs.readFileSync(process.argv[2], 'utf8'));
let mo;
try {
  mo = require(request.motoko);
} catch (e) {
  console.error(`the npm package motoko in ${request.motoko} does not load (reinstall it: npm ci): ${reason(e)}`);
  process.exit(3);
}
for (const [virtual, real] of request.files) {
  mo.write(virtual, fs.readFileSync(real, 'utf8'));
}
for (const [name, dir] of request.packages) {
  mo.usePackage(name, dir);
}
for (const flag of request.gc) {
  try {
    mo.compiler.gcFlags(flag);
  } catch (e) {
    console.error(`moc.js of this motoko package has no gcFlags('${flag}')`);
    process.exit(2);
  }
}
if (request.flags.length > 0) {
  if (typeof mo.setExtraFlags !== 'function') {
    console.error(`moc.js of this motoko package takes no extra flags (${request.flags.join(' ')})`);
    process.exit(2);
  }
  try {
    mo.setExtraFlags(request.flags);
  } catch (e) {
    console.error(`moc.js rejects the flags ${request.flags.join(' ')}: ${reason(e)}`);
    process.exit(2);
  }
}
const show = (d) => {
  const s = d.range.start;
  const e = d.range.end;
  const kind = d.severity === 1 ? 'error' : 'warning';
  const code = d.code ? ` [${d.code}]` : '';
  return `${d.source}:${s.line + 1}.${s.character + 1}-${e.line + 1}.${e.character + 1}: ${d.category} ${kind}${code}, ${d.message}`;
};
for (const [main, out] of request.canisters) {
  let result;
  try {
    result = mo.compiler.compileWasm('ic', main);
  } catch (e) {
    console.error(`moc.js failed on ${main}: ${reason(e)}`);
    process.exit(1);
  }
  const diagnostics = result.diagnostics || [];
  for (const d of diagnostics) console.error(show(d));
  if (!result.code || diagnostics.some((d) => d.severity === 1)) process.exit(1);
  fs.writeFileSync(out, result.code.wasm);
}
console.log(mo.version);
