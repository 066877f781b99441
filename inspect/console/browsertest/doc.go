// Package browsertest drives the approvals console (package
// inspect/console, `bk serve`) in a real browser: headless Chromium,
// through the DevTools protocol (chromedp), against a store that
// examples/support_desk --approver person filled: a person approves and
// denies the desk's refunds in the browser, and the desk's next run pays
// the approved one once. It is a module of its own, so that the
// kernel's module does not depend on chromedp; it holds tests only.
//
//	cd inspect/console/browsertest && go test ./...
//
// The test looks for Chromium on $BK_CHROMIUM, then on the PATH
// (chromium, chromium-browser, google-chrome). Without one it skips,
// except under CI=true, where a missing browser fails it (.ci/run
// installs Debian's chromium when the machine lacks it). It writes
// screenshots of the inbox and of a trace's timeline to $BK_SCREENSHOTS,
// or to the test's temporary directory, and logs where.
//
// docs/console-inbox.png, the README's picture of the inbox, is the
// inbox screenshot of a run:
//
//	BK_SCREENSHOTS=/tmp/shots go test -count=1 ./... && cp /tmp/shots/inbox.png ../../../docs/console-inbox.png
package browsertest
