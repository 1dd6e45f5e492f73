// The solc forge runs in tests/clients (forge_test.go): solc-js (npm's
// solc, the compiler built to WebAssembly) behind the two calls forge makes
// of a native solc — `--version`, and `--standard-json` with the input on
// stdin — so forge compiles offline, from npm alone.
'use strict';
const fs = require('fs');
const path = require('path');
const solc = require(path.join(__dirname, '..', 'node_modules', 'solc'));

const args = process.argv.slice(2);
if (args.includes('--version')) {
  // A native solc's banner; forge reads the version from its last line.
  const v = solc.version().replace('.Emscripten.clang', '');
  process.stdout.write(`solc, the solidity compiler commandline interface\nVersion: ${v}\n`);
  process.exit(0);
}
if (!args.includes('--standard-json')) {
  process.stderr.write(`solc.cjs: only --version and --standard-json are supported (got ${args.join(' ')})\n`);
  process.exit(2);
}
const at = args.indexOf('--base-path');
const base = at >= 0 ? args[at + 1] : process.cwd();
// Sources forge passes by path rather than content are read here.
const findImports = (p) => {
  for (const f of [path.resolve(base, p), path.resolve(p)]) {
    try {
      return { contents: fs.readFileSync(f, 'utf8') };
    } catch {}
  }
  return { error: `not found: ${p}` };
};
process.stdout.write(solc.compile(fs.readFileSync(0, 'utf8'), { import: findImports }));
