# pprof.sh: the pprof output decodes as perftools.profiles.Profile (protoc) and holds the recording's samples, functions and threads.
"$RBSCOPE" report -i "$raw" -f pprof -o "$fmtdir/profile.pb.gz" 2>"$work/pprof.err"
check "pprof: written, gzip-compressed" gzip -t "$fmtdir/profile.pb.gz"
if command -v protoc >/dev/null; then
	pprof_total=$("$RBSCOPE" report -i "$raw" -f collapsed | awk '{ n += $NF } END { printf "%.0f\n", n }')
	gzip -dc "$fmtdir/profile.pb.gz" | protoc --decode perftools.profiles.Profile -I "$top/tests/data" \
		"$top/tests/data/profile.proto" >"$fmtdir/profile.txt" 2>>"$work/pprof.err"
	check "pprof: decodes with protoc ($(head -c 200 "$work/pprof.err"))" test -s "$fmtdir/profile.txt"
	# Resolve string indices: one "what value" line per fact (functions, thread labels, sums).
	awk 'NR == FNR {
		if ($1 == "string_table:") { s = $0; sub(/^string_table: "/, "", s); sub(/"$/, "", s); str[n++] = s }
		next
	}
	/^[a-z_]+ {$/ { block = $1; v = 0; next }
	/^}$/ { block = ""; next }
	block == "function" && $1 == "name:" { print "function " str[$2] }
	block == "sample" && $1 == "value:" { if (v++) wall += $2; else count += $2 }
	block == "sample" && $1 == "key:" { key = str[$2] }
	block == "sample" && $1 == "str:" && key == "thread name" { print "thread " str[$2] }
	block == "sample_type" && $1 == "type:" { print "sample_type " str[$2] }
	$1 == "period:" { period = $2 }
	END { printf "samples %.0f\nperiod %.0f\nwall %.0f\n", count, period, wall }' \
		"$fmtdir/profile.txt" "$fmtdir/profile.txt" | sort -u >"$fmtdir/profile.facts"
	pprof_fact() { grep -qx "$1" "$fmtdir/profile.facts"; }
	check "pprof: sample counts sum to the recording's total ($pprof_total)" pprof_fact "samples $pprof_total"
	check "pprof: sample types samples and wall" sh -c "grep -qx 'sample_type samples' '$fmtdir/profile.facts' &&
		grep -qx 'sample_type wall' '$fmtdir/profile.facts'"
	check "pprof: functions Report#render and Stats#crunch" \
		sh -c "grep -qx 'function Report#render' '$fmtdir/profile.facts' && grep -qx 'function Stats#crunch' '$fmtdir/profile.facts'"
	check "pprof: thread name labels render and crunch" \
		sh -c "grep -qx 'thread render' '$fmtdir/profile.facts' && grep -qx 'thread crunch' '$fmtdir/profile.facts'"
	pprof_period=$(awk '$1 == "period" { print $2 + 0 }' "$fmtdir/profile.facts")
	check "pprof: period set ($pprof_period ns) and wall values are count x period" \
		sh -c "[ '$pprof_period' -gt 0 ] && grep -qx 'wall $((pprof_total * pprof_period))' '$fmtdir/profile.facts'"
else
	skipped "pprof: no protoc to decode the profile (scripts/deps installs protobuf-compiler)"
fi
# Go's own viewer, in its default views (no flags): Ruby's names as they are, not cut at () and <> as demangled C++.
if command -v go >/dev/null; then
	PPROF_TMPDIR=$work HOME=$work go tool pprof -top "$fmtdir/profile.pb.gz" >"$fmtdir/go-top.txt" 2>"$work/go-top.err"
	PPROF_TMPDIR=$work HOME=$work go tool pprof -traces "$fmtdir/profile.pb.gz" >"$fmtdir/go-traces.txt" 2>>"$work/go-top.err"
	for name in 'block (2 levels) in <main>' '<main>' 'block in Stats#crunch'; do
		check "pprof: go tool pprof -top and -traces show '$name' ($(grep -c ' in \| in$\|<unknown>' "$fmtdir/go-top.txt") block or unknown rows)" \
			sh -c "grep -qF '$name' '$fmtdir/go-top.txt' && grep -qF '$name' '$fmtdir/go-traces.txt' &&
				! grep -q '<unknown>\|block  in' '$fmtdir/go-top.txt'"
	done
else
	skipped "pprof: no go to view the profile with go tool pprof (scripts/deps installs golang-go)"
fi
