# mk/lint.mk: linters of the project's documents. Included by the root
# Makefile, whose make test runs them.
#
#   make lint-openapi   lint docs/openapi.json with the Redocly CLI pinned in
#                       package-lock.json under redocly.yaml (Redocly's
#                       recommended rules, every one an error): any error or
#                       warning fails the target and prints Redocly's report

REDOCLY := node_modules/.bin/redocly
# Redocly sends usage data unless REDOCLY_TELEMETRY is off (redocly.yaml
# says so too), and on a terminal it asks the npm registry for a newer
# release unless notifications are suppressed.
REDOCLY_LINT := REDOCLY_TELEMETRY=off REDOCLY_SUPPRESS_NOTIFICATIONS=true \
	$(REDOCLY) lint --config=redocly.yaml --lint-config=error docs/openapi.json

.PHONY: lint-openapi

# Redocly exits 0 on warnings, so the target reads the totals of its JSON
# report: a rule set to warn in redocly.yaml fails it too. --lint-config
# fails on a mistake in redocly.yaml itself. The readable report is printed
# only on failure: on Node 20 Redocly also prints a banner about its future
# releases on every run, which scripts/check-node.sh has said plainly.
lint-openapi: node_modules/.package-lock.json
	@set -o pipefail; $(REDOCLY_LINT) --format=json 2>/dev/null \
	  | node -e 'const t = JSON.parse(require("fs").readFileSync(0, "utf8")).totals; process.exit(t.errors + t.warnings > 0 ? 1 : 0)' || { \
	  $(REDOCLY_LINT) >&2; echo "lint-openapi: docs/openapi.json has errors or warnings under redocly.yaml (above)" >&2; exit 1; }
	@echo "lint-openapi: docs/openapi.json has no errors or warnings under redocly.yaml"
