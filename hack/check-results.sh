#!/usr/bin/env bash
# Checks a run's verdicts against what a CI job expects, from the report
# directory's results.json (scenarios.Results: {"cases": [{"scenario",
# "subject", "expected", "observed", "verdict", "message", ...}]}), so that a
# run that judged nothing, or judged other cases, does not pass as green.
#
#   hack/check-results.sh RESULTS_JSON [KEY=VALUE...]
#
#   cases=N               exactly N cases
#   pass=N fail=N error=N skipped=N
#                         exactly N cases with this verdict (pass: observed as
#                         expected; fail: observed otherwise; error: no verdict
#                         could be given; skipped: a capability was missing)
#   scenarios=A,B,...     the cases' scenarios are exactly these (in any order)
#   subjects=A,B,...      the cases' subjects are exactly these
#
# Exit 0 when every expectation holds; 1 when one does not (each is named,
# then every case); 2 for a usage error or no readable results.json. Needs jq.
set -euo pipefail

usage() {
  echo "usage: hack/check-results.sh RESULTS_JSON [cases=N] [pass|fail|error|skipped=N] [scenarios=A,B] [subjects=A,B]" >&2
  exit 2
}
[ $# -ge 1 ] || usage
file="$1"
shift
command -v jq >/dev/null || { echo "check-results: jq is missing" >&2; exit 2; }
[ -f "$file" ] || { echo "check-results: $file: no such file (the run wrote no report)" >&2; exit 2; }
jq -e '.cases | type == "array"' "$file" >/dev/null 2>&1 || { echo "check-results: $file: not a results.json (no cases array)" >&2; exit 2; }

problems=()
for expect in "$@"; do
  key="${expect%%=*}" want="${expect#*=}"
  [ "$key" != "$expect" ] || usage
  case "$key" in
    cases | pass | fail | error | skipped)
      [[ "$want" =~ ^[0-9]+$ ]] || usage
      if [ "$key" = cases ]; then
        got="$(jq '.cases | length' "$file")"
      else
        got="$(jq --arg v "$key" '[.cases[] | select(.verdict == $v)] | length' "$file")"
      fi
      if [ "$got" != "$want" ]; then problems+=("$key: $got, want $want"); fi
      ;;
    scenarios | subjects)
      field="${key%s}"
      got="$(jq -r --arg f "$field" '[.cases[][$f]] | unique | join(",")' "$file")"
      want_sorted="$(tr "," "\n" <<<"$want" | LC_ALL=C sort -u | paste -sd, -)"
      if [ "$got" != "$want_sorted" ]; then problems+=("$key: $got, want $want_sorted"); fi
      ;;
    *) usage ;;
  esac
done

total="$(jq '.cases | length' "$file")"
if [ ${#problems[@]} -eq 0 ]; then
  echo "check-results: $file: $total cases, as expected ($*)"
  exit 0
fi
echo "check-results: $file does not hold what this job expects:" >&2
for p in "${problems[@]}"; do echo "  - $p" >&2; done
echo "its $total cases (scenario, subject: expected -> observed, verdict; message):" >&2
jq -r '.cases[] | "  \(.scenario), \(.subject): \(.expected) -> \(.observed), \(.verdict); \(.message // "")"' "$file" >&2
exit 1
