# html.sh: the HTML report opens in Chromium and shows the flame graph (which works) and the tables.
"$RBSCOPE" report -i "$raw" -f html -o "$fmtdir/report.html" 2>"$work/e"
check "html: written" test -s "$fmtdir/report.html"
check "html: lists both threads" sh -c "grep -q '<td>render</td>' '$fmtdir/report.html' && grep -q '<td>crunch</td>' '$fmtdir/report.html'"
if [ -n "$NPM_DIR" ] && [ -n "$CHROMIUM" ]; then
	NPM_DIR=$NPM_DIR CHROMIUM=$CHROMIUM node "$top/tests/integration/browser/flamegraph.js" \
		"$fmtdir/report.html" 'Report#render' 'crunch' >"$work/html.out" 2>&1
	check "html: in Chromium, flame graph zooms and searches, tables shown ($(head -c 300 "$work/html.out"))" \
		grep -q '^ok.*tables shown' "$work/html.out"
else
	skipped "html: no Chromium or npm packages for the browser check"
fi
