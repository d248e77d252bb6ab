// Compiles counter.mo with the Motoko compiler from npm (package `motoko`) into an IC
// module. Run by scripts/build-motoko-fixture.sh.
const fs = require('fs');
const path = require('path');
const mo = require('motoko');

const dir = __dirname;
mo.write('counter.mo', fs.readFileSync(path.join(dir, 'counter.mo'), 'utf8'));
const diagnostics = mo.check('counter.mo');
const errors = diagnostics.filter((d) => d.severity === 1);
if (errors.length > 0) {
  console.error(JSON.stringify(errors, null, 2));
  process.exit(1);
}
const out = mo.wasm('counter.mo', 'ic');
fs.writeFileSync(path.join(dir, 'counter.wasm'), out.wasm);
console.log(`counter.wasm: ${out.wasm.length} bytes (moc ${mo.version})`);
