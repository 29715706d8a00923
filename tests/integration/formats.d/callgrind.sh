# callgrind.sh: callgrind_annotate reads the callgrind output: both threads' methods, the recording's total, inclusive costs.
"$RBSCOPE" report -i "$raw" -f callgrind -o "$fmtdir/callgrind.out" 2>"$work/cg.err"
check "callgrind: written" grep -q '^# callgrind format' "$fmtdir/callgrind.out"
if command -v callgrind_annotate >/dev/null; then
	cg_total=$("$RBSCOPE" report -i "$raw" -f collapsed | awk '{ n += $NF } END { printf "%.0f\n", n }')
	# Run from $fmtdir: callgrind_annotate strips its working directory from fl= names but not from cfl= ones.
	(cd "$fmtdir" && callgrind_annotate --threshold=100 callgrind.out) >"$fmtdir/cg-self.txt" 2>"$work/cg-annotate.err"
	(cd "$fmtdir" && callgrind_annotate --threshold=100 --inclusive=yes callgrind.out) >"$fmtdir/cg-incl.txt" 2>>"$work/cg-annotate.err"
	check "callgrind: callgrind_annotate reads it without warnings ($(head -c 200 "$work/cg-annotate.err"))" \
		sh -c "grep -q 'PROGRAM TOTALS' '$fmtdir/cg-incl.txt' && ! grep -q . '$work/cg-annotate.err'"
	cg_cost() { # cg_cost FILE FUNCTION: its Samples in a callgrind_annotate listing, 0 if not listed
		awk -v fn=":$2" '$2 ~ /^\(/ && substr($0, length($0) - length(fn) + 1) == fn { gsub(",", "", $1); print $1; found = 1; exit }
			END { if (!found) print 0 }' "$1"
	}
	check "callgrind: total Samples equals the recording's ($cg_total)" \
		test "$(awk '/PROGRAM TOTALS/ { gsub(",", "", $1); print $1 }' "$fmtdir/cg-self.txt")" = "$cg_total"
	check "callgrind: lists Report#render and Stats#crunch" \
		sh -c "grep -q ':Report#render\$' '$fmtdir/cg-incl.txt' && grep -q ':Stats#crunch\$' '$fmtdir/cg-incl.txt'"
	cg_self=$(cg_cost "$fmtdir/cg-self.txt" 'Stats#crunch')
	cg_incl=$(cg_cost "$fmtdir/cg-incl.txt" 'Stats#crunch')
	check "callgrind: inclusive Stats#crunch ($cg_incl) >= its self cost ($cg_self), > 0" \
		test "$cg_incl" -ge "$cg_self" -a "$cg_incl" -gt 0
	# The summary counts each function once per sample, so inclusive costs must match its totals.
	for fn in 'Report#render' 'Stats#crunch'; do
		want=$("$RBSCOPE" report -i "$raw" -f summary | awk -v fn="$fn" '$5 == fn { print $4; exit }')
		got=$(cg_cost "$fmtdir/cg-incl.txt" "$fn")
		check "callgrind: inclusive $fn ($got) equals the summary's total ($want)" test "$got" = "$want"
	done
	check "callgrind: no inclusive cost exceeds the total (no double counting)" \
		awk -v t="$cg_total" '$2 ~ /^\(/ { gsub(",", "", $1); if ($1 + 0 > t + 0) bad = 1 } END { exit bad }' "$fmtdir/cg-incl.txt"
else
	skipped "callgrind: no callgrind_annotate (valgrind) to read the profile"
fi
