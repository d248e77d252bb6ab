// Compiles main.mo into an IC module with the Motoko compiler of the npm package `motoko`
// (pinned by package-lock.json) and mo:core from the package's bundled copy: no network.
// Run by scripts/build-canister.sh (modules `motoko` and `motoko-classic` of
// canisters/prebuilt/modules.txt):
//   node build.js OUT.wasm DID [--legacy-persistence] [--write-did]
// writes the module to OUT.wasm and checks that DID is the interface moc derives from
// main.mo (moc embeds that interface in the module itself); `--write-did` rewrites DID.
// `--legacy-persistence` is moc's flag of that name: classical persistence (a 32-bit heap,
// stable fields serialized on upgrade) instead of enhanced orthogonal persistence.
// The compiler's version string goes to stdout, for the module's record.
'use strict';
const fs = require('fs');
const path = require('path');

const FLAGS = ['--legacy-persistence', '--write-did'];
const [out, did, ...flags] = process.argv.slice(2);
const unknown = flags.find((f) => !FLAGS.includes(f));
if (!out || !did || unknown !== undefined) {
  if (unknown !== undefined) console.error(`build.js: unknown option ${unknown}`);
  console.error('usage: node build.js OUT.wasm DID [--legacy-persistence] [--write-did]');
  process.exit(2);
}
const mo = require('motoko');
const core = require('motoko/packages/latest/core.json');
mo.loadPackage(core);
// As dfx does: the interface is public metadata, so tools read it from the module.
mo.setPublicMetadata(['candid:service']);
// moc.js's name for `moc --legacy-persistence`.
if (flags.includes('--legacy-persistence')) mo.compiler.gcFlags('classicOP');

const source = fs.readFileSync(path.join(__dirname, 'main.mo'), 'utf8');
mo.write('main.mo', source);
const problems = mo.check('main.mo').filter((d) => d.severity === 1 || d.severity === 2);
if (problems.length > 0) {
  for (const d of problems) {
    const at = `${d.source}:${d.range.start.line + 1}:${d.range.start.character + 1}`;
    console.error(`${at}: ${d.severity === 1 ? 'error' : 'warning'}: ${d.message}`);
  }
  process.exit(1);
}
const { wasm, candid } = mo.wasm('main.mo', 'ic');
fs.writeFileSync(out, wasm);
if (flags.includes('--write-did')) {
  fs.writeFileSync(did, candid);
} else if (fs.readFileSync(did, 'utf8') !== candid) {
  console.error(`${did} is not the interface moc derives from main.mo; run: node build.js ${out} ${did} --write-did`);
  process.exit(1);
}
console.log(`moc ${mo.version}, mo:core ${core.version}`);
