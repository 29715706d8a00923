# flamegraph.sh: the SVG flame graph is well-formed XML and works in Chromium (frames, zoom, search).
"$RBSCOPE" report -i "$raw" -f flamegraph -o "$fmtdir/fg.svg" 2>"$work/e"
check "flamegraph: written" test -s "$fmtdir/fg.svg"
check "flamegraph: well-formed XML (xmllint)" xmllint --noout "$fmtdir/fg.svg"
check "flamegraph: both threads' hot methods drawn" \
	sh -c "grep -q '<title>Report#render ' '$fmtdir/fg.svg' && grep -q '<title>Stats#crunch ' '$fmtdir/fg.svg'"
check "flamegraph: C methods coloured apart from Ruby methods" \
	sh -c "test \$(grep -o 'fill=\"rgb([0-9,]*)\"' '$fmtdir/fg.svg' | sort -u | wc -l) -gt 4"
if [ -n "$NPM_DIR" ] && [ -n "$CHROMIUM" ]; then
	NPM_DIR=$NPM_DIR CHROMIUM=$CHROMIUM node "$top/tests/integration/browser/flamegraph.js" \
		"$fmtdir/fg.svg" 'Stats#crunch' 'render' >"$work/fg.out" 2>&1
	check "flamegraph: in Chromium, frames in the DOM, click zooms to full width, search highlights ($(head -c 300 "$work/fg.out"))" \
		grep -q '^ok' "$work/fg.out"
else
	skipped "flamegraph: no Chromium or npm packages for the browser check ($(head -c 200 "$work/npm.err"))"
fi
"$RBSCOPE" report -i "$raw" -f flamegraph --flame-min-width 0.3 -o "$fmtdir/fg-min.svg" 2>"$work/e"
check "flamegraph: --flame-min-width drops narrow frames" \
	test "$(grep -c '<g class="f"' "$fmtdir/fg-min.svg")" -lt "$(grep -c '<g class="f"' "$fmtdir/fg.svg")"
# Bad input and output: a recording cut short (what it holds reads, and a note says so; a recorder killed
# mid-write leaves one), one cut before anything was recorded, a missing one, a full disk.
head -c $(( $(stat -c %s "$raw") / 2 )) "$raw" >"$fmtdir/half.raw"
"$RBSCOPE" report -i "$fmtdir/half.raw" -f collapsed -o "$fmtdir/half.col" 2>"$work/e"; rc=$?
check "report: a recording cut in half: exit 0, what it holds, one line saying it ends early" \
	sh -c "test $rc = 0 && test -s '$fmtdir/half.col' && grep -q 'ends early' '$work/e' && test \$(wc -l <'$work/e') = 1"
head -c 40 "$raw" >"$fmtdir/head.raw"
"$RBSCOPE" report -i "$fmtdir/head.raw" -o "$fmtdir/x.svg" 2>"$work/e"; rc=$?
check "report: a recording cut before any sample: exit 8, one line" sh -c "test $rc = 8 && test \$(wc -l <'$work/e') = 1"
"$RBSCOPE" report -i "$fmtdir/no-such.raw" -o "$fmtdir/x.svg" 2>"$work/e"; rc=$?
check "report: missing recording: non-zero exit, names the file" sh -c "test $rc != 0 && grep -q 'no-such.raw' '$work/e'"
"$RBSCOPE" report -i "$raw" -f flamegraph -o /dev/full 2>"$work/e"; rc=$?
check "report: full disk: exit 9 and says so" sh -c "test $rc = 9 && grep -q 'No space left' '$work/e'"
