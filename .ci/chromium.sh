#!/usr/bin/env bash
# Makes sure a Chromium answers for the browser test of the approval pages
# (approvalpage/browser_test.go), which fails rather than skips when
# CI=true and no Chromium is installed. Installs Debian's chromium package
# when none is there. .ci/run runs it before the tests:
#
#   bash .ci/chromium.sh
set -euo pipefail

for name in chromium chromium-browser google-chrome google-chrome-stable; do
	if command -v "$name" >/dev/null 2>&1; then
		echo "chromium.sh: using $(command -v "$name")"
		exit 0
	fi
done

if [ "$(id -u)" -ne 0 ]; then
	echo "chromium.sh: no Chromium installed and not root: cannot apt-get install chromium" >&2
	exit 1
fi
echo "chromium.sh: installing Chromium from Debian's packages"
# Quiet: its output would bury the test results in the CI log.
if ! { apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq chromium; } >/tmp/toolgate-apt-chromium.log 2>&1; then
	echo "chromium.sh: apt-get install chromium failed; see /tmp/toolgate-apt-chromium.log" >&2
	tail -n 20 /tmp/toolgate-apt-chromium.log >&2
	exit 1
fi
command -v chromium >/dev/null 2>&1 || {
	echo "chromium.sh: chromium installed but not on PATH" >&2
	exit 1
}
echo "chromium.sh: using $(command -v chromium)"
