#!/bin/sh
# npm-deps.sh - install the npm packages the tests use, pinned, into
# build/node_modules: speedscope (its file format's JSON schema), ajv
# (a JSON schema validator) and playwright-core (drives Debian's chromium
# in the html test; it downloads no browser). Does nothing when all are
# there.
set -eu
cd "$(dirname "$0")/.."
dir=${B:-build}
speedscope=1.25.0
ajv=8.20.0
playwright=1.65.1

have() {
	[ -f "$dir/node_modules/$1/package.json" ] &&
		grep -q "\"version\": \"$2\"" "$dir/node_modules/$1/package.json"
}
have speedscope "$speedscope" && have ajv "$ajv" && have playwright-core "$playwright" && exit 0
echo "npm-deps.sh: installing speedscope@$speedscope ajv@$ajv playwright-core@$playwright" \
	"into $dir/node_modules" >&2
mkdir -p "$dir"
npm install --prefix "$dir" --no-save --no-audit --no-fund --loglevel=error \
	"speedscope@$speedscope" "ajv@$ajv" "playwright-core@$playwright" >&2
