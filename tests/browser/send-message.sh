#!/bin/sh
# A BROWSER for host/examples/app_view.rs in scripts/test: opens the view
# at $1 in headless chromium (tests/browser/drive.mjs, in the background,
# as a browser opener returns at once) and clicks the basic view's "Send
# Message", whose `ui/message` the example takes as the next user turn.
# The driver's output goes to target/app-view-browser.log.
here=$(cd "$(dirname "$0")" && pwd)
steps=$(mktemp)
printf '{"timeoutMs": 20000, "steps": [{"op": "goto", "url": "%s"}, {"op": "waitText", "text": "Server Time:", "frame": "/view/"}, {"op": "click", "text": "Send Message", "frame": "/view/"}, {"op": "waitText", "text": "This view has ended", "frame": "/app/"}]}' "$1" >"$steps"
node "$here/drive.mjs" "$steps" >>"$here/../../target/app-view-browser.log" 2>&1 &
