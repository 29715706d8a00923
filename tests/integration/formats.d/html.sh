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
# A server's wall profile, mostly threads waiting (7 of 9 asleep): the work first, in a graph of its own that leaves
# the waits out and says how to record CPU time alone; every sample in the graph below it. Both work.
if start_ruby 3.1 "$top/tests/integration/ruby/mostly-idle.rb"; then
	# (2 s: the two working threads take the GVL in turn, 100 ms each, and a busy machine can starve one for a while)
	"$RBSCOPE" record -p "$pid" -r 200 -d 2 -f html -o "$fmtdir/idle.html" 2>/dev/null
	stop_ruby "$pid"
	wgraph=$(sed -n '/id="flamegraph-work"/,/<\/svg>/p' "$fmtdir/idle.html")
	check "html: a mostly idle profile: the work first, without the waits, a note of the waits' share and of --mode cpu ($(grep -o '[0-9.]*% of the samples are threads waiting' "$fmtdir/idle.html"); in the work graph: work_a $(echo "$wgraph" | grep -c 'Object#work_a'), work_b $(echo "$wgraph" | grep -c 'Object#work_b'), Kernel#sleep $(echo "$wgraph" | grep -c '<title>Kernel#sleep'))" \
		sh -c "grep -q 'id=\"flamegraph-work\"' '$fmtdir/idle.html' && grep -q -- '--mode cpu' '$fmtdir/idle.html' &&
			test \$(grep -o 'id=\"flamegraph-work\"' '$fmtdir/idle.html' | wc -l) = 1 &&
			sed -n '/id=\"flamegraph-work\"/,/<\\/svg>/p' '$fmtdir/idle.html' | grep -q 'Object#work_a' &&
			! sed -n '/id=\"flamegraph-work\"/,/<\\/svg>/p' '$fmtdir/idle.html' | grep -q '<title>Kernel#sleep'"
	if [ -n "$NPM_DIR" ] && [ -n "$CHROMIUM" ]; then
		for where in '#flamegraph-work' '#flamegraph'; do
			NPM_DIR=$NPM_DIR CHROMIUM=$CHROMIUM node "$top/tests/integration/browser/flamegraph.js" \
				"$fmtdir/idle.html" 'Object#work_a' 'work_b' "$where" >"$work/html-idle.out" 2>&1
			check "html: a mostly idle profile: in Chromium, the graph in $where zooms and searches ($(head -c 200 "$work/html-idle.out"))" \
				grep -q '^ok' "$work/html-idle.out"
		done
	fi
fi
